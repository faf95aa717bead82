package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync"
	"sync/atomic"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// Decider is one key's request-by-request limiter: the seam to the event
// simulation (model.Decider of the zoo branch has these methods). Times are
// ns since StartUnix and do not decrease between Resets.
type Decider interface {
	Reset()
	Allow(tNs int64) bool
}

// KeyResult is what a policy did to one key's requests, by request label
// (indexed by model.Stage; NoStage = legit).
type KeyResult struct {
	Offered  [4]int64
	Admitted [4]int64
	// OfferedCost and AdmittedCost are the same in cost units, when the
	// policy weighs requests and the log has costs (cost.go); else 0.
	OfferedCost  [4]int64
	AdmittedCost [4]int64
	// Blocks is the number of blocks the policy's penalty box (block_s)
	// started on the key, and BlockedNs their total length before the
	// log's end (Traffic.DurationS), ns; 0 without block_s.
	Blocks    int64
	BlockedNs int64
}

// Totals is the key's requests offered and admitted, all labels together.
func (r *KeyResult) Totals() model.ClientResult {
	var c model.ClientResult
	for s := range r.Offered {
		c.Offered += r.Offered[s]
		c.Admitted += r.Admitted[s]
	}
	c.BlockedNs = r.BlockedNs
	return c
}

// Replay is the outcome of one policy over one realisation of a log.
type Replay struct {
	Keys          []KeyResult // t.Keys order
	model.Metrics             // judged per request label, so mixed keys count exactly
}

// Replay offers every key's requests (times from Realise, t.Keys order) to
// a fresh state of d, request by request, and fills out, reusing its
// storage. Metrics are counted per request label: a legitimate request cut
// is a false cut even when its key is mostly abusive.
func (t *Traffic) Replay(times [][]int64, d Decider, out *Replay) {
	if cap(out.Keys) < len(t.Keys) {
		out.Keys = make([]KeyResult, len(t.Keys))
	}
	out.Keys = out.Keys[:len(t.Keys)]
	t.ReplayKeys(times, d, out.Keys, 0, len(t.Keys))
	out.Metrics = t.Metrics(out.Keys)
}

// Metrics derives the judged numbers from per-key results (t.Keys order):
// MetricsByLabel's, and the penalty box's blocks and the seconds the
// legitimate keys (Key.Class) spent blocked.
func (t *Traffic) Metrics(keys []KeyResult) model.Metrics {
	m := MetricsByLabel(keys)
	var legitNs int64
	for i := range keys {
		m.Blocks += keys[i].Blocks
		if t.Keys[i].Class == model.Legit {
			legitNs += keys[i].BlockedNs
		}
	}
	m.LegitBlockedS = float64(legitNs) / 1e9
	return m
}

// horizonNs is the end of the log's span, ns since StartUnix: a penalty
// box's block counts up to it, as a scenario's up to its duration.
func (t *Traffic) horizonNs() int64 { return int64(t.DurationS) * secondNs }

// ReplayKeys is Replay of keys [lo, hi) alone, into keys[lo:hi] (len(keys)
// = len(t.Keys)), without the metrics (Traffic.Metrics): disjoint ranges
// may run at once, each with its own Decider.
func (t *Traffic) ReplayKeys(times [][]int64, d Decider, keys []KeyResult, lo, hi int) {
	horizon := t.horizonNs()
	for i := lo; i < hi; i++ {
		ts := times[i]
		labels := t.Labels(i)
		r := &keys[i]
		*r = KeyResult{}
		d.Reset()
		if rd, ok := d.(model.RequestDecider); ok && t.resp != nil {
			replayWeighed(rd, ts, labels, t.Costs(i), r)
		} else {
			for j, tn := range ts {
				l := labels[j]
				r.Offered[l]++
				if d.Allow(tn) {
					r.Admitted[l]++
				}
			}
		}
		r.Blocks, r.BlockedNs, _ = model.BlockStats(d, horizon)
	}
}

// MetricsByLabel derives the judged numbers from per-key results by label.
func MetricsByLabel(keys []KeyResult) model.Metrics {
	var m model.Metrics
	for i := range keys {
		r := &keys[i]
		m.Count(model.Legit, model.NoStage, model.ClientResult{Offered: r.Offered[model.NoStage], Admitted: r.Admitted[model.NoStage]})
		for _, s := range model.Stages {
			m.Count(model.Abusive, s, model.ClientResult{Offered: r.Offered[s], Admitted: r.Admitted[s]})
		}
		for s := range r.OfferedCost {
			m.Cost.Add(model.Class(min(s, 1)), r.OfferedCost[s], r.AdmittedCost[s])
		}
	}
	m.Finish()
	return m
}

