package report

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// exploreEps is recommend's tolerance: objectives within it are equal.
const exploreEps = 1e-9

// exploreKeep returns the settings explore.html embeds, as ascending
// indices, and how many of them some constraints can choose. With at most
// limit settings it keeps them all. Past it, it keeps the settings marked
// must (the frontiers), every setting that recommend can choose for some
// bounds on legitimate cut, missed and worst client cut (lc, mp, wc) among
// some set of algorithms (alg), and an even sample of the others up to
// limit in all (fewer when the choosable ones alone exceed it), and the
// choosable settings' neighbours (gridNeighbours). A setting
// is never chosen when another of its algorithm is at least as good in all
// three and better by more than exploreEps in lc or mp (recommend then
// prefers it whatever the objective), so those are the ones sampled.
func exploreKeep(alg []int, labels []string, lc, mp, wc []float64, must []bool, limit int) (keep []int, choosable int) {
	n := len(alg)
	if n <= limit {
		keep = make([]int, n)
		for i := range keep {
			keep[i] = i
		}
		return keep, n
	}
	byAlg := map[int][]int{}
	for i, a := range alg {
		byAlg[a] = append(byAlg[a], i)
	}
	in := make([]bool, n)
	for _, idx := range byAlg {
		for _, i := range undominated(idx, lc, mp, wc) {
			in[i] = true
		}
	}
	var at []int
	for i := range in {
		if in[i] {
			choosable++
			at = append(at, i)
		}
		in[i] = in[i] || must[i]
	}
	for _, i := range gridNeighbours(alg, labels, at) {
		in[i] = true
	}
	var rest []int
	for i := range in {
		if in[i] {
			keep = append(keep, i)
		} else {
			rest = append(rest, i)
		}
	}
	if want := limit - len(keep); want > 0 {
		for k := range want {
			keep = append(keep, rest[k*len(rest)/want])
		}
		slices.Sort(keep)
	}
	return keep, choosable
}

// gridNeighbours returns the neighbours of the settings at, as recommend
// lists a choice's: for each numeric parameter of a setting's label (alg,
// labels: the label without the algorithm's name), the settings of its
// algorithm equal but for that parameter, at the next lower and the next
// higher value.
func gridNeighbours(alg []int, labels []string, at []int) []int {
	if len(at) == 0 {
		return nil
	}
	type entry struct {
		v float64
		i int
	}
	// group is a setting's key without parameter k: the algorithm, the
	// parameter's name and the other parameters.
	group := func(i, k int, toks []string) string {
		var b strings.Builder
		b.WriteString(strconv.Itoa(alg[i]))
		for j, t := range toks {
			b.WriteByte(' ')
			if j == k {
				name, _, _ := strings.Cut(t, "=")
				b.WriteString(name + "=*")
			} else {
				b.WriteString(t)
			}
		}
		return b.String()
	}
	value := func(t string) (float64, bool) {
		_, v, ok := strings.Cut(t, "=")
		f, err := strconv.ParseFloat(v, 64)
		return f, ok && err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	groups := map[string][]entry{}
	for i, l := range labels {
		toks := strings.Fields(l)
		for k, t := range toks {
			if v, ok := value(t); ok {
				g := group(i, k, toks)
				groups[g] = append(groups[g], entry{v, i})
			}
		}
	}
	for _, es := range groups {
		slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.v, b.v) })
	}
	var out []int
	for _, i := range at {
		toks := strings.Fields(labels[i])
		for k, t := range toks {
			if _, ok := value(t); !ok {
				continue
			}
			es := groups[group(i, k, toks)]
			j := slices.IndexFunc(es, func(e entry) bool { return e.i == i })
			if j > 0 {
				out = append(out, es[j-1].i)
			}
			if j >= 0 && j+1 < len(es) {
				out = append(out, es[j+1].i)
			}
		}
	}
	return out
}

