package main

// The prose of docs/cloudflare.md around the generated tables. The figures
// quoted here are checked against the tables by hand when they are
// regenerated (make cloudflare); the tables themselves are always current.

const docHead = `# Sliding window counter vs exact sliding window on real logs

Cloudflare reported (blog, 2017, "Counting things, a lot of different things",
https://blog.cloudflare.com/counting-things-a-lot-of-different-things/) that its
sliding window counter, compared with an exact sliding window, wrongly allowed or limited
**0.003%** of 400 million requests from 270,000 sources. This page measures the same kind
of disagreement on the three real logs of ` + "`configs/examples/logs/`" + ` (public logs; each directory's SOURCE.txt says where from), key = client address, per request. Regenerate it with
` + "`make cloudflare`" + ` (` + "`go run ./scripts/cloudflare -out docs`" + `, about 2 s;
source: ` + "`scripts/cloudflare/`" + `, checked by ` + "`go test ./scripts/cloudflare`" + `).

![percent of requests decided differently against the limit, 60 s window](cloudflare.png)

Two measures, window 60 s unless said, counter windows on the Unix epoch (as Cloudflare's):

- **Cloudflare's measure** (left plot, first two tables): at each request, is the counter's
  estimate ` + "`floor(prev·(60 − elapsed)/60) + curr`" + ` on the same side of the limit as
  the exact count of the requests in the last 60 s? Both count every request, so the
  decision does not feed back into the counts, as in Cloudflare's comparison of an
  estimated rate with the real one.
- **As limiters** (right plot, last table): ratesweep's ` + "`sliding_counter`" + `
  (RussellLuo/slidingwindow) against ` + "`sliding_window`" + ` (the exact log), each
  counting the requests it admitted, replayed as ` + "`ratesweep run`" + ` replays a log.

The logs' times have one-second resolution; ` + "`spread even`" + ` puts a second's
requests evenly inside it, ` + "`spread random`" + ` at random (5 seeds).

## Where and why it differs from 0.003%

- **Where the limit bites, the counter is often wrong.** Pooled over the three logs at
  60 s, the counter decides 2.9–12% of the requests the exact log rejects differently
  (limits 2–100, table "pooled"); nasa alone up to 36% at 10 per minute. As a fraction of
  *all* requests that is 0.07–3.6%, 20 to 1,200 times Cloudflare's figure.
- **The denominator decides the headline.** Cloudflare's 0.003% is over every request of
  270,000 sources, almost all far below any threshold, where both methods admit and cannot
  disagree. Here the limits are chosen to bite: at 2–20 requests per minute the exact log
  rejects 5–63% of the requests. Where few requests come near the limit the fraction falls
  to Cloudflare's order: nasa at 20 per minute (0.17% of its requests over the limit)
  differs on 0.05%, at 28 on 0.003% (one request of 30,969), and from 29 on no nasa
  address reaches the limit and the two agree on every request. Cloudflare did not publish
  how many of its requests were over a limit, so its 0.003% cannot be turned into a rate
  per decision to compare with ours.
- **Bursty keys defeat the counter's assumption.** The estimate assumes the previous
  window's requests were spread evenly over it. Requests bunched late in the previous
  minute are all still inside the exact window but weighted down in the estimate (the
  counter wrongly allows: 83% of nasa's disagreements, summed over limits); requests
  bunched early in it have already left the exact window but still weigh in the estimate
  (wrongly limits: 60% of antlr's). antlr's busiest addresses fetch in bursts and keep a
  disagreement of at least 0.39% at every limit up to 300.
- **elastic: 0 at 60 s and 300 s.** Its log is sampled whole clock minutes (83 h of sampled
  minutes, lines shuffled within each minute), so a key's requests lie in one epoch-aligned
  minute: the previous window is empty and the estimate equals the exact count. The counter
  is exact when traffic arrives in isolated windows aligned with its own; with 10 s windows,
  inside the minute, elastic disagrees like the others.
- **The within-second spread hardly matters.** Even and random placements inside the
  second differ by at most 0.11 percentage points at any limit, and the 5 random seeds by
  at most 0.11 points from each other: the counter's error comes from how requests lie
  across the minute, not inside the second.
- **As limiters the disagreement is larger** (right plot): once one decision differs, the
  two limiters count different admitted requests and later decisions part too (nasa 10.5%
  at 2 per minute, antlr about 2.5% at every limit from 20 to 100).
`

const docTail = ``
