package report

// The explorer's clients: each client's requests offered and cut at the
// settings the page carries.

import (
	"cmp"
	"context"
	_ "embed"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/sweep"
)

// addClients fills in the clients and each setting's cuts (means over
// replicates), in one streaming pass over the clients rows: it holds each
// client's name once and, per setting, only the clients it cuts.
func (d *exploreData) addClients(ctx context.Context, dir string, index map[int64]int, frontier map[int]bool) error {
	ci := map[string]int{}
	var offered []float64
	var class []string
	var names []string
	first, at := int64(-1), -1 // the first row's point and its setting
	// Per setting, the clients cut: client indices and requests cut (sums
	// over replicates); cur sums the setting being read, densely.
	type cuts struct {
		k   []int32
		cut []float64
	}
	per := map[int]*cuts{}
	cur, curAt := []float64(nil), -1
	var touched []int32
	flush := func() {
		if curAt < 0 {
			return
		}
		slices.Sort(touched)
		c := per[curAt]
		if c == nil {
			c = &cuts{}
			per[curAt] = c
		}
		for _, k := range touched {
			c.k = append(c.k, k)
			c.cut = append(c.cut, cur[k])
			cur[k] = 0
		}
		touched = touched[:0]
		curAt = -1
	}
	seen := map[int]bool{}
	err := sweep.ScanClients(ctx, dir, func(c *sweep.ClientRow) error {
		k, ok := ci[c.Client]
		if !ok {
			k = len(names)
			name := strings.Clone(c.Client)
			ci[name] = k
			names = append(names, name)
			class = append(class, strings.Clone(c.Class))
			offered = append(offered, 0)
			cur = append(cur, 0)
		}
		if first < 0 {
			first = c.PointID
			at = index[first] // (setting 0 when the first point is not shown)
		}
		i, ok := index[c.PointID]
		if !ok {
			return nil
		}
		if i == at {
			offered[k] += float64(c.Offered)
		}
		if i != curAt {
			flush()
			curAt = i
			if seen[i] { // rows out of point order: summed again below
				per[i].k = append(per[i].k, -1)
				per[i].cut = append(per[i].cut, 0)
			}
			seen[i] = true
		}
		if c.Cut != 0 {
			if cur[k] == 0 {
				touched = append(touched, int32(k))
			}
			cur[k] += float64(c.Cut)
		}
		return nil
	})
	if err != nil {
		return err
	}
	flush()
	// A setting read in several runs of rows: sum each client's cuts.
	for _, c := range per {
		if !slices.Contains(c.k, -1) {
			continue
		}
		sum := map[int32]float64{}
		var ks []int32
		for j, k := range c.k {
			if k < 0 {
				continue
			}
			if _, ok := sum[k]; !ok {
				ks = append(ks, k)
			}
			sum[k] += c.cut[j]
		}
		slices.Sort(ks)
		c.k, c.cut = ks, c.cut[:0]
		for _, k := range ks {
			c.cut = append(c.cut, sum[k])
		}
	}
	reps := float64(max(d.Reps, 1))
	for k := range offered {
		offered[k] /= reps
	}
	// Clients most cut first, at most exploreMaxClients of them.
	most := make([]float64, len(names))
	entries := 0
	for _, c := range per {
		for j, k := range c.k {
			if c.cut[j] > 0 {
				most[k] = max(most[k], c.cut[j])
				entries++
			}
		}
	}
	order := make([]int, len(names))
	for k := range order {
		order[k] = k
	}
	if len(names) > exploreMaxClients {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(most[b], most[a]) })
		order = order[:exploreMaxClients]
		slices.Sort(order)
	}
	newIdx := make([]int, len(names))
	for k := range newIdx {
		newIdx[k] = -1
	}
	for j, k := range order {
		newIdx[k] = j
		d.Clients = append(d.Clients, visible(names[k])) // control characters and bidi overrides shown, as on index.html
		d.ClientClass = append(d.ClientClass, class[k])
		d.ClientOffer = append(d.ClientOffer, offered[k])
	}
	d.ClientsShown = len(names)
	d.CutsAll = entries <= exploreMaxCutEntries
	d.CutAt = []int{}
	for i := range frontier {
		if !d.CutsAll {
			d.CutAt = append(d.CutAt, i)
		}
	}
	slices.Sort(d.CutAt)
	for i, c := range per {
		if !d.CutsAll && !frontier[i] {
			continue
		}
		var pairs []float64
		for j, k := range c.k {
			if n := newIdx[k]; n >= 0 && c.cut[j] > 0 {
				pairs = append(pairs, float64(n), c.cut[j]/reps)
			}
		}
		if len(pairs) > 0 {
			d.Cuts[i] = pairs
		}
	}
	return nil
}