// undominated returns the settings of idx that no other of idx dominates:
// none is at most as large in lc, mp and wc and smaller by more than
// exploreEps in lc or in mp. NaN metrics are kept. It sweeps idx by lc
// with two prefix-minimum trees of wc over mp's ranks, O(n log n).
func undominated(idx []int, lc, mp, wc []float64) []int {
	var out, ord []int
	for _, i := range idx {
		if math.IsNaN(lc[i]) || math.IsNaN(mp[i]) || math.IsNaN(wc[i]) {
			out = append(out, i)
		} else {
			ord = append(ord, i)
		}
	}
	slices.SortFunc(ord, func(a, b int) int {
		return cmp.Or(cmp.Compare(lc[a], lc[b]), cmp.Compare(mp[a], mp[b]), cmp.Compare(wc[a], wc[b]), cmp.Compare(a, b))
	})
	mps := make([]float64, len(ord))
	for k, i := range ord {
		mps[k] = mp[i]
	}
	slices.Sort(mps)
	mps = slices.Compact(mps)
	rank := func(v float64) int { return sort.SearchFloat64s(mps, v) } // values below v
	// below holds the settings with lc smaller by more than eps; upto
	// those with lc at most this one's.
	below, upto := newMinTree(len(mps)), newMinTree(len(mps))
	pb, pu := 0, 0
	for _, i := range ord {
		for ; pb < len(ord) && lc[ord[pb]] < lc[i]-exploreEps; pb++ {
			below.add(rank(mp[ord[pb]]), wc[ord[pb]])
		}
		for ; pu < len(ord) && lc[ord[pu]] <= lc[i]; pu++ {
			upto.add(rank(mp[ord[pu]]), wc[ord[pu]])
		}
		if below.min(rank(mp[i])+1) <= wc[i] || upto.min(rank(mp[i]-exploreEps)) <= wc[i] {
			continue
		}
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// minTree is a Fenwick tree of prefix minimums.
type minTree []float64

func newMinTree(n int) minTree {
	t := make(minTree, n+1)
	for i := range t {
		t[i] = math.Inf(1)
	}
	return t
}

// add lowers position i (0-based) to v.
func (t minTree) add(i int, v float64) {
	for i++; i < len(t); i += i & -i {
		t[i] = min(t[i], v)
	}
}

// min is the least value at positions below n.
func (t minTree) min(n int) float64 {
	m := math.Inf(1)
	for ; n > 0; n -= n & -n {
		m = min(m, t[n])
	}
	return m
}

// addPeaks fills in the clients' peak requests per window for the window
// lengths of the window algorithms' settings (those of the frontiers
// first), from the scenario's per-second rates.
func (d *exploreData) addPeaks(sc *model.Scenario, frontier map[int]bool) {
	if sc == nil || len(d.Clients) == 0 {
		return
	}
	var wins []float64
	seen := map[float64]bool{}
	add := func(i int) {
		if !d.Window[d.Alg[i]] {
			return
		}
		p, err := model.ParseLabel(d.Algs[d.Alg[i]] + " " + d.Label[i])
		if err != nil {
			return
		}
		if w := p.Value("window_s"); w > 0 && !seen[w] && len(wins) < exploreMaxWindows {
			seen[w] = true
			wins = append(wins, w)
		}
	}
	for i := range d.ID {
		if frontier[i] {
			add(i)
		}
	}
	for i := range d.ID {
		add(i)
	}
	if len(wins) == 0 {
		return
	}
	slices.Sort(wins)
	byName := map[string]int{}
	for k := range sc.Clients {
		byName[sc.Clients[k].Name] = k
	}
	d.PeakWin = wins
	d.Peaks = make([][]float64, len(wins))
	for w := range wins {
		d.Peaks[w] = make([]float64, len(d.Clients))
	}
	prefix := make([]int64, sc.DurationS+1)
	for k, name := range d.Clients {
		c, ok := byName[name]
		if !ok {
			continue
		}
		for t, a := range sc.Clients[c].Series(sc.DurationS) {
			prefix[t+1] = prefix[t] + int64(a)
		}
		for w, win := range wins {
			s := min(max(int(math.Ceil(win)), 1), sc.DurationS)
			var peak int64
			for t := s; t <= sc.DurationS; t++ {
				peak = max(peak, prefix[t]-prefix[t-s])
			}
			d.Peaks[w][k] = float64(peak)
		}
	}
}
