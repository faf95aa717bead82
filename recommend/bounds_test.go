package recommend

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/sweep"
)

// Fewer than three values give no interval; the interval never leaves the
// metric's range.
func TestIntervalSmallSamplesAndRange(t *testing.T) {
	if v := pctInterval([]float64{66.86, 0.5}); v.HasInterval() || v.Lo != v.Mean || v.Hi != v.Mean || v.N != 2 {
		t.Errorf("two values: %+v", v)
	}
	v := pctInterval([]float64{0, 0, 3})
	if !v.HasInterval() || v.Lo != 0 || v.Hi > 100 || math.Abs(v.Mean-1) > 1e-12 {
		t.Errorf("clamped low: %+v", v)
	}
	if v := pctInterval([]float64{100, 100, 97}); v.Hi != 100 || v.Lo >= 99 {
		t.Errorf("clamped high: %+v", v)
	}
	if v := interval([]float64{0, 0, 30}); v.Lo != 0 {
		t.Errorf("a count below zero: %+v", v)
	}
	if got := pctCI(pctInterval([]float64{0, 0, 3})); got != "1.00% [0.00, 5.30]" {
		t.Errorf("asymmetric interval printed %q", got)
	}
}

// The bound on any one client is checked per replicate: the worst client
// of each replicate, whoever it is, with an interval over replicates.
func TestWorstClientPerReplicate(t *testing.T) {
	pc := newClientAcc()
	row := func(rep int32, client string, offered, cut int64) {
		pc.add(&sweep.ClientRow{Replicate: rep, Client: client, Class: "legit", Offered: offered, Cut: cut})
	}
	// A is cut 3% in replicates 0-2, B 3% in replicates 3-4: on average
	// neither client loses more than 1.8%, yet some client loses 3% in
	// every replicate.
	for rep := int32(0); rep < 5; rep++ {
		a, b := int64(0), int64(0)
		if rep < 3 {
			a = 3
		} else {
			b = 3
		}
		row(rep, "A", 100, a)
		row(rep, "B", 100, b)
	}
	var m Measure
	pc.fill(&m, 5, true)
	if m.WorstClientPct != 3 || m.WorstClientPctI.N != 5 || len(m.Clients) != 2 || m.Clients[0].Pct != 1.8 {
		t.Fatalf("worst client %v %+v, clients %+v", m.WorstClientPct, m.WorstClientPctI, m.Clients)
	}
	o := Options{MaxClientCut: bound("2%")}
	if cs := o.checks(&m); feasible(cs) {
		t.Errorf("3%% in every replicate meets a 2%% bound: %+v", cs)
	}
	// One client cut 3% in 3 of 5 replicates: the mean meets 2% but its
	// interval crosses it, as a total's would.
	pc = newClientAcc()
	for rep := int32(0); rep < 5; rep++ {
		cut := int64(0)
		if rep%2 == 0 {
			cut = 3
		}
		row(rep, "A", 100, cut)
	}
	m = Measure{}
	pc.fill(&m, 5, true)
	cs := o.checks(&m)
	if !feasible(cs) || !cs[0].Crosses || math.Abs(cs[0].Value-1.8) > 1e-9 {
		t.Errorf("3 of 5 replicates: %+v", cs)
	}
	var out bytes.Buffer
	Write(&out, &Result{Objective: "missed_pct", Overall: &Choice{Label: "x", Runs: []RunFit{{Dir: "r", Measure: &m, Checks: cs}}}}, "text")
	if !strings.Contains(out.String(), "met, margin +0.20 pp (the 95% interval crosses the bound)") {
		t.Errorf("text:\n%s", out.String())
	}
	// Replicates without rows cut nobody.
	pc = newClientAcc()
	row(1, "A", 100, 4)
	m = Measure{}
	pc.fill(&m, 4, false)
	if m.WorstClientPct != 1 || m.WorstClientPctI.N != 4 {
		t.Errorf("padded replicates: %+v", m.WorstClientPctI)
	}
}

