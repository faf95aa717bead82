// Peer of `make bench`: the lesson's model in plain Node.js, one core, swept
// over a grid of lesson.json. Each client has its own limiter; time advances
// in whole seconds and a second's requests arrive together, as in the lesson:
//   fixed window    the count restarts at every multiple of window_s;
//   sliding window  a second admits up to limit minus what the previous
//                   window_s-1 seconds admitted (summed afresh each second);
//   token bucket    rate tokens are added, up to capacity, before a second's
//                   requests take what is there (the bucket starts full).
// Usage: node bench/peers/lesson_grid.mjs bench|large
// Prints one JSON line: peer, grid, points, seconds, points_per_s and
// checksum, the false cut (legit requests refused) summed over all points.
import { readFileSync } from 'node:fs';

const cfg = JSON.parse(readFileSync(new URL('./lesson.json', import.meta.url), 'utf8'));
const name = process.argv[2] ?? 'bench';
const grid = cfg.grids[name];
if (!grid) {
  console.error(`lesson_grid: unknown grid ${JSON.stringify(name)} (bench, large)`);
  process.exit(2);
}
const span = (v, listed) => {
  if (listed) return v;
  const out = [];
  for (let x = v[0]; x <= v[1]; x++) out.push(x);
  return out;
};
const windows = span(grid.window_s, name === 'bench');
const limits = span(grid.limit), rates = span(grid.rate), capacities = span(grid.capacity);

const T = cfg.duration_s;
const arrivals = (segments) => {
  const a = new Float64Array(T);
  for (const [t0, t1, r] of segments) a.fill(r, t0, t1);
  return a;
};
const legit = cfg.clients.filter((c) => c.class === 'legit').map((c) => arrivals(c.segments));
const offered = legit.map((a) => a.reduce((s, x) => s + x, 0));

function fixedWindow(a, limit, win) {
  let admitted = 0, count = 0;
  for (let t = 0; t < T; t++) {
    if (t % win === 0) count = 0;
    const take = Math.min(a[t], Math.max(0, limit - count));
    count += take;
    admitted += take;
  }
  return admitted;
}

const taken = new Float64Array(T);
function slidingWindow(a, limit, win) {
  let admitted = 0;
  for (let t = 0; t < T; t++) {
    let recent = 0;
    for (let u = Math.max(0, t - win + 1); u < t; u++) recent += taken[u];
    taken[t] = Math.min(a[t], Math.max(0, limit - recent));
    admitted += taken[t];
  }
  return admitted;
}

function tokenBucket(a, rate, capacity) {
  let admitted = 0, tokens = capacity;
  for (let t = 0; t < T; t++) {
    tokens = Math.min(capacity, tokens + rate);
    const take = Math.min(a[t], tokens);
    tokens -= take;
    admitted += take;
  }
  return admitted;
}

// falseCut is the legit requests a policy refuses, over all legit clients.
const falseCut = (admit) => legit.reduce((s, a, i) => s + offered[i] - admit(a), 0);

const start = process.hrtime.bigint();
let points = 0, checksum = 0;
for (const w of windows) {
  for (const l of limits) {
    checksum += falseCut((a) => fixedWindow(a, l, w));
    checksum += falseCut((a) => slidingWindow(a, l, w));
    points += 2;
  }
}
for (const r of rates) {
  for (const c of capacities) {
    checksum += falseCut((a) => tokenBucket(a, r, c));
    points++;
  }
}
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
console.log(JSON.stringify({ peer: 'node', grid: name, points, seconds, points_per_s: points / seconds, checksum }));
