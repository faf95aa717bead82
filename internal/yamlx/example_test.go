package yamlx_test

import (
	"fmt"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// A decoder feeds every error of its input to a Collector and goes on; the
// caller gets them all, in line order, each with its line and field.
func ExampleCollector() {
	root, _ := yamlx.Parse([]byte("name: demo\nseeds: 1\nreplicates: many\n"))
	var c yamlx.Collector
	m, err := yamlx.Mapping(root, "", "name", "seed", "replicates")
	c.Add(err) // the unknown key, with the one meant
	if n := m.Get("replicates"); n != nil {
		_, err := yamlx.Int(n, "replicates")
		c.Add(err)
	}
	fmt.Println(yamlx.InFile(c.Err(), "spec.yaml"))
	// Output:
	// spec.yaml:2: seeds: unknown field; did you mean "seed"? (allowed: name, seed, replicates)
	// spec.yaml:3: replicates: expected a number, got "many"
}

func ExampleSuggest() {
	algorithms := []string{"fixed_window", "sliding_window", "token_bucket"}
	fmt.Println(yamlx.Suggest("token-bucket", algorithms))
	fmt.Println(yamlx.Suggest("sliding_windw", algorithms))
	fmt.Printf("%q\n", yamlx.Suggest("leaky_bucket", algorithms))
	// Output:
	// token_bucket
	// sliding_window
	// ""
}