// FileSHA256 is the hex SHA-256 of a file's bytes as stored (compressed or
// not): the identity of a log for run metadata.
func FileSHA256(path string) (string, error) {
	if path == Stdin {
		return "", &yamlx.Error{File: "(stdin)", Msg: "a sweep needs the log as a file (its hash identifies the run); inspect reads standard input"}
	}
	f, err := Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", &yamlx.Error{File: path, Msg: err.Error()}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Totals returns every key's offered and admitted requests, all labels
// together (t.Keys order), for Rows.Aggregate; it reuses buf's storage.
func (r *Replay) Totals(buf []model.ClientResult) []model.ClientResult {
	if cap(buf) < len(r.Keys) {
		buf = make([]model.ClientResult, len(r.Keys))
	}
	buf = buf[:len(r.Keys)]
	for i := range r.Keys {
		buf[i] = r.Keys[i].Totals()
	}
	return buf
}

// CountReplay holds ReplayCounts' and ReplayMany's scratch between calls.
type CountReplay struct {
	scratch []countScratch // per goroutine (ReplayCounts)
	part    []pointSums    // per goroutine
}

// countScratch is one goroutine's counts and histogram of a key.
type countScratch struct {
	c    []int32
	hist []int64
}

// pointSums accumulates, per point of a batch, the grouping's rows and the
// requests offered and admitted by label.
type pointSums struct {
	nr     int
	rows   []model.ClientResult // point × row
	offers [][4]int64           // per point: offered by label
	admits [][4]int64           // per point: admitted by label
	// blocks and legitNs are per point the penalty box's blocks and the
	// legitimate keys' blocked time (ReplayMany).
	blocks  []int64
	legitNs []int64
}

func (a *pointSums) reset(points, nr int) {
	a.nr = nr
	a.rows = grow(a.rows, points*nr)
	a.offers = grow(a.offers, points)
	a.admits = grow(a.admits, points)
	a.blocks = grow(a.blocks, points)
	a.legitNs = grow(a.legitNs, points)
}

// addBlocks counts one key's blocks at point k, in the key's row.
func (a *pointSums) addBlocks(k, row int, blocks, ns int64, legit bool) {
	a.blocks[k] += blocks
	a.rows[k*a.nr+row].BlockedNs += ns
	if legit {
		a.legitNs[k] += ns
	}
}

// add counts one key's result at point k, in the key's row.
func (a *pointSums) add(k, row int, offered, admitted *[4]int64) {
	r := &a.rows[k*a.nr+row]
	for l := range 4 {
		a.offers[k][l] += offered[l]
		a.admits[k][l] += admitted[l]
		r.Offered += offered[l]
		r.Admitted += admitted[l]
	}
}

// merge adds b's sums to a's.
func (a *pointSums) merge(b *pointSums) {
	for i := range a.rows {
		a.rows[i].Offered += b.rows[i].Offered
		a.rows[i].Admitted += b.rows[i].Admitted
		a.rows[i].BlockedNs += b.rows[i].BlockedNs
	}
	for k := range a.offers {
		for l := range 4 {
			a.offers[k][l] += b.offers[k][l]
			a.admits[k][l] += b.admits[k][l]
		}
		a.blocks[k] += b.blocks[k]
		a.legitNs[k] += b.legitNs[k]
	}
}

// finish copies the rows out and derives each point's metrics as
// MetricsByLabel does (its counts are sums over keys, so by label first is
// the same).
func (a *pointSums) finish(rows []model.ClientResult, metrics []model.Metrics) {
	copy(rows, a.rows)
	for k := range a.offers {
		var m model.Metrics
		m.Count(model.Legit, model.NoStage, model.ClientResult{Offered: a.offers[k][model.NoStage], Admitted: a.admits[k][model.NoStage]})
		for _, st := range model.Stages {
			m.Count(model.Abusive, st, model.ClientResult{Offered: a.offers[k][st], Admitted: a.admits[k][st]})
		}
		m.Finish()
		m.Blocks, m.LegitBlockedS = a.blocks[k], float64(a.legitNs[k])/1e9
		metrics[k] = m
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// ForKeyRanges runs f(w, ranges[r], ranges[r+1]) for every range r of
// ranges (key bounds) on workers goroutines w = 0 … workers-1, which take
// the ranges in turn until none is left, so a goroutine that drew light keys
// takes more of them. It returns when all are done.
func ForKeyRanges(workers int, ranges []int, f func(w, lo, hi int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := int(next.Add(1)) - 1; r < len(ranges)-1; r = int(next.Add(1)) - 1 {
				f(w, ranges[r], ranges[r+1])
			}
		})
	}
	wg.Wait()
}

// ReplayCounts replays a count-based policy at many limits in one pass:
// count fills c[j] with the count key's request j is compared with (admitted
// at limit L iff c[j] < L, the same c for every L; model.CountFunc), and for
// each k, rows[k·len(g.Names) …] receives the grouping's rows and metrics[k]
// the metrics, exactly what Replay, Rows.Aggregate and the metrics give at
// limits[k] (limits >= 0). Per key it histograms the counts by label (capped
// at the largest limit or the key's requests, whichever is less), so it
// costs O(requests + keys × limits), not O(requests × limits). Goroutines,
// one per count function of counts (each its own state), take the ranges of
// ranges (key bounds) in turn, as in ReplayMany.
func (t *Traffic) ReplayCounts(times [][]int64, counts []func(ts []int64, c []int32, cap int64), limits []int64, ranges []int, g *Rows, rows []model.ClientResult, metrics []model.Metrics, s *CountReplay) {
	var maxL int64
	for _, l := range limits {
		maxL = max(maxL, l)
	}
	workers := min(len(counts), len(ranges)-1)
	if cap(s.part) < workers {
		s.part = make([]pointSums, workers)
	}
	if len(s.scratch) < workers {
		s.scratch = append(s.scratch, make([]countScratch, workers-len(s.scratch))...)
	}
	s.part = s.part[:workers]
	for w := range workers {
		s.part[w].reset(len(limits), len(g.Names))
	}
	ForKeyRanges(workers, ranges, func(w, lo, hi int) {
		for i := lo; i < hi; i++ {
			t.countKey(i, times[i], counts[w], limits, maxL, g, &s.part[w], &s.scratch[w])
		}
	})
	for w := 1; w < workers; w++ {
		s.part[0].merge(&s.part[w])
	}
	s.part[0].finish(rows, metrics)
}

// countKey adds key i's requests ts at every limit to acc (ReplayCounts).
func (t *Traffic) countKey(i int, ts []int64, count func(ts []int64, c []int32, cap int64), limits []int64, maxL int64, g *Rows, acc *pointSums, s *countScratch) {
	n := len(ts)
	if n == 0 {
		return
	}
	labels := t.Labels(i)
	h := int(min(maxL, int64(n))) + 1 // buckets 0 … h-1; h-1 = "at least h-1"
	if cap(s.c) < n {
		s.c = make([]int32, n)
	}
	c := s.c[:n]
	count(ts, c, int64(h-1))
	if cap(s.hist) < 4*h {
		s.hist = make([]int64, 4*h)
	}
	hist := s.hist[:4*h]
	clear(hist)
	var offered [4]int64
	var present uint8 // labels present
	for j, l := range labels {
		hist[int(l)*h+int(c[j])]++
		offered[l]++
		present |= 1 << l
	}
	// Prefix sums: hist[l·h + v] becomes the requests of label l with a
	// count <= v, so admitted at L is hist[l·h + min(L, h) − 1].
	for l := range 4 {
		if present&(1<<l) == 0 {
			continue
		}
		row := hist[l*h : (l+1)*h]
		for v := 1; v < h; v++ {
			row[v] += row[v-1]
		}
	}
	of := int(g.Of[i])
	for k, L := range limits {
		var admitted [4]int64
		if L > 0 {
			for l := range 4 {
				if present&(1<<l) != 0 {
					admitted[l] = hist[l*h+int(min(L, int64(h)))-1]
				}
			}
		}
		acc.add(k, of, &offered, &admitted)
	}
}

// Batch is many policies' limiters for one key, deciding its requests
// together: model.Lockstep (structure-of-arrays state, every policy per
// request), or Deciders (each policy over a chunk of requests in turn).
type Batch interface {
	// Len is the number of policies.
	Len() int
	// Reset returns every policy to the state of a key never seen.
	Reset()
	// AdmitByLabel offers one key's next requests (times ns, labels) to
	// every policy k, adding the admitted ones by label to admitted[k].
	AdmitByLabel(ts []int64, labels []model.Stage, admitted [][4]int64)
	// AdmitKey is Reset then AdmitByLabel over all of one key's requests,
	// offered (by label) in all.
	AdmitKey(ts []int64, labels []model.Stage, offered *[4]int64, admitted [][4]int64)
}

// Deciders is a Batch of one Decider per policy.
func Deciders(ds []Decider) Batch { return deciders(ds) }

type deciders []Decider

func (ds deciders) Len() int { return len(ds) }

func (ds deciders) Reset() {
	for _, d := range ds {
		d.Reset()
	}
}

func (ds deciders) AdmitKey(ts []int64, labels []model.Stage, _ *[4]int64, admitted [][4]int64) {
	ds.Reset()
	ds.AdmitByLabel(ts, labels, admitted)
}

// AdmitByLabel offers a busy key's requests in chunks, every Decider over a
// chunk while it is in cache.
func (ds deciders) AdmitByLabel(ts []int64, labels []model.Stage, admitted [][4]int64) {
	for lo := 0; lo < len(ts); lo += replayChunk {
		hi := min(lo+replayChunk, len(ts))
		for k, d := range ds {
			model.AdmitByLabel(d, ts[lo:hi], labels[lo:hi], &admitted[k])
		}
	}
}

// blockStats is model.BlockStats of policy k's Decider (blockBatch).
func (ds deciders) blockStats(k int, horizonNs int64) (blocks, ns int64, ok bool) {
	return model.BlockStats(ds[k], horizonNs)
}

// blockBatch is a Batch whose policies may block keys (a penalty box):
// after AdmitKey, blockStats returns policy k's blocks on the key and
// their length up to horizonNs (model.BlockStats).
type blockBatch interface {
	blockStats(k int, horizonNs int64) (blocks, ns int64, ok bool)
}

// replayChunk is how many of a key's requests Deciders offers to each
// Decider in turn (4 KiB of times and 512 B of labels).
var replayChunk = 512 // a variable for the tests

// ReplayMany replays the policies of a Batch over the log key by key: each
// key's requests are read once and offered to every policy (Reset for the
// key), where Replay streams the whole log once per policy. Goroutines, one
// per Batch of bs (all of one length), take the ranges of ranges (key
// bounds, see ReplayKeys) in turn until none is left, so a core that drew
// light keys takes more of them. Results as ReplayCounts: the same as Replay
// per policy, decision by decision, whichever goroutine took which range
// (sums of integers).
func (t *Traffic) ReplayMany(times [][]int64, bs []Batch, ranges []int, g *Rows, rows []model.ClientResult, metrics []model.Metrics, s *CountReplay) {
	points := bs[0].Len()
	workers := min(len(bs), len(ranges)-1)
	if cap(s.part) < workers {
		s.part = make([]pointSums, workers)
	}
	s.part = s.part[:workers]
	admitted := make([][][4]int64, workers)
	for w := range s.part {
		s.part[w].reset(points, len(g.Names))
		admitted[w] = make([][4]int64, points)
	}
	horizon := t.horizonNs()
	ForKeyRanges(workers, ranges, func(w, lo, hi int) {
		acc, b, adm := &s.part[w], bs[w], admitted[w]
		bb, _ := b.(blockBatch)
		for i := lo; i < hi; i++ {
			ts, labels := times[i], t.Labels(i)
			var offered [4]int64
			for _, l := range labels {
				offered[l]++
			}
			clear(adm)
			b.AdmitKey(ts, labels, &offered, adm)
			of := int(g.Of[i])
			for k := range adm {
				acc.add(k, of, &offered, &adm[k])
			}
			if bb != nil {
				legit := t.Keys[i].Class == model.Legit
				for k := range adm {
					if n, ns, ok := bb.blockStats(k, horizon); ok {
						acc.addBlocks(k, of, n, ns, legit)
					}
				}
			}
		}
	})
	for r := 1; r < len(s.part); r++ {
		s.part[0].merge(&s.part[r])
	}
	s.part[0].finish(rows, metrics)
}
