package sweep

import "sync"

// gridOf is the number of points and replicates of the spec text y (0, 0
// when it does not parse). The readers of one run each check its keys:
// the last spec's answer is kept, so that a large scenario in the
// metadata (100,000 clients: megabytes of YAML) is parsed once, not once
// per reader.
func gridOf(y string) (points, reps int64) {
	gridMemo.mu.Lock()
	defer gridMemo.mu.Unlock()
	if gridMemo.ok && gridMemo.yaml == y {
		return gridMemo.points, gridMemo.reps
	}
	if spec, err := ParseSpec([]byte(y), nil); err == nil {
		points, reps = spec.Points(), int64(spec.Replicates)
	}
	gridMemo.yaml, gridMemo.points, gridMemo.reps, gridMemo.ok = y, points, reps, true
	return points, reps
}

var gridMemo struct {
	mu           sync.Mutex
	yaml         string
	points, reps int64
	ok           bool
}
