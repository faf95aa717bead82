package report

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ratesweep/ratesweep/model"
	"github.com/ratesweep/ratesweep/sweep"
)

// manyClientsSpec has n clients (one in five abusive) and three replicates
// of Poisson arrivals, so that the replicates differ.
func manyClientsSpec(n int) string {
	var b strings.Builder
	b.WriteString("name: many\nreplicates: 3\nseed: 7\nscenario:\n  name: many\n  duration_s: 60\n  arrivals: poisson\n  clients:\n")
	for i := range n {
		if i%5 == 4 {
			fmt.Fprintf(&b, "    - {name: bot-%d, class: abusive, stage: code, segments: [[%d, 60, %d]]}\n", i, i%20, 4+i%9)
		} else {
			fmt.Fprintf(&b, "    - {name: user-%d, class: legit, segments: [[0, %d, %d], [%d, %d, %d], [%d, 60, 1]]}\n", i, 1+i%40, 1+i%3, 1+i%40, i%40+6, 5+i%7, i%40+6)
		}
	}
	b.WriteString("sweep:\n  - algorithm: fixed_window\n    window_s: [10]\n    limit: [20, 40, 80]\n  - algorithm: token_bucket\n    rate: [2]\n    capacity: [10, 40]\n")
	return b.String()
}

