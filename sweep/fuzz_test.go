package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// Any bytes given as a spec decode to a valid spec or to errors, one a
// line, naming what is wrong (never a panic); a valid spec's canonical YAML
// (scenario inlined) decodes to itself, and its cost estimate is defined.
// Scenario file names resolve to the lesson's scenario.
func FuzzParseSpec(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "configs", "*.yaml"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("name: x\nscenario: lesson.yaml\nreplicates: 3\nsweep:\n  - {algorithm: nginx, rate: [1, 2], burst: {from: 0, to: 10, count: 3, scale: log}, delay: 2}\n"))
	resolve := func(p string) (string, []byte, error) { return p, configs.Lesson, nil }
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec(data, resolve)
		if err != nil {
			var ye *yamlx.Error
			var ie *InputError
			if !errors.As(err, &ye) && !errors.As(err, &ie) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			// One line per error (a spec's errors come all at once).
			for _, l := range strings.Split(err.Error(), "\n") {
				if strings.TrimSpace(l) == "" {
					t.Fatalf("an empty error line: %q", err)
				}
			}
			return
		}
		if s.Traffic != nil {
			return // a log's spec names files; its YAML is checked by ingest's tests
		}
		canon := s.YAML()
		s2, err := ParseSpec(canon, nil)
		if err != nil {
			t.Fatalf("canonical YAML does not decode: %v\n%s", err, canon)
		}
		if again := s2.YAML(); string(again) != string(canon) {
			t.Fatalf("canonical YAML changes on a round trip:\n%s\n%s", canon, again)
		}
		if s2.Points() != s.Points() || s2.Rows() < s2.Points() {
			t.Fatalf("points %d then %d, rows %d", s.Points(), s2.Points(), s2.Rows())
		}
		if e := EstimateRun(s, Shard{0, 1}, 2, 1<<30); e.MemoryBytes <= 0 || e.Rows != s.Rows() {
			t.Fatalf("estimate %+v for %d rows", e, s.Rows())
		}
	})
}