// A minimum on caught, as a count, weighs its shortfall against the
// bound: the nearest miss is the policy closest to meeting the constraints.
func TestNearestMissWithCaughtCount(t *testing.T) {
	ms := map[string]*Measure{
		"token_bucket rate=1 capacity=10": mk(2, 94, 0), // caught 60 of 100 wanted, 1 pp over on false cut
		"token_bucket rate=1 capacity=20": mk(0, 96, 0), // caught 40, false cut met
	}
	r := run("a", ms, "token_bucket rate=1 capacity=10", "token_bucket rate=1 capacity=20")
	res, err := Recommend([]*Run{r}, Options{MaxFalseCut: bound("1%"), MinCaught: bound("100")})
	if err != nil {
		t.Fatal(err)
	}
	// capacity=10: 1 pp + 40/100 = 1.4; capacity=20: 60/100 = 0.6.
	if res.NearestMiss == nil || res.NearestMiss.Label != "token_bucket rate=1 capacity=20" {
		t.Fatalf("nearest miss %+v", res.NearestMiss)
	}
	if v := violation(o2checks(Options{MinCaught: bound("100")}, ms["token_bucket rate=1 capacity=10"])); math.Abs(v-0.4) > 1e-9 {
		t.Errorf("violation %v, want 0.4", v)
	}
}

func o2checks(o Options, m *Measure) []Check { return o.checks(m) }

func TestCliffMustBePositive(t *testing.T) {
	for _, c := range []float64{-3, math.NaN(), math.Inf(1)} {
		o := Options{MaxFalseCut: bound("1%"), CliffPP: c}
		if err := o.prepare(); err == nil {
			t.Errorf("cliff %v accepted (now %v)", c, o.CliffPP)
		}
	}
	o := Options{MaxFalseCut: bound("1%")}
	if err := o.prepare(); err != nil || o.CliffPP != 5 {
		t.Errorf("default: %v %v", err, o.CliffPP)
	}
}

// What the user must know first: no abusive traffic at all, a choice that
// catches nothing, and why an algorithm has no choice.
func TestNotesComeFirst(t *testing.T) {
	benign := func(lc float64) *Measure {
		m := mk(lc, 0, 0)
		m.OfferedAbusive, m.Missed, m.Caught, m.MissedPct, m.CaughtPct = 0, Interval{}, Interval{}, Interval{}, Interval{}
		return m
	}
	r := run("quiet", map[string]*Measure{"token_bucket rate=1 capacity=10": benign(3), "token_bucket rate=1 capacity=20": benign(0)},
		"token_bucket rate=1 capacity=10", "token_bucket rate=1 capacity=20")
	res, _ := Recommend([]*Run{r}, Options{MaxFalseCut: bound("1%")})
	if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "no request of quiet is labelled abusive") {
		t.Errorf("no abusive traffic: %q", res.Notes)
	}
	// Every policy that meets the bound misses all abuse.
	ms := map[string]*Measure{
		"token_bucket rate=1 capacity=10":     mk(5, 0, 0),
		"token_bucket rate=1 capacity=20":     mk(0, 100, 0),
		"sliding_window window_s=60 limit=10": mk(4, 10, 0),
		"sliding_window window_s=60 limit=20": mk(2, 20, 0),
	}
	r = run("a", ms, "token_bucket rate=1 capacity=10", "token_bucket rate=1 capacity=20",
		"sliding_window window_s=60 limit=10", "sliding_window window_s=60 limit=20")
	res, _ = Recommend([]*Run{r}, Options{MaxFalseCut: bound("1%")})
	if res.Overall == nil || len(res.Notes) != 2 || !strings.HasPrefix(res.Notes[0], "the choice token_bucket rate=1 capacity=20 catches no abusive request") {
		t.Fatalf("catches nothing: %+v %q", res.Overall, res.Notes)
	}
	want := "sliding_window: none of its 2 settings meets the constraints; the nearest, sliding_window window_s=60 limit=20, misses false cut <= 1% (at 2%)"
	if res.Notes[1] != want {
		t.Errorf("drop-out note\n got %q\nwant %q", res.Notes[1], want)
	}
	var out bytes.Buffer
	Write(&out, res, "text")
	if !strings.Contains(out.String(), "note: "+want) {
		t.Errorf("text:\n%s", out.String())
	}
}
