package sweep

import (
	"context"
	"path/filepath"
	"testing"
)

// The overlay examples over the three real logs run, and every request of
// the log and of the overlay is offered to every policy; an attack aimed at
// fixed-window boundaries gets more through a fixed window than through a
// sliding window of the same limit.
func TestOverlayExamples(t *testing.T) {
	for _, name := range []string{"antlr-org", "nasa-ksc", "elastic-apache"} {
		t.Run(name, func(t *testing.T) {
			s, err := LoadSpec(filepath.Join("..", "configs", "examples", name+"-overlay.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if s.Traffic.Overlay == nil {
				t.Fatal("no overlay")
			}
			dir := t.TempDir()
			res := mustRun(t, s, Options{OutDir: dir})
			if res.Log == nil || res.Log.OverlayRequests == 0 {
				t.Fatalf("accounting %+v", res.Log)
			}
			m := readManifest(t, filepath.Join(dir, "manifest.json"))
			if m.Log == nil || m.Log.OverlayRequests != res.Log.OverlayRequests {
				t.Errorf("manifest log %+v", m.Log)
			}
			rows, err := ReadPoints(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			want := res.Log.Used + res.Log.OverlayRequests
			byKey := map[string]int64{}
			for _, r := range rows {
				if r.OfferedLegit+r.OfferedAbusive != want || r.Caught+r.Missed != r.OfferedAbusive {
					t.Fatalf("%s: offered %d+%d, want %d in all", r.Key(), r.OfferedLegit, r.OfferedAbusive, want)
				}
				if r.Algorithm != "token_bucket" {
					byKey[r.Algorithm+"/"+fmtLimit(r.Params["limit"])] = r.Missed
				}
			}
			for _, l := range []float64{60} {
				if fw, sw := byKey["fixed_window/"+fmtLimit(l)], byKey["sliding_window/"+fmtLimit(l)]; fw <= sw {
					t.Errorf("limit %v: fixed window misses %d, sliding window %d (edge bursts should pass a fixed window)", l, fw, sw)
				}
			}
		})
	}
}

func fmtLimit(v float64) string {
	return string(rune('0'+int(v)/100)) + string(rune('0'+int(v)/10%10)) + string(rune('0'+int(v)%10))
}

// A spec with an overlay or several logs reads back from its canonical
// YAML (spec.yaml, the Parquet metadata) to the same spec.
func TestOverlaySpecRoundTrip(t *testing.T) {
	s, err := LoadSpec(filepath.Join("..", "configs", "examples", "antlr-org-overlay.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s.Traffic.Logs = append(s.Traffic.Logs, s.Traffic.Logs[0])
	s.Replicates = 2
	y := s.YAML()
	back, err := ParseSpec(y, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if string(back.YAML()) != string(y) || back.Traffic.Overlay == nil || len(back.Traffic.Logs) != 2 || back.Replicates != 2 {
		t.Errorf("round trip differs:\n%s\n---\n%s", y, back.YAML())
	}
}
