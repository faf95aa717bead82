// Package ingest reads real HTTP access logs (Apache/Nginx Common and Combined
// Log Format, the NASA TSV, CSV, JSON lines with field paths and presets for
// Envoy, Caddy, Traefik, Cloudflare and Google Cloud load balancers, AWS ALB,
// W3C extended, envoy's text log, HAProxy's HTTP log, nginx by any
// log_format; plain, gzip, zstd, bzip2 or xz, a rotated set of files or
// standard input; Parquet) as streams of requests, keys
// them for a rate limiter, labels them with rules, and compiles them into a
// compact in-memory Traffic: per-key request times and labels, per-key
// aggregates, realisations with request times in nanoseconds, and a per-second
// fluid model.Scenario.
//
// Readers stream: memory does not grow with the log, only the compiled
// Traffic does (9 bytes per request plus the keys; 13 with the key ids while
// it is being built, in place). Times are parsed exactly, to the nanosecond. Lines are parsed by hand over []byte, without regular
// expressions and without allocating per line.
//
// # Pipeline
//
//	cfg, _ := ingest.LoadConfig("spec.yaml")          // the spec's traffic: section
//	tr, _ := ingest.Load(ctx, cfg.Log, cfg.Options)    // read, key, label, compile
//	rows := tr.Rows(cfg.TopKeys)                       // clients rows: top keys + "other keys"
//
// Event simulation (one Decider per policy, request by request):
//
//	times := tr.Realise(cfg.Spread, seed, replicate, nil) // [key][]ns since tr.StartUnix, sorted
//	decider, _ := model.NewDeciderAt(p, cfg.WindowOrigin.OriginNs(tr)) // windows on the epoch
//	var out ingest.Replay
//	tr.Replay(times, decider, &out)                    // out.Metrics: per request label
//	clients := rows.Aggregate(out.Totals(nil), nil)    // one result per clients row
//
// Fluid simulation with today's per-second kernels (bounded by
// MaxScenarioCells):
//
//	sc, _ := tr.Scenario(name)                         // one client per key, t.Keys order
//	w, _ := model.NewWorkload(sc)                      // then Simulator.Run as for any scenario
//
// Labels are per request (model.Stage, NoStage = legit). A key's Class and
// Stage are those of most of its requests; Replay counts every request under
// its own label, the fluid scenario relabels mixed keys whole.
package ingest
