package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
	"go.yaml.in/yaml/v3"
)

func Example() {
	log := `10.0.0.1 - - [02/Sep/2003:00:00:09 -0700] "POST /login HTTP/1.1" 401 12 "-" "curl/8"
10.0.0.1 - - [02/Sep/2003:00:00:09 -0700] "POST /login HTTP/1.1" 401 12 "-" "curl/8"
10.0.0.2 - - [02/Sep/2003:00:00:10 -0700] "GET / HTTP/1.1" 200 512 "-" "Mozilla/5.0"
`
	rules := []ingest.Rule{{Name: "login guessing", Stage: model.StageCode, Methods: []string{"POST"}, Statuses: []ingest.StatusRange{{Lo: 401, Hi: 401}}}}
	tr, err := ingest.Build(context.Background(), strings.NewReader(log), ingest.Options{Rules: rules})
	if err != nil {
		fmt.Println(err)
		return
	}
	times := tr.Realise(ingest.SpreadEven, 1, 0, nil)
	for i, k := range tr.Keys {
		label := k.Class.String()
		if k.Class == model.Abusive {
			label += " (" + k.Stage.String() + ")"
		}
		fmt.Printf("%s: %d requests, %s, times %v ns\n", k.Name, k.Requests, label, times[i])
	}
	// Output:
	// 10.0.0.1: 2 requests, abusive (code), times [250000000 750000000] ns
	// 10.0.0.2: 1 requests, legit, times [1500000000] ns
}

// The example specs' sweep grids are valid sweep entries (the traffic
// section is replaced by a one-client scenario until the sweep reads it).
func TestExampleSpecGrids(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "configs", "examples", "*.yaml"))
	if len(files) != 3 {
		t.Fatalf("%d example specs", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "traffic" {
				root.Content[i].Value = "scenario"
				var scn yaml.Node
				yaml.Unmarshal([]byte("{name: x, duration_s: 1, clients: [{name: a, class: legit, segments: [[0, 1, 1]]}]}"), &scn)
				root.Content[i+1] = scn.Content[0]
			}
		}
		out, _ := yaml.Marshal(root)
		s, err := sweep.ParseSpec(out, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if s.Points() < 10 {
			t.Errorf("%s: %d points", f, s.Points())
		}
	}
}
