package report

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// enumeratedSpec sweeps haproxy_rate's enumerated parameter counts, held
// fixed on the heat maps over period_s × limit (first entry) and an axis
// of the heat map over limit × counts (second entry, one period_s).
const enumeratedSpec = `name: counts
scenario:
  name: a reader and a flood
  duration_s: 120
  clients:
    - name: reader
      class: legit
      segments: [[0, 30, 2], [30, 33, 20], [33, 120, 2]]
    - name: flood
      class: abusive
      stage: code
      segments: [[40, 80, 25]]
sweep:
  - {algorithm: haproxy_rate, period_s: [1, 2, 5], limit: [5, 10, 20, 40], counts: [all, admitted]}
  - {algorithm: haproxy_rate, period_s: [10], limit: [5, 10, 20, 40], counts: [all, admitted]}
`

// The report names an enumerated parameter's values as the registry does
// (counts all, counts admitted), never by their numbers: in heat-map
// titles, captions, file names and axis ticks, and in the picks and tables.
func TestReportNamesEnumeratedValues(t *testing.T) {
	dir := runSpec(t, enumeratedSpec)
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	counts, ok := model.LookupParam("counts")
	if !ok || len(counts.Values) != 2 {
		t.Fatalf("the registry's counts: %+v", counts)
	}
	fixed, axis := map[string]bool{}, false
	for i, h := range r.Heats {
		f := r.HeatFigure(i, h)
		for _, fv := range h.Fixed {
			if fv.Name != "counts" {
				continue
			}
			name := counts.Values[int(fv.Value)]
			fixed[name] = true
			if !strings.Contains(f.Title, "counts "+name) || !strings.Contains(f.Caption, "counts "+name) || !strings.HasSuffix(f.Name, "counts_"+name) {
				t.Errorf("heat map %d (counts = %s): name %q, title %q, caption %q", i, name, f.Name, f.Title, f.Caption)
			}
		}
		if h.XParam == "counts" || h.YParam == "counts" {
			axis = true
		}
	}
	if len(fixed) != 2 || !axis {
		t.Fatalf("heat maps hold counts fixed at %v, on an axis: %v; want both values and an axis", fixed, axis)
	}
	out := t.TempDir()
	if _, err := r.Write(out); err != nil {
		t.Fatal(err)
	}
	// A number where a name belongs: "counts 0", "counts=1", "counts1".
	numeric := regexp.MustCompile(`counts[ =_]?[0-9]`)
	ticks := map[string]bool{}
	files, _ := os.ReadDir(filepath.Join(out))
	for _, e := range files {
		if numeric.MatchString(e.Name()) {
			t.Errorf("file %s names counts by a number", e.Name())
		}
		if e.Name() == "report.md" || e.Name() == "index.html" || strings.HasPrefix(e.Name(), "heatmap-") && strings.HasSuffix(e.Name(), ".svg") {
			b, err := os.ReadFile(filepath.Join(out, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if m := numeric.Find(b); m != nil {
				t.Errorf("%s: %q", e.Name(), m)
			}
			for _, v := range counts.Values {
				if strings.Contains(string(b), ">"+v+"</text>") {
					ticks[v] = true
				}
			}
		}
	}
	if len(ticks) != 2 {
		t.Errorf("the heat map over counts labels its ticks %v, want %v", ticks, counts.Values)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "counts=all") && !strings.Contains(string(md), "counts=admitted") {
		t.Errorf("report.md never names a pick's counts:\n%s", md)
	}
}