// The explorer's clients and cuts, read streaming, are the means over
// replicates of the clients rows as sweep.ReadClients reads them whole.
func TestExploreClientCutsAreRowMeans(t *testing.T) {
	dir := runSpec(t, manyClientsSpec(60))
	_, d := explorePage(t, dir)
	rows, err := sweep.ReadClients(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	setting := map[int64]int{}
	for i, id := range d.ID {
		setting[id] = i
	}
	client := map[string]int{}
	for k, name := range d.Clients {
		client[name] = k
	}
	want := map[int]map[int]float64{}
	offered := make([]float64, len(d.Clients))
	reps := map[int32]bool{}
	for _, r := range rows {
		reps[r.Replicate] = true
		k, ok := client[r.Client]
		if !ok {
			t.Fatalf("client %q of the rows is not on the page", r.Client)
		}
		if r.PointID == rows[0].PointID {
			offered[k] += float64(r.Offered)
		}
		i := setting[r.PointID]
		if want[i] == nil {
			want[i] = map[int]float64{}
		}
		want[i][k] += float64(r.Cut)
	}
	if len(reps) != 3 || d.Reps != 3 {
		t.Fatalf("replicates: rows %d, page %d; want 3", len(reps), d.Reps)
	}
	for k := range offered {
		if got := d.ClientOffer[k]; math.Abs(got-offered[k]/3) > 1e-9 {
			t.Errorf("client %s offered %g, rows say %g", d.Clients[k], got, offered[k]/3)
		}
	}
	cut := 0
	for i := range d.ID {
		got := map[int]float64{}
		pairs := d.Cuts[i]
		for j := 0; j < len(pairs); j += 2 {
			if j > 0 && pairs[j] <= pairs[j-2] {
				t.Errorf("setting %d: clients not in order: %v", i, pairs)
			}
			got[int(pairs[j])] = pairs[j+1]
		}
		for k, c := range want[i] {
			if c == 0 {
				continue
			}
			cut++
			if math.Abs(got[k]-c/3) > 1e-9 {
				t.Errorf("setting %d client %s: cut %g, rows say %g", i, d.Clients[k], got[k], c/3)
			}
			delete(got, k)
		}
		if len(got) > 0 {
			t.Errorf("setting %d: cuts %v of clients the rows do not cut", i, got)
		}
	}
	if cut == 0 {
		t.Fatal("no client is cut anywhere: the test tests nothing")
	}
}

// A selected point's per-client figure draws the 40 clients cut most, in
// scenario order, and sums the others in its caption.
func TestClientsFigureKeepsMostCut(t *testing.T) {
	dir := runSpec(t, manyClientsSpec(100))
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Selected {
		if len(s.Clients) != 100 {
			t.Fatalf("%v: %d clients read, want 100", s.Policy, len(s.Clients))
		}
		f := r.ClientsFigure(&s)
		if !strings.Contains(f.Caption, "Only the 40 clients with the most requests cut are shown (of 100)") {
			t.Fatalf("%v: caption %q", s.Policy, f.Caption)
		}
		if f.H > 20*72 { // inches to points: 1.9 + 0.42 × 40 ≈ 18.7 in
			t.Errorf("%v: figure %v tall", s.Policy, f.H)
		}
		shown, _ := barClients(s.Clients)
		// Independently: the 40th largest cut bounds the shown and the rest.
		cuts := make([]float64, len(s.Clients))
		var legitOff, legitCut float64
		var legitOthers int
		for k, c := range s.Clients {
			cuts[k] = c.Cut
		}
		slices.Sort(cuts)
		slices.Reverse(cuts)
		bound := cuts[39]
		names := map[string]bool{}
		for k, c := range shown {
			names[c.Name] = true
			if c.Cut < bound {
				t.Errorf("%v: %s shown with cut %g below the 40th largest %g", s.Policy, c.Name, c.Cut, bound)
			}
			if k > 0 && slices.IndexFunc(s.Clients, func(x ClientStat) bool { return x.Name == c.Name }) <
				slices.IndexFunc(s.Clients, func(x ClientStat) bool { return x.Name == shown[k-1].Name }) {
				t.Errorf("%v: shown out of scenario order at %s", s.Policy, c.Name)
			}
		}
		for _, c := range s.Clients {
			if names[c.Name] {
				continue
			}
			if c.Cut > bound {
				t.Errorf("%v: %s left out with cut %g above %g", s.Policy, c.Name, c.Cut, bound)
			}
			if c.Class == model.Legit {
				legitOthers++
				legitOff += c.Offered
				legitCut += c.Cut
			}
		}
		if w := fmt.Sprintf("the other %d legitimate clients together offered %s requests, %s cut", legitOthers,
			fmtNum(math.Round(legitOff)), fmtNum(math.Round(legitCut))); legitOthers > 0 && !strings.Contains(f.Caption, w) {
			t.Errorf("%v: caption %q lacks %q", s.Policy, f.Caption, w)
		}
	}
}

// The report's lesson Table 1 lists the 40 clients cut most under any
// shape, of the full table that `ratesweep tables` prints.
func TestLessonTableKeepsMostCut(t *testing.T) {
	dir := runSpec(t, manyClientsSpec(100))
	r, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tables, err := r.lessonTables()
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.NewWorkload(r.Spec.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	full := LessonTables(model.ComputeLesson(w))[0]
	got := tables[0]
	if len(full.Rows) != 100 || len(got.Rows) != 40 || !strings.HasPrefix(got.Note, "Only the 40 clients") {
		t.Fatalf("rows %d of %d, note %q", len(got.Rows), len(full.Rows), got.Note)
	}
	most := func(row []string) float64 {
		m := 0.0
		for _, c := range row[3:6] {
			var v float64
			fmt.Sscan(c, &v)
			m = max(m, v)
		}
		return m
	}
	var all []float64
	for _, row := range full.Rows {
		all = append(all, most(row))
	}
	slices.Sort(all)
	bound := all[len(all)-40]
	if all[len(all)-1] == 0 {
		t.Fatal("no client cut: the test tests nothing")
	}
	j := 0
	for _, row := range full.Rows {
		if j < len(got.Rows) && slices.Equal(row, got.Rows[j]) {
			j++
			if most(row) < bound {
				t.Errorf("row %v listed below the 40th largest cut %g", row, bound)
			}
		} else if most(row) > bound {
			t.Errorf("row %v left out above the 40th largest cut %g", row, bound)
		}
	}
	if j != len(got.Rows) {
		t.Errorf("the rows listed are not the full table's, in order")
	}
}
