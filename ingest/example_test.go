package ingest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
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

// The example specs (a log each, three with an overlay) load, and their
// sweep grids are not trivial.
func TestExampleSpecGrids(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "configs", "examples", "*.yaml"))
	if len(files) != 6 {
		t.Fatalf("%d example specs", len(files))
	}
	for _, f := range files {
		s, err := sweep.LoadSpec(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if s.Traffic == nil || s.Points() < 10 || strings.HasSuffix(f, "-overlay.yaml") != (s.Traffic.Overlay != nil) {
			t.Errorf("%s: %d points, traffic %v", f, s.Points(), s.Traffic != nil)
		}
	}
}
