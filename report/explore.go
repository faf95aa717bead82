package report

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/recommend"
)

// The explorer page: explore.html, one self-contained file (its script,
// style and data inline; no network) beside index.html.
var (
	//go:embed explore/explore.html
	exploreHTML string
	//go:embed explore/explore.js
	exploreJS string
	//go:embed explore/explore.css
	exploreCSS string
)

// exploreMaxSettings bounds the settings explore.html embeds: past it the
// page holds every setting that some constraints can choose and an even
// sample of the others, up to this many in all (exploreKeep).
const exploreMaxSettings = 50_000

// exploreMaxExports bounds the frontier settings that carry their exports
// in a sampled run.
const exploreMaxExports = 5

// exploreMaxWindows bounds the window lengths with client peak rates.
const exploreMaxWindows = 24

// exploreMaxCutEntries bounds the per-client cuts embedded for every
// setting; past it only the settings of the frontier and of each
// algorithm's frontier have them.
const exploreMaxCutEntries = 200_000

// exploreMaxClients bounds the clients listed by name; a run with more
// (a log run's keys) lists the ones any setting cuts most.
const exploreMaxClients = 2_000

// exploreData is the explorer's data, columnar (one array per field, one
// entry per setting in point_id order). The replicate means (LC, MP, WC)
// are recommend's, to full precision, so the page chooses as recommend
// does; PX and PY are the report's pooled percentages (frontier.csv),
// present only where they differ from the means.
type exploreData struct {
	Title string `json:"title"`
	Run   string `json:"run"`
	// Explain says ratesweep explain can say why a setting cuts each
	// client (a scenario run; not a replayed log).
	Explain bool      `json:"explain,omitempty"`
	Reps    int       `json:"reps"`
	Algs    []string  `json:"algs"`
	ID      []int64   `json:"id"`
	Alg     []int     `json:"alg"`
	Label   []string  `json:"label"` // without the algorithm's name
	LC      []float64 `json:"lc"`    // legit_cut_pct, mean over replicates
	MP      []float64 `json:"mp"`    // missed_pct
	WC      []float64 `json:"wc"`    // worst legitimate client's cut %, mean over replicates
	CP      []float64 `json:"cp"`    // caught_pct
	FC      []float64 `json:"fc"`    // false cut, requests (mean)
	MI      []float64 `json:"mi"`    // missed, requests (mean)
	PX      []float64 `json:"px,omitempty"`
	PY      []float64 `json:"py,omitempty"`
	// Intervals (95%, Student's t over replicates; 4 significant digits),
	// lo and hi interleaved per setting, when there are >= 3 replicates.
	LCI []float64 `json:"lci,omitempty"`
	MPI []float64 `json:"mpi,omitempty"`
	WCI []float64 `json:"wci,omitempty"`
	// Clients: names, classes and requests offered (mean over replicates,
	// at the first setting); Cuts: per setting index, pairs of client
	// index and requests cut (mean), clients cut only.
	Clients      []string          `json:"clients"`
	ClientClass  []string          `json:"client_class"`
	ClientOffer  []float64         `json:"client_offered"`
	Cuts         map[int][]float64 `json:"cuts"`
	CutsAll      bool              `json:"cuts_all"`
	CutAt        []int             `json:"cut_at"` // the settings with cuts, when not all
	ClientsShown int               `json:"clients_total"`
	// Exports: per target, per setting index, the text `ratesweep export
	// --to TARGET --run RUN LABEL` prints (the frontier's settings only).
	Targets []string                  `json:"targets"`
	Exports map[string]map[int]string `json:"exports"`
	// Colors are the algorithms' colours on the report's figures (the
	// registry's colour slots); Window marks the window algorithms
	// (window_s and limit).
	Colors []string `json:"colors"`
	Window []bool   `json:"window"`
	// Total is the run's settings; when more than embedded, Choosable of
	// those embedded are every setting some constraints and algorithms
	// shown can choose, the rest an even sample of the others.
	Total     int `json:"total"`
	Choosable int `json:"choosable"`
	// PeakWin are window lengths, s, and Peaks[w][k] the most requests
	// client k offers in any PeakWin[w] seconds (whole seconds, rounded
	// up), from the scenario's rates; none for a replayed log.
	PeakWin []float64   `json:"peak_windows,omitempty"`
	Peaks   [][]float64 `json:"peaks,omitempty"`

	// TR is each setting's tie rank: the choice rule's keys after the two
	// metrics (delay mean, p99, optional parameters set, grid edges) as a
	// dense rank, 0 the preferred; settings of equal rank go by point_id
	// (their order here).
	TR []int `json:"tr"`

	// Further metrics, one entry per setting, present only when the run
	// has them (means over replicates):
	//  - DM, DP: the delay nginx adds to the requests it admits, mean and
	//    99th percentile, s (runs with an algorithm that delays);
	//  - AM: legitimate attempts per intended request, retries included,
	//    and RD: the 99th percentile of the latency retries add to
	//    legitimate requests eventually served, s (runs whose clients
	//    react; recommend's means, compared by --max-amplification and
	//    --max-legit-delay-p99);
	//  - CU: cost units of legitimate requests cut, and CUP: as % of the
	//    legitimate cost offered (runs whose requests carry costs;
	//    recommend's means, compared by --max-false-cut-cost);
	//  - BS: seconds legitimate clients spent blocked by a penalty box,
	//    summed over them (recommend's mean, compared by
	//    --max-legit-blocked-s), and BN: blocks started (runs with block_s).
	// Defaults[a] are algorithm Algs[a]'s optional numeric parameters that
	// some of its labels give, with the value a label without them means
	// (a grid step to or from it is a neighbour, as recommend lists them).
	Defaults []map[string]float64 `json:"defaults,omitempty"`
	DM       []float64            `json:"dm,omitempty"`
	DP       []float64            `json:"dp,omitempty"`
	AM       []float64            `json:"am,omitempty"`
	RD       []float64            `json:"rd,omitempty"`
	CU       []float64            `json:"cu,omitempty"`
	CUP      []float64            `json:"cup,omitempty"`
	BS       []float64            `json:"bs,omitempty"`
	BN       []float64            `json:"bn,omitempty"`
}

