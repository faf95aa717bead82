package sweep

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated tables in docs/")

// fillGenerated replaces what stands between "<!-- compat:NAME -->" and the
// next "<!-- compat:end -->" in doc with body.
func fillGenerated(doc, name, body string) (string, error) {
	open := "<!-- compat:" + name + " -->\n"
	i := strings.Index(doc, open)
	if i < 0 {
		return "", fmt.Errorf("no %q", open)
	}
	j := strings.Index(doc[i:], "<!-- compat:end -->")
	if j < 0 {
		return "", fmt.Errorf("%q has no end", open)
	}
	return doc[:i+len(open)] + body + doc[i+j:], nil
}

// docs/compatibility.md holds the matrix and the abilities table as the
// code makes them (make docs rewrites them).
func TestCompatibilityDoc(t *testing.T) {
	checkGenerated(t, "compatibility.md", map[string]string{"matrix": CompatMarkdown(), "abilities": AbilitiesMarkdown()})
	checkGenerated(t, "algorithms.md", map[string]string{"algorithms": AlgorithmsMarkdown()})
}

// checkGenerated checks (or with -update-docs rewrites) the generated
// tables of docs/name, by marker.
func checkGenerated(t *testing.T, name string, tables map[string]string) {
	t.Helper()
	path := filepath.Join("..", "docs", name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, marker := range slices.Sorted(maps.Keys(tables)) {
		if doc, err = fillGenerated(doc, marker, tables[marker]); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if doc == string(b) {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s differs from the code's tables: run make docs", path)
}

// compatLog writes a small CSV log: 5 keys, a request a second, every
// other one a 401.
func compatLog(t *testing.T) string {
	t.Helper()
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("ts,client,path,code\n")
	for i := range 200 {
		fmt.Fprintf(&b, "%s,10.0.0.%d,/login,%d\n", day.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i%5, 200+201*(i%2))
	}
	path := filepath.Join(t.TempDir(), "log.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// compatSpec is a spec of feature f alone on traffic kind k (the log at
// log), with a token bucket as the limiter.
func compatSpec(f Feature, k TrafficKind, log string) string {
	const alg = "algorithm: token_bucket, rate: 1, capacity: 5"
	entry := "{" + alg + "%s}"
	var mods, client string
	switch f {
	case FeatureCountIf:
		mods, client = ", count_if: {status: [401]}", ", fail_share: 0.5"
	case FeatureCost:
		client = ", cost: 3"
	case FeaturePenaltyBox:
		mods = ", block_s: 30"
	case FeatureReactions:
		client = ", on_reject: {retry: immediate, max_retries: 2}"
	}
	deploy := ""
	switch k {
	case KindKeyed:
		deploy = ", key: address"
		client += ", addresses: 3, org: o"
	case KindNodes:
		deploy = ", nodes: 2, state: shared"
	case KindLagged:
		deploy = ", nodes: 2, state: shared, sync_ms: 10"
	}
	e := fmt.Sprintf(entry, mods+deploy)
	if f == FeatureAllOf {
		e = fmt.Sprintf("{rejected_counts: none, all_of: [{%s%s}, {algorithm: fixed_window, window_s: 60, limit: 100}]}", alg, deploy)
	}
	var spec string
	switch k {
	case KindLog, KindOverlay, KindKeyShards:
		spec = fmt.Sprintf("name: x\ntraffic:\n  log: %q\n  format: csv\n  csv: {time_format: rfc3339, columns: {time: ts, ip: client, path: path, status: code}}\n", log)
		if f == FeatureCost {
			spec += "  cost: {rules: [{path_prefix: /login, cost: 3}], default: 1}\n"
		}
		if f == FeatureReactions && k != KindOverlay {
			spec += "  reactions: [{match: all, on_reject: {retry: immediate, max_retries: 2}}]\n"
		}
		if k == KindOverlay {
			oc := ""
			if f == FeatureReactions {
				oc = client
			}
			spec += fmt.Sprintf("overlay:\n  name: o\n  duration_s: 100\n  clients:\n    - {name: a, class: abusive, stage: none, segments: [[0, 100, 2]]%s}\n", oc)
		}
	default:
		spec = fmt.Sprintf("name: x\nscenario:\n  name: s\n  duration_s: 100\n  clients:\n    - {name: a, class: abusive, stage: none, segments: [[0, 100, 2]]%s}\n    - {name: b, class: legit, segments: [[0, 100, 1]]}\n", client)
	}
	if k == KindKeyShards {
		spec += "shard_by: key\n"
	}
	return spec + "sweep:\n  - " + e + "\n"
}

// Every cell of the matrix is what the spec reader does: a spec of an
// exact cell is read, and (but for the costed overlay, whose requests the
// run reads) runs; one of a refused cell is refused with the cell's
// reason, naming the feature's field.
func TestCompatibilityMatrix(t *testing.T) {
	log := compatLog(t)
	for f := range numFeatures {
		for k := range numKinds {
			f, k := Feature(f), TrafficKind(k)
			t.Run(fmt.Sprintf("%s/%s", f, k), func(t *testing.T) {
				spec := compatSpec(f, k, log)
				c := Compat(f, k)
				s, err := ParseSpec([]byte(spec), nil)
				if err == nil && k == KindKeyShards {
					err = CheckKeySharding(s)
				}
				if !c.Exact {
					if err == nil || !strings.Contains(err.Error(), c.Why) {
						t.Errorf("refused cell (%s) read with error %v\n%s", c.Why, err, spec)
					}
					return
				}
				if err != nil {
					t.Fatalf("exact cell refused: %v\n%s", err, spec)
				}
				if k == KindKeyShards {
					return // key shards run in the key-shard tests
				}
				if _, _, _ = runSpecText(t, spec, "x.yaml"); t.Failed() {
					t.Log(spec)
				}
			})
		}
	}
}
