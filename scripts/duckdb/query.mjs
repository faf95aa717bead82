// Runs one SQL query with DuckDB and prints the result as a table, e.g.
//   node scripts/duckdb/query.mjs "SELECT algorithm, count(*) FROM read_parquet('out/default/points/*.parquet') GROUP BY 1"
// (cd scripts/duckdb && npm ci first.)
import { DuckDBInstance } from '@duckdb/node-api';

if (process.argv.length < 3) { console.error('usage: node query.mjs SQL'); process.exit(2); }
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const reader = await con.runAndReadAll(process.argv[2]);
console.table(reader.getRowObjectsJS());