// writeExplore writes explore.html for the run into w.
func (r *Run) writeExplore(ctx context.Context, w *bytes.Buffer) error {
	d, err := r.exploreData(ctx, exploreMaxSettings)
	if err != nil {
		return fmt.Errorf("explore.html: %w", err)
	}
	js, err := json.Marshal(d)
	if err != nil {
		return err
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.DefaultCompression)
	zw.Write(js)
	if err := zw.Close(); err != nil {
		return err
	}
	t, err := template.New("explore").Parse(exploreHTML)
	if err != nil {
		return err
	}
	return t.Execute(w, map[string]any{
		"Title":      r.title(),
		"Incomplete": r.Incomplete,
		"Settings":   len(d.ID),
		"CSS":        template.CSS(exploreCSS),
		"JS":         template.JS(exploreJS),
		"Data":       template.HTML(base64.StdEncoding.EncodeToString(z.Bytes())), // [A-Za-z0-9+/=] only
	})
}

// exploreData reads the run as recommend does (replicate means, the worst
// client per replicate) and adds the report's frontier, the clients and
// the exports of the frontier settings. A run of more than limit settings
// is sampled (exploreKeep).
func (r *Run) exploreData(ctx context.Context, limit int) (*exploreData, error) {
	run, err := r.recommendRun(ctx) // read once for the report's card and this page
	if err != nil {
		return nil, err
	}
	ms := make([]*recommend.Measure, 0, len(run.Labels))
	labels := map[int64]string{}
	for _, l := range run.Labels {
		m := run.Measures[l]
		ms = append(ms, m)
		labels[m.PointID] = l
	}
	slices.SortFunc(ms, func(a, b *recommend.Measure) int { return cmp.Compare(a.PointID, b.PointID) })
	d := &exploreData{Title: r.title(), Run: r.Dir, Cuts: map[int][]float64{}, Exports: map[string]map[int]string{}, Total: len(ms)}
	d.Explain = r.Spec.Scenario != nil
	algIdx := map[string]int{}
	all := make(map[int64]int, len(ms))
	reps := 0
	intervals := true
	px, py := make([]float64, len(ms)), make([]float64, len(ms))
	var am, rd, cu, cup, bs []float64
	blocking := false
	for i, m := range ms {
		l := labels[m.PointID]
		alg, rest, _ := strings.Cut(l, " ")
		k, ok := algIdx[alg]
		if !ok {
			k = len(d.Algs)
			algIdx[alg] = k
			d.Algs = append(d.Algs, alg)
			d.Colors = append(d.Colors, exploreColor(alg))
			a, _ := model.ParseAlgorithm(alg)
			d.Window = append(d.Window, a.Describe() != nil && a.Describe().Family == model.WindowFamily)
		}
		all[m.PointID] = i
		n := m.LegitCutPct.N
		reps = max(reps, n)
		d.ID = append(d.ID, m.PointID)
		d.Alg = append(d.Alg, k)
		d.Label = append(d.Label, rest)
		d.LC = append(d.LC, m.LegitCutPct.Mean)
		d.MP = append(d.MP, m.MissedPct.Mean)
		d.WC = append(d.WC, m.WorstClientPct)
		// Shown, not compared: 6 significant digits.
		d.CP = append(d.CP, roundSig(m.CaughtPct.Mean, 6))
		d.FC = append(d.FC, roundSig(m.FalseCut.Mean, 6))
		d.MI = append(d.MI, roundSig(m.Missed.Mean, 6))
		if m.AmplificationLegit != nil && m.LegitDelayP99S != nil {
			am = append(am, m.AmplificationLegit.Mean)
			rd = append(rd, m.LegitDelayP99S.Mean)
		}
		if m.FalseCutCost != nil && m.LegitCutCostPct != nil {
			cu = append(cu, m.FalseCutCost.Mean)
			cup = append(cup, m.LegitCutCostPct.Mean)
		}
		bs = append(bs, m.LegitBlockedS.Mean)
		blocking = blocking || strings.Contains(" "+rest, " block_s=")
		intervals = intervals && m.LegitCutPct.HasInterval()
		if intervals {
			d.LCI = append(d.LCI, sig4(m.LegitCutPct.Lo), sig4(m.LegitCutPct.Hi))
			d.MPI = append(d.MPI, sig4(m.MissedPct.Lo), sig4(m.MissedPct.Hi))
			d.WCI = append(d.WCI, sig4(m.WorstClientPctI.Lo), sig4(m.WorstClientPctI.Hi))
		}
		// The report's pooled percentages: sums over replicates.
		nf := float64(max(n, 1))
		px[i] = pct(int64(math.Round(m.FalseCut.Mean*nf)), int64(math.Round(m.OfferedLegit*nf)))
		py[i] = pct(int64(math.Round(m.Missed.Mean*nf)), int64(math.Round(m.OfferedAbusive*nf)))
	}
	d.Reps = reps
	if !intervals {
		d.LCI, d.MPI, d.WCI = nil, nil, nil
	}
	d.addDefaults()
	if len(am) == len(ms) {
		d.AM, d.RD = am, rd
	}
	if len(cu) == len(ms) {
		d.CU, d.CUP = cu, cup
	}
	shapes := false
	for _, a := range d.Algs {
		al, _ := model.ParseAlgorithm(a)
		shapes = shapes || shaping(al)
	}
	if blocking {
		d.BS = bs
	}
	if shapes || blocking {
		if err := d.addTails(ctx, r.Dir, all, shapes, blocking); err != nil {
			return nil, err
		}
	}
	// The settings that carry an export: the frontier's (export reads the
	// whole run for each, so not every setting's); those that carry their
	// clients' cuts in a large run and are always kept: each algorithm's
	// frontier too.
	must := make([]bool, len(ms))
	for _, q := range r.Frontier.Points() {
		if i, ok := all[q.ID]; ok {
			must[i] = true
		}
	}
	for _, a := range r.Algos {
		for _, q := range a.Frontier.Points() {
			if i, ok := all[q.ID]; ok {
				must[i] = true
			}
		}
	}
	keep, chosen := exploreKeep(d.Alg, d.Label, d.LC, d.MP, d.WC, must, limit)
	d.Choosable = chosen
	d.keep(keep)
	d.TR = tieRanks(r.Spec, d.ID, labels, func(id int64) *recommend.Measure { return ms[all[id]] })
	px, py = pickAt(px, keep), pickAt(py, keep)
	for i := range px {
		if px[i] != d.LC[i] || py[i] != d.MP[i] {
			d.PX, d.PY = px, py
			break
		}
	}
	index := make(map[int64]int, len(keep))
	for i, id := range d.ID {
		index[id] = i
	}
	var withExport []int
	seen := map[int]bool{}
	for _, q := range r.Frontier.Points() {
		i := index[q.ID]
		seen[i] = true
		withExport = append(withExport, i)
	}
	if d.Total > limit && len(withExport) > exploreMaxExports {
		// export reads the whole run for each setting and target: in a
		// sampled run, the frontier's ends and settings spread along it.
		spread := make([]int, exploreMaxExports)
		for k := range spread {
			spread[k] = withExport[k*(len(withExport)-1)/(exploreMaxExports-1)]
		}
		withExport = spread
	}
	slices.Sort(withExport)
	for _, a := range r.Algos {
		for _, q := range a.Frontier.Points() {
			seen[index[q.ID]] = true
		}
	}
	if err := d.addClients(ctx, r.Dir, index, seen); err != nil {
		return nil, err
	}
	d.addPeaks(r.Spec.Scenario, seen)
	pts, err := r.exportRun(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.addExports(r.Dir, pts, withExport, labels); err != nil {
		return nil, err
	}
	return d, nil
}

// exploreColor is algorithm alg's colour on the report's figures, as CSS.
func exploreColor(alg string) string {
	a, _ := model.ParseAlgorithm(alg)
	c := algoColor(a)
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

// keep drops every setting but those at keep (ascending indices).
func (d *exploreData) keep(keep []int) {
	if len(keep) == len(d.ID) {
		return
	}
	d.ID, d.Alg, d.Label = pickAt(d.ID, keep), pickAt(d.Alg, keep), pickAt(d.Label, keep)
	d.LC, d.MP, d.WC = pickAt(d.LC, keep), pickAt(d.MP, keep), pickAt(d.WC, keep)
	d.CP, d.FC, d.MI = pickAt(d.CP, keep), pickAt(d.FC, keep), pickAt(d.MI, keep)
	for _, v := range []*[]float64{&d.DM, &d.DP, &d.AM, &d.RD, &d.CU, &d.CUP, &d.BS, &d.BN} {
		if *v != nil {
			*v = pickAt(*v, keep)
		}
	}
	pairs := func(v []float64) []float64 {
		if v == nil {
			return nil
		}
		out := make([]float64, 0, 2*len(keep))
		for _, i := range keep {
			out = append(out, v[2*i], v[2*i+1])
		}
		return out
	}
	d.LCI, d.MPI, d.WCI = pairs(d.LCI), pairs(d.MPI), pairs(d.WCI)
}

// pickAt returns v's elements at the indices at.
func pickAt[T any](v []T, at []int) []T {
	out := make([]T, len(at))
	for k, i := range at {
		out[k] = v[i]
	}
	return out
}

// sig4 rounds v to 4 significant digits (an interval's bounds, shown, not
// compared).
func sig4(v float64) float64 { return roundSig(v, 4) }

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	return f
}

// putExplore writes explore.html through put (Write's writer). A run
// reported incomplete whose parts recommend cannot read gets no explorer,
// and a warning says so.
func (r *Run) putExplore(put func(name string, data []byte) error) error {
	var b bytes.Buffer
	if err := r.writeExplore(context.Background(), &b); err != nil {
		if r.Incomplete != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("explore.html not written (the run is incomplete): %v", err))
			return nil
		}
		return err
	}
	return put("explore.html", b.Bytes())
}
