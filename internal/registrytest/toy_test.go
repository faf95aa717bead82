// Package registrytest shows that an algorithm is one registry entry: a
// toy algorithm registered from this test file alone runs through a sweep,
// a report and a recommendation with no other change. It is a package of
// its own so that the registered toy is seen by no other test.
package registrytest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/export"
	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/recommend"
	"github.com/ratesweep/ratesweep/report"
	"github.com/ratesweep/ratesweep/sweep"
)

// quota is the toy: a key may make limit requests per window of window_s
// seconds counted from its first request, and none beyond (every request
// of a key after its quota is spent is rejected until the window ends).
type quota struct {
	limit, windowNs int64
	fresh           bool
	end, used       int64
}

func (q *quota) Reset() { q.fresh = true }

func (q *quota) Allow(t int64) bool { return q.AllowN(t, 1) == 1 }

func (q *quota) AllowN(t, n int64) int64 {
	if q.fresh || t >= q.end {
		q.fresh, q.end, q.used = false, t+q.windowNs, 0
	}
	k := min(n, max(0, q.limit-q.used))
	q.used += k
	return k
}

var quotaDescriptor = model.Descriptor{
	Name:   "toy_quota",
	Title:  "toy quota",
	Family: model.WindowFamily,
	Params: []string{"window_s", "limit"},
	Label:  func(p model.Policy) string { return fmt.Sprintf("toy quota %d per %d s", p.Limit, p.WindowS) },
	Why: func(p model.Policy) string {
		return fmt.Sprintf("cut once %d requests were spent in the %d s since the key's window opened", p.Limit, p.WindowS)
	},
	NewDecider: func(p model.Policy) model.Decider {
		return &quota{limit: p.Limit, windowNs: int64(p.WindowS) * 1e9, fresh: true}
	},
	ColorSlot: -1,
	Color:     "#2a9d8f",
	Example:   "toy_quota window_s=60 limit=100",
}

const spec = `name: toy
scenario:
  name: two clients
  duration_s: 300
  clients:
    - name: steady reader
      class: legit
      segments: [[0, 300, 2]]
    - name: scraper
      class: abusive
      stage: code
      segments: [[60, 120, 20]]
sweep:
  - algorithm: toy_quota
    window_s: [60]
    limit: [60, 120, 240, 600, 1200, 2400]
  - algorithm: sliding_window
    window_s: [60]
    limit: [60, 120, 240, 600, 1200, 2400]
`

func TestToyAlgorithmSweepReportRecommend(t *testing.T) {
	alg, err := model.Register(quotaDescriptor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := model.Register(quotaDescriptor); err == nil {
		t.Error("registering a name twice: no error")
	}
	// Without a shared-state form, a policy on two keys at once is refused
	// by name.
	if _, err := model.ParseLabel("toy_quota window_s=60 limit=5 key=both"); err == nil || !strings.Contains(err.Error(), "two keys") {
		t.Errorf("key=both: %v", err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	sp, err := sweep.ReadSpec([]byte(spec), "toy.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.Run(ctx, sp, sweep.Options{OutDir: dir, Workers: 1, Shard: sweep.Shard{Count: 1}, MaxPoints: sweep.DefaultMaxPoints}); err != nil {
		t.Fatalf("run: %v", err)
	}
	rows, err := sweep.ReadPoints(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// The toy's points: its label, and the decisions of its decider.
	var toy int
	for _, r := range rows {
		if r.Algorithm != alg.String() {
			continue
		}
		toy++
		p, err := model.ParseLabel(r.Key())
		if err != nil || p.Algorithm != alg {
			t.Fatalf("policy %q: %v (algorithm %v)", r.Key(), err, p.Algorithm)
		}
		// The steady reader offers 2/s: 120 a minute, admitted in full from
		// limit 120 up; the scraper's minute of 20/s is cut at limit.
		wantCut := int64(0)
		if p.Limit < 120 {
			wantCut = 5 * (120 - p.Limit) // five windows of 60 s
		}
		if r.FalseCut != wantCut {
			t.Errorf("%s: false_cut %d, want %d", r.Key(), r.FalseCut, wantCut)
		}
	}
	if toy != 6 {
		t.Fatalf("%d toy points, want 6", toy)
	}

	r, err := report.Load(ctx, dir, report.Options{MaxCurves: 8, Knees: -1})
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	files, err := r.Write(filepath.Join(dir, "report"))
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || !strings.Contains(string(md), "toy quota") {
		t.Errorf("report (%d files) does not name the toy:\n%s", len(files), md)
	}
	// The toy's own colour (its descriptor's) draws its curve, and the
	// explorer lists its points.
	var svgs []byte
	for _, f := range files {
		if strings.HasSuffix(f, ".svg") {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			svgs = append(svgs, b...)
		}
	}
	if !bytes.Contains(svgs, []byte("rgb(42,157,143)")) && !bytes.Contains(bytes.ToLower(svgs), []byte("#2a9d8f")) {
		t.Errorf("no figure draws in the toy's colour #2a9d8f")
	}
	if data, err := exploreData(filepath.Join(dir, "report", "explore.html")); err != nil || !bytes.Contains(data, []byte(`"toy_quota"`)) || !bytes.Contains(data, []byte(`"#2a9d8f"`)) {
		t.Errorf("explore.html does not hold the toy's points in its colour (%v)", err)
	}
	// An export target has no form for the toy: it says so and configures
	// the nearest policy it can, with the toy's rate (100 per 60 s).
	ex, err := export.Export(model.ExamplePolicy(alg), "nginx", export.Options{})
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	if ex.Fit != export.Nearest || ex.Why == "" || ex.Exported.Algorithm == alg {
		t.Errorf("export of the toy to nginx: fit %v, why %q, exported %v", ex.Fit, ex.Why, ex.Exported)
	}

	bound, err := recommend.ParseBound("1%")
	if err != nil {
		t.Fatal(err)
	}
	res, err := recommend.RecommendDirs(ctx, []string{dir}, recommend.Options{MaxFalseCut: &bound, CliffPP: 5})
	if err != nil {
		t.Fatalf("recommend: %v", err)
	}
	var out bytes.Buffer
	if err := recommend.Write(&out, res, "text"); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range res.ByAlgorithm {
		if strings.HasPrefix(c.Label, "toy_quota ") {
			found = true
			if c.Why == "" || !strings.Contains(c.Why, "spent") {
				t.Errorf("toy choice %s: why %q, not the toy's own words", c.Label, c.Why)
			}
		}
	}
	if !found {
		t.Errorf("recommend chose nothing of the toy:\n%s", out.String())
	}
}

// exploreData returns the JSON explore.html at path embeds (base64 of
// gzip, in the script element of id data).
func exploreData(path string) ([]byte, error) {
	html, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, rest, ok := bytes.Cut(html, []byte(`id="data">`))
	b64, _, ok2 := bytes.Cut(rest, []byte("</script>"))
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s: no data element", path)
	}
	z, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
