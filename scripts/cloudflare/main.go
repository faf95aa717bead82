// Command cloudflare measures, on the three real access logs, how often a
// sliding window counter decides a request differently from an exact
// sliding window, the figure Cloudflare published (0.003% of 400 million
// requests, "Counting things, a lot of different things", 2017), and
// writes docs/cloudflare.md (tables) and docs/cloudflare.png (the curves).
//
//	go run ./scripts/cloudflare -out docs     (make cloudflare)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
)

// logSpec is one real log, read as its example spec reads it (key: ip).
type logSpec struct{ name, spec string }

var logs = []logSpec{
	{"nasa", "nasa-ksc.yaml"},
	{"antlr", "antlr-org.yaml"},
	{"elastic", "elastic-apache.yaml"},
}

// realisation is one placement of the logs' one-second times inside their
// second.
type realisation struct {
	name   string
	spread ingest.Spread
	seed   uint64
}

var realisations = []realisation{
	{"even", ingest.SpreadEven, 0},
	{"random 1", ingest.SpreadRandom, 1}, {"random 2", ingest.SpreadRandom, 2}, {"random 3", ingest.SpreadRandom, 3},
	{"random 4", ingest.SpreadRandom, 4}, {"random 5", ingest.SpreadRandom, 5},
}

var (
	windows       = []int64{10, 60, 300} // seconds
	maxLimit      = 300
	tableLimits   = []int{2, 5, 10, 20, 50, 100}
	limiterLimits = []int{1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300}
)

// loaded is one log's traffic.
type loaded struct {
	logSpec
	tr *ingest.Traffic
}

// result is every measure of one log, window and realisation.
type result struct {
	count *counting
	// limiters[i]: sliding_counter vs sliding_window at limiterLimits[i].
	allowed, limited []int64
}

func main() {
	out := flag.String("out", "docs", "directory for cloudflare.md and cloudflare.png")
	examples := flag.String("examples", "configs/examples", "directory of the example specs (their logs)")
	flag.Parse()
	if err := run(*examples, *out); err != nil {
		fmt.Fprintln(os.Stderr, "cloudflare:", err)
		os.Exit(1)
	}
}

func run(examples, out string) error {
	var ls []loaded
	for _, l := range logs {
		cfg, err := ingest.LoadConfig(filepath.Join(examples, l.spec))
		if err != nil {
			return err
		}
		tr, err := ingest.Load(context.Background(), cfg.Log, cfg.Options)
		if err != nil {
			return err
		}
		ls = append(ls, loaded{l, tr})
	}
	res := measure(ls)
	if err := os.WriteFile(filepath.Join(out, "cloudflare.md"), []byte(markdown(ls, res)), 0o644); err != nil {
		return err
	}
	return plotCurves(filepath.Join(out, "cloudflare.png"), ls, res)
}

// measure returns res[log][window][realisation].
func measure(ls []loaded) [][][]result {
	res := make([][][]result, len(ls))
	for i, l := range ls {
		res[i] = make([][]result, len(windows))
		origin := l.tr.StartUnix * 1e9
		for j, w := range windows {
			res[i][j] = make([]result, len(realisations))
			for k, r := range realisations {
				times := l.tr.Realise(r.spread, r.seed, 0, nil)
				c := newCounting(maxLimit)
				for _, ts := range times {
					c.add(ts, origin, w*1e9)
				}
				c.finish()
				rr := result{count: c}
				if w == 60 {
					for _, lim := range limiterLimits {
						counter := model.Policy{Algorithm: model.SlidingCounter, WindowS: int(w), Limit: int64(lim)}
						exact := model.Policy{Algorithm: model.SlidingWindow, WindowS: int(w), Limit: int64(lim)}
						var a, b int64
						for _, ts := range times {
							x, y := differ(counter, exact, ts, origin)
							a, b = a+x, b+y
						}
						rr.allowed, rr.limited = append(rr.allowed, a), append(rr.limited, b)
					}
				}
				res[i][j][k] = rr
			}
		}
	}
	return res
}
