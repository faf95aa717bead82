// Interop test: DuckDB reads a ratesweep run directory of the lesson sweep
// (configs/lesson-sweep.yaml) and a SQL GROUP BY over the per-client rows
// reproduces the lesson's summary table (Table 1).
// With BASE_DIR (the committed baseline of configs/baseline-lesson.yaml, a
// larger grid over the same scenario), the two runs join on the `policy`
// column and agree on every metric of every point they share.
// With COST_DIR (a run of cost-sweep.yaml, whose requests carry costs), the
// cost columns read back and agree with the requests times each client's
// cost, and the lesson run has none of them.
// Usage: node check.mjs RUN_DIR [BASE_DIR [COST_DIR]]   Exit 0 on success, 1 on a mismatch.
import { DuckDBInstance } from '@duckdb/node-api';

const dir = process.argv[2];
const baseDir = process.argv[3];
const costDir = process.argv[4];
if (!dir) { console.error('usage: node check.mjs RUN_DIR'); process.exit(2); }
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const rows = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJS();
const q = (s) => `'${s.replaceAll("'", "''")}'`;
const points = `read_parquet(${q(dir + '/points/*.parquet')})`;
const clients = `read_parquet(${q(dir + '/clients/*.parquet')})`;

let failed = 0, checks = 0;
const expect = (what, got, want) => {
  checks++;
  const ok = JSON.stringify(got) === JSON.stringify(want);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}: ${JSON.stringify(got)}${ok ? '' : ` (want ${JSON.stringify(want)})`}`);
  if (!ok) failed++;
};

// The summary table, from per-client rows joined to their points.
const summary = await rows(`
  SELECT p.algorithm,
         sum(c.cut) FILTER (WHERE c.class = 'abusive')::BIGINT      AS caught,
         sum(c.admitted) FILTER (WHERE c.class = 'abusive')::BIGINT AS missed,
         sum(c.cut) FILTER (WHERE c.class = 'legit')::BIGINT        AS false_cut,
         round(100 * sum(c.cut) FILTER (WHERE c.class = 'legit')
               / sum(c.offered) FILTER (WHERE c.class = 'legit'), 1)  AS legit_cut_pct
  FROM ${clients} c JOIN ${points} p USING (point_id, replicate)
  WHERE (p.algorithm IN ('fixed_window', 'sliding_window') AND p.window_s = 60 AND p."limit" = 600)
     OR (p.algorithm = 'token_bucket' AND p.rate = 10 AND p.capacity = 900)
  GROUP BY p.algorithm ORDER BY p.algorithm`);
expect('summary table', summary.map((r) => [r.algorithm, Number(r.caught), Number(r.missed), Number(r.false_cut), r.legit_cut_pct]), [
  ['fixed_window', 5040, 7620, 405, 9.4],
  ['sliding_window', 5760, 6900, 880, 20.5],
  ['token_bucket', 3910, 8750, 0, 0],
]);

// The points table agrees with the clients table for every point.
const mismatch = await rows(`
  SELECT count(*)::BIGINT AS n FROM ${points} p JOIN (
    SELECT point_id, replicate, sum(cut) FILTER (WHERE class = 'legit') AS fc FROM ${clients} GROUP BY ALL
  ) c USING (point_id, replicate) WHERE p.false_cut <> c.fc`);
expect('points.false_cut = Σ clients.cut (legit), rows differing', Number(mismatch[0].n), 0);

// Stage attribution (Table 3) from the points columns.
const stages = await rows(`
  SELECT algorithm, cut_design::BIGINT d, cut_code::BIGINT c, cut_none::BIGINT n, round(only_here_pct, 1) o FROM ${points}
  WHERE (algorithm IN ('fixed_window', 'sliding_window') AND window_s = 60 AND "limit" = 600)
     OR (algorithm = 'token_bucket' AND rate = 10 AND capacity = 900) ORDER BY algorithm`);
expect('stage table', stages.map((r) => [r.algorithm, Number(r.d), Number(r.c), Number(r.n), r.o]), [
  ['fixed_window', 0, 240, 4800, 95.2], ['sliding_window', 0, 960, 4800, 83.3], ['token_bucket', 0, 0, 3910, 100],
]);

// Parameters that do not apply are NULL; the KV metadata is readable.
const nulls = await rows(`SELECT count(*)::BIGINT n FROM ${points} WHERE algorithm = 'token_bucket' AND ("limit" IS NOT NULL OR window_s IS NOT NULL)`);
expect('token_bucket rows with a window or limit', Number(nulls[0].n), 0);
const kv = await rows(`SELECT DISTINCT decode(key) AS k FROM parquet_kv_metadata(${q(dir + '/points/*.parquet')}) WHERE decode(key) LIKE 'ratesweep.%' ORDER BY k`);
expect('metadata keys', kv.map((r) => r.k), ['ratesweep.scenario_sha256', 'ratesweep.shard', 'ratesweep.spec', 'ratesweep.version']);

// The policy column: one canonical label per point, the lesson's three
// policies selected by it, and a join across runs on it.
const labels = await rows(`SELECT count(DISTINCT policy)::BIGINT n, count(DISTINCT point_id)::BIGINT p FROM ${points}`);
expect('distinct policy labels = distinct points', Number(labels[0].n), Number(labels[0].p));
const byLabel = await rows(`
  SELECT policy, false_cut::BIGINT fc FROM ${points}
  WHERE policy IN ('fixed_window window_s=60 limit=600', 'sliding_window window_s=60 limit=600', 'token_bucket rate=10 capacity=900')
  ORDER BY policy`);
expect('false cut of the lesson policies, by label', byLabel.map((r) => [r.policy, Number(r.fc)]), [
  ['fixed_window window_s=60 limit=600', 405], ['sliding_window window_s=60 limit=600', 880], ['token_bucket rate=10 capacity=900', 0],
]);
if (baseDir) {
  const base = `read_parquet(${q(baseDir + '/points/*.parquet')})`;
  const joined = await rows(`
    SELECT count(*)::BIGINT n,
           count(*) FILTER (WHERE a.caught <> b.caught OR a.missed <> b.missed OR a.false_cut <> b.false_cut)::BIGINT differ
    FROM ${points} a JOIN ${base} b USING (policy)`);
  const total = await rows(`SELECT count(*)::BIGINT n FROM ${points}`);
  expect('points joined to the baseline on policy, and those that differ', [Number(joined[0].n), Number(joined[0].differ)], [Number(total[0].n), 0]);
}
if (costDir) {
  const costCols = async (rel) => (await rows(`SELECT column_name c FROM (DESCRIBE SELECT * FROM ${rel}) WHERE column_name LIKE '%_cost' ORDER BY c`)).map((r) => r.c);
  expect('cost columns of the lesson run', [...await costCols(points), ...await costCols(clients)], []);
  const cp = `read_parquet(${q(costDir + '/points/*.parquet')})`;
  const cc = `read_parquet(${q(costDir + '/clients/*.parquet')})`;
  expect('points cost columns', await costCols(cp), ['caught_cost', 'false_cut_cost', 'missed_cost', 'offered_abusive_cost', 'offered_legit_cost']);
  expect('clients cost columns', await costCols(cc), ['cut_cost', 'offered_cost']);
  // Each client's cost columns are its requests times its cost (cost-sweep.yaml).
  const perClient = await rows(`
    WITH cost(client, units) AS (VALUES ('storefront', 1), ('reports', 8), ('bulk exporter', 50), ('scraper', 2))
    SELECT count(*)::BIGINT n, count(*) FILTER (WHERE c.offered_cost <> c.offered * cost.units OR c.cut_cost <> c.cut * cost.units)::BIGINT differ
    FROM ${cc} c JOIN cost USING (client)`);
  expect('clients rows, and those whose cost is not requests × cost', [Number(perClient[0].n) > 0, Number(perClient[0].differ)], [true, 0]);
  // The points totals are the clients' sums by class.
  const totals = await rows(`
    SELECT count(*)::BIGINT n, count(*) FILTER (WHERE p.offered_legit_cost <> c.ol OR p.false_cut_cost <> c.fc
                                  OR p.offered_abusive_cost <> c.oa OR p.caught_cost <> c.ca OR p.missed_cost <> c.oa - c.ca)::BIGINT differ,
           count(*) FILTER (WHERE p.false_cut_cost > 0 AND p.caught_cost > 0 AND p.false_cut_cost <> p.false_cut)::BIGINT costed
    FROM ${cp} p JOIN (
      SELECT point_id, replicate,
             sum(offered_cost) FILTER (WHERE class = 'legit') ol, sum(cut_cost) FILTER (WHERE class = 'legit') fc,
             sum(offered_cost) FILTER (WHERE class = 'abusive') oa, sum(cut_cost) FILTER (WHERE class = 'abusive') ca
      FROM ${cc} GROUP BY ALL) c USING (point_id, replicate)`);
  expect('points rows, those whose cost totals differ from the clients sums, and those cutting costed requests', [Number(totals[0].n), Number(totals[0].differ), Number(totals[0].costed) > 0], [16, 0, true]);
}

console.log(`duckdb: ${checks - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
