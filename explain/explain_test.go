package explain

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// seg is one client's batch: rate requests in each second of [t0, t1).
func seg(t0, t1 int, rate float64) model.Segment { return model.Segment{T0: t0, T1: t1, Rate: rate} }

func client(name string, class model.Class, segs ...model.Segment) model.Client {
	c := model.Client{Name: name, Class: class, Segments: segs}
	if class == model.Abusive {
		c.Stage = model.StageNone
	}
	return c
}

func explainOne(t *testing.T, sc *model.Scenario, label string) *Result {
	t.Helper()
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ParseLabel(label)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explain(w, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func wantCauses(t *testing.T, res *Result, name string, affected int64, want map[Cause]int64) {
	t.Helper()
	for _, c := range res.Clients {
		if c.Name != name {
			continue
		}
		if c.Affected != affected {
			t.Errorf("%s: %s: affected %d, want %d", res.Label, name, c.Affected, affected)
		}
		for k := range NumCauses {
			if c.ByCause[k] != want[k] {
				t.Errorf("%s: %s: %s %d, want %d", res.Label, name, k, c.ByCause[k], want[k])
			}
		}
		return
	}
	t.Fatalf("no client %s", name)
}

// Two offices behind one address, 1 request/s each for 10 s, under 10 per
// 10 s window per address: each second A then B, so the window admits
// seconds 0-4 of both (10) and cuts seconds 5-9 of both. Alone, each sends
// 10 in the window: all admitted. Every cut is the shared key.
func TestSharedKey(t *testing.T) {
	a := client("a", model.Legit, seg(0, 10, 1))
	b := client("b", model.Legit, seg(0, 10, 1))
	a.Keys.AddressPool, b.Keys.AddressPool = "office", "office"
	sc := &model.Scenario{Name: "office", DurationS: 10, Clients: []model.Client{a, b}}
	res := explainOne(t, sc, "fixed_window window_s=10 limit=10 key=address")
	wantCauses(t, res, "a", 5, map[Cause]int64{SharedKey: 5})
	wantCauses(t, res, "b", 5, map[Cause]int64{SharedKey: 5})
}

// sliding_counter window_s=10 limit=10: 10 requests at t=0 (admitted),
// then 5 at t=12. The previous window weighs 10·(1−2/10) = 8, so 2 are
// admitted and 3 cut. A sliding log of 10 per 10 s sees nothing in
// (2 s, 12 s] and admits all 5: the 3 cuts are the window's shape.
func TestWindowShape(t *testing.T) {
	sc := &model.Scenario{Name: "shape", DurationS: 20, Clients: []model.Client{
		client("c", model.Legit, seg(0, 1, 10), seg(12, 13, 5))}}
	res := explainOne(t, sc, "sliding_counter window_s=10 limit=10")
	wantCauses(t, res, "c", 3, map[Cause]int64{WindowShape: 3})
}

// token_bucket rate=1 capacity=5, 8 requests at t=0: 5 admitted, 3 cut.
// The sliding log of window ceil(5/1) = 5 s and limit 5 also cuts 3;
// capacity 10 admits all 8: the 3 cuts are the burst.
func TestBurst(t *testing.T) {
	sc := &model.Scenario{Name: "burst", DurationS: 10, Clients: []model.Client{
		client("c", model.Legit, seg(0, 1, 8))}}
	res := explainOne(t, sc, "token_bucket rate=1 capacity=5")
	if res.Shape.Canonical() != "sliding_log window_s=5 limit=5" {
		t.Errorf("shape %s", res.Shape.Canonical())
	}
	wantCauses(t, res, "c", 3, map[Cause]int64{Burst: 3})
}

// token_bucket rate=1 capacity=5, 3 requests/s for 10 s: the bucket
// admits 3, 3, then 1 a second (5 + 9 = 14 of 30): cuts 2 a second from
// t=2, 16. Capacity 10 admits 3 at t=0-3, 2 at t=4, then 1: of the 16 it
// admits 2 at t=2, 2 at t=3 and 1 at t=4 (burst 5). The sliding log (5
// per 5 s, counting attempts) cuts everything from t=2; the other 11 are
// the sustained rate.
func TestSustainedRate(t *testing.T) {
	sc := &model.Scenario{Name: "rate", DurationS: 10, Clients: []model.Client{
		client("c", model.Legit, seg(0, 10, 3))}}
	res := explainOne(t, sc, "token_bucket rate=1 capacity=5")
	wantCauses(t, res, "c", 16, map[Cause]int64{Burst: 5, SustainedRate: 11})
}

// An abusive client sends 10 at t=9 and 10 at t=10 into fixed_window
// window_s=10 limit=10: two windows, all 20 admitted (missed). A sliding
// log of 10 per 10 s admits the first 10 and cuts the next 10: those are
// missed for the window's shape, the first 10 for the rate itself.
func TestMissedWindowShape(t *testing.T) {
	sc := &model.Scenario{Name: "edge", DurationS: 20, Clients: []model.Client{
		client("bot", model.Abusive, seg(9, 11, 10)),
		client("user", model.Legit, seg(0, 20, 1))}}
	res := explainOne(t, sc, "fixed_window window_s=10 limit=10")
	wantCauses(t, res, "bot", 20, map[Cause]int64{WindowShape: 10, SustainedRate: 10})
}

// Unsupported combinations are refused, not explained wrongly.
func TestRefused(t *testing.T) {
	sc := &model.Scenario{Name: "x", DurationS: 10, Clients: []model.Client{client("c", model.Legit, seg(0, 10, 1))}}
	for _, label := range []string{
		"concurrency limit=5 service_s=1",
		"token_bucket rate=1 capacity=5 block_s=60",
		"token_bucket rate=1 capacity=5 nodes=2",
		"token_bucket rate=1 capacity=5 key=org",
		"token_bucket rate=1 capacity=5 key=both",
		"all_of rejected_counts=all [fixed_window window_s=60 limit=5] [fixed_window window_s=60 limit=10]",
	} {
		p, err := model.ParseLabel(label)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if err := Supported(sc, p); err == nil {
			t.Errorf("%s: supported", label)
		}
	}
}

// The table has a row per client and cause; the Parquet file reads back;
// --vs names who is cut under one policy and not the other.
func TestWrite(t *testing.T) {
	sc := &model.Scenario{Name: "burst", DurationS: 10, Clients: []model.Client{
		client("c|1", model.Legit, seg(0, 1, 8)), client("d", model.Legit, seg(0, 1, 1))}}
	a := explainOne(t, sc, "token_bucket rate=1 capacity=5")
	b := explainOne(t, sc, "token_bucket rate=1 capacity=10")
	rows := Rows(a)
	if len(rows) != 1 || rows[0] != (Row{"token_bucket rate=1 capacity=5", "c|1", "legit", 3, "burst"}) {
		t.Fatalf("rows %+v", rows)
	}
	var buf bytes.Buffer
	if err := WriteParquet(&buf, append(rows, Rows(b)...)); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if rdr.NumRows() != 1 || rdr.MetaData().Schema.NumColumns() != 5 {
		t.Errorf("%d rows, %d columns", rdr.NumRows(), rdr.MetaData().Schema.NumColumns())
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, "Why: burst", "", a, b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Why: burst\n\n## `token_bucket rate=1 capacity=5`",
		"## Under `token_bucket rate=1 capacity=5`, not under `token_bucket rate=1 capacity=10`\n\n| client",
		"| c\\|1 | legit | 8 | 3 cut | 0 | 0 | 3 | 0 |",
		"## Under `token_bucket rate=1 capacity=10`, not under `token_bucket rate=1 capacity=5`\n\nNo client.",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// Clients that retry are refused: a cut request changes what comes next.
func TestRefusedReactions(t *testing.T) {
	sc, err := model.ParseScenario([]byte("name: r\nduration_s: 10\nclients:\n  - name: c\n    class: legit\n    segments: [[0, 10, 2]]\n    on_reject: {retry: immediate, max_retries: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	var ue *UnsupportedError
	if _, err := Explain(w, model.Policy{Algorithm: model.TokenBucket, Rate: 1, Capacity: 5}, 1); !errors.As(err, &ue) {
		t.Errorf("got %v, want an UnsupportedError", err)
	}
}

// Missed, burst: an abusive client sends 10 at t=0 into token_bucket
// rate=1 capacity=10: all admitted. The sliding log of 10 per 10 s admits
// them too; half the capacity (5) cuts the last 5: missed for the burst;
// the first 5 for the rate itself.
func TestMissedBurst(t *testing.T) {
	sc := &model.Scenario{Name: "burst", DurationS: 10, Clients: []model.Client{
		client("bot", model.Abusive, seg(0, 1, 10))}}
	res := explainOne(t, sc, "token_bucket rate=1 capacity=10")
	wantCauses(t, res, "bot", 10, map[Cause]int64{Burst: 5, SustainedRate: 5})
}

// Missed, shared key: a user's request at t=0 opens the address's
// anchored window [0, 10) of 10; the bot behind the same address sends 9
// at t=9 (admitted: 10 in the window) and 10 at t=10 (a new window: all
// admitted). Alone, the bot's window opens at t=9 and holds 10: it cuts 9
// of the 10 at t=10, missed only because the key is shared. The sliding
// log, alone, admits the other 10 (9 at t=9, 1 at t=10): the rate.
func TestMissedSharedKey(t *testing.T) {
	user := client("user", model.Legit, seg(0, 1, 1))
	bot := client("bot", model.Abusive, seg(9, 10, 9), seg(10, 11, 10))
	user.Keys.AddressPool, bot.Keys.AddressPool = "nat", "nat"
	sc := &model.Scenario{Name: "nat", DurationS: 20, Clients: []model.Client{user, bot}}
	res := explainOne(t, sc, "fixed_window_anchored window_s=10 limit=10 key=address")
	wantCauses(t, res, "bot", 19, map[Cause]int64{SharedKey: 9, SustainedRate: 10})
	wantCauses(t, res, "user", 0, nil)
}

// nginx rate=1 burst=4 nodelay: 8 requests at t=0, 5 pass (burst + 1) and
// 3 are cut. The sliding log of ceil(5/1) = 5 s and limit 5 cuts 3 too;
// twice as many at once (burst 9, nodelay kept) admits all 8: burst.
func TestNginxBurst(t *testing.T) {
	sc := &model.Scenario{Name: "nginx", DurationS: 10, Clients: []model.Client{
		client("c", model.Legit, seg(0, 1, 8))}}
	res := explainOne(t, sc, "nginx rate=1 burst=4 delay=4")
	if got := res.Burst.Canonical(); got != "nginx rate=1 burst=9 delay=9" {
		t.Errorf("burst counterfactual %s", got)
	}
	wantCauses(t, res, "c", 3, map[Cause]int64{Burst: 3})
}

// Alone means alone on the client's own keys, not on one key: a bot spread
// round robin over 2 addresses of its own sends 4 a second for 5 s, 10
// per address, all admitted under 10 per 10 s per address. Nobody shares
// its keys, so nothing is missed for a shared key; the sliding log per
// address admits them all too: 20 missed for the rate.
func TestAloneKeepsTheClientsKeys(t *testing.T) {
	bot := client("bot", model.Abusive, seg(0, 5, 4))
	bot.Keys.Addresses = 2
	sc := &model.Scenario{Name: "spread", DurationS: 10, Clients: []model.Client{bot}}
	res := explainOne(t, sc, "fixed_window window_s=10 limit=10 key=address")
	wantCauses(t, res, "bot", 20, map[Cause]int64{SustainedRate: 20})
}

// A summary lists at most MaxClients clients and says how many it leaves out.
func TestSummaryCapped(t *testing.T) {
	var cs []model.Client
	for i := range MaxClients + 3 {
		cs = append(cs, client(fmt.Sprintf("c%02d", i), model.Legit, seg(0, 1, 8+float64(i))))
	}
	res := explainOne(t, &model.Scenario{Name: "many", DurationS: 5, Clients: cs}, "token_bucket rate=1 capacity=5")
	var md strings.Builder
	if err := WriteMarkdown(&md, "many", "", res, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| c27 | legit | 35 | 30 cut |") || strings.Contains(md.String(), "| c02 |") ||
		!strings.Contains(md.String(), "And 3 more clients") {
		t.Errorf("summary:\n%s", md.String())
	}
}
