package ingest

import (
	"context"
	"path/filepath"
	"testing"
)

// The three real logs of configs/examples/logs, with the figures of their
// sources (SOURCE.txt beside each): requests, distinct clients (hosts) and
// the most requests in one second of the whole log.
var realLogs = []struct {
	path                  string
	format                Format
	lines, requests, keys int64
	peak                  int64
	durationS             int
}{
	{"nasa_ksc_19950801/nasa_19950801.tsv.gz", FormatNASATSV, 30970, 30969, 2365, 17, 46322},
	{"antlr_org_20030902/access.log.gz", FormatCombined, 7502, 7502, 431, 23, 41253},
	{"elastic_apache_logs/apache_logs.gz", FormatCombined, 10000, 10000, 1753, 9, 0},
}

func loadReal(t testing.TB, path string, opt Options) *Traffic {
	t.Helper()
	tr, err := Load(context.Background(), filepath.Join("..", "configs", "examples", "logs", path), opt)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestRealLogsAgreeWithREADME(t *testing.T) {
	for _, c := range realLogs {
		t.Run(c.path, func(t *testing.T) {
			tr := loadReal(t, c.path, Options{})
			if tr.Format != c.format {
				t.Errorf("format %v, want %v", tr.Format, c.format)
			}
			if !tr.Stats.Gzipped {
				t.Errorf("gzip not detected")
			}
			if tr.Stats.Lines != c.lines || tr.Stats.Malformed != 0 {
				t.Errorf("lines %d (malformed %d), want %d and 0", tr.Stats.Lines, tr.Stats.Malformed, c.lines)
			}
			if tr.Requests() != c.requests || tr.Stats.Requests != c.requests {
				t.Errorf("requests %d, want %d", tr.Requests(), c.requests)
			}
			if int64(len(tr.Keys)) != c.keys {
				t.Errorf("keys %d, want %d", len(tr.Keys), c.keys)
			}
			p := tr.Profile(5, 60)
			if p.PeakS != c.peak {
				t.Errorf("peak %d req/s, want %d", p.PeakS, c.peak)
			}
			if c.durationS != 0 && tr.DurationS != c.durationS {
				t.Errorf("duration %d s, want %d", tr.DurationS, c.durationS)
			}
			var sum int64
			for i, k := range tr.Keys {
				sum += k.Requests
				if i > 0 && k.Requests > tr.Keys[i-1].Requests {
					t.Fatalf("keys not ordered by requests at %d", i)
				}
				if k.Class != 0 || k.Rule != "" {
					t.Fatalf("key %q labelled without rules", k.Name)
				}
			}
			if sum != c.requests {
				t.Errorf("key requests sum to %d", sum)
			}
		})
	}
}
