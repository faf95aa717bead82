#!/usr/bin/env bash
# make bench-month: a synthetic month of traffic swept as key shards on this
# machine, one shard after another, beside the unsharded replay of a log
# that fits (docs/clusters.md, "A month of traffic").
#
#   1. bench genlog streams the month (REQUESTS requests, KEYS Zipf keys over
#      SPAN seconds) through zstd into OUT/month.csv.zst (written once, kept);
#   2. a grid of 4 × PER points (fixed_window, sliding_window, token_bucket,
#      gcra) runs as SHARDS key shards in turn, each under GNU time: peak
#      RSS, CPU seconds (user + system), wall seconds;
#   3. ratesweep merge adds them up;
#   4. the same grid replays FIT_REQUESTS requests (a log that fits) unsharded.
# It prints one table: per shard and in all, decisions (points × requests)
# per CPU-second beside the unsharded replay's.
#
# The full size (the defaults) writes a ~5 GB compressed log and takes about
# half an hour after it (8 shards, 2 cores):
# run it on a quiet machine with the disk and time for it. A smoke test:
#   REQUESTS=200000 KEYS=5000 SPAN=86400 PER=10 FIT_REQUESTS=100000 bash bench/month.sh
#
# Environment: REQUESTS (1000000000), KEYS (1000000), SPAN (2592000 s = 30
# days), SHARDS (8), PER (125 points per algorithm: 500 in all),
# FIT_REQUESTS (10000000), WORKERS (all cores), OUT (out/.bench-month),
# RUN_SHARDS (the key shards to run, default all: "0 1 ... SHARDS-1"; with
# fewer, e.g. RUN_SHARDS=0, there is no merge and the totals for all SHARDS
# are projected from the mean of those run), NICE (a nice level for every
# command, e.g. 19 on a shared machine).
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${REQUESTS:-1000000000}
keys=${KEYS:-1000000}
span=${SPAN:-2592000}
shards=${SHARDS:-8}
per=${PER:-125}
fit=${FIT_REQUESTS:-10000000}
workers=${WORKERS:-$(nproc)}
out=${OUT:-out/.bench-month}
run_shards=${RUN_SHARDS:-$(seq -s ' ' 0 $((shards - 1)))}
nice=()
[ -z "${NICE:-}" ] || nice=(nice -n "$NICE")
[ -x /usr/bin/time ] || { echo "bench-month: GNU time is missing (apt-get install time)" >&2; exit 1; }
command -v zstd >/dev/null || { echo "bench-month: zstd is missing (apt-get install zstd)" >&2; exit 1; }
go build -o bin/ratesweep ./cmd/ratesweep
go build -o bin/ratesweep-bench ./bench
mkdir -p "$out"

# log NAME REQUESTS KEYS: generate OUT/NAME.csv.zst once (streamed, compressed).
log() {
	local f=$out/$1.csv.zst
	if [ ! -s "$f" ]; then
		echo "bench-month: generating $f ($2 requests, $3 keys, $span s)" >&2
		"${nice[@]}" bin/ratesweep-bench genlog -requests "$2" -keys "$3" -span "$span" - | "${nice[@]}" zstd -q -1 -T0 -o "$f.tmp"
		mv "$f.tmp" "$f"
	fi
	echo "$f"
}
# spec NAME LOG: the grid over LOG.
spec() {
	cat >"$out/$1.yaml" <<EOF
name: bench-$1
traffic:
  log: $(realpath "$2")
  format: csv
  csv: {time_format: unix_ms, columns: {time: t, ip: key}}
  key: ip
  spread: none
  top_keys: 20
sweep:
  - {algorithm: fixed_window, window_s: [60], limit: {from: 1, to: $per, step: 1}}
  - {algorithm: sliding_window, window_s: [60], limit: {from: 1, to: $per, step: 1}}
  - {algorithm: token_bucket, rate: [1], capacity: {from: 1, to: $per, step: 1}}
  - {algorithm: gcra, rate: [1], capacity: {from: 1, to: $per, step: 1}}
EOF
	echo "$out/$1.yaml"
}
# timed LABEL CMD...: runs CMD under GNU time, prints a row (RSS MB, CPU s, wall s).
timed() {
	local label=$1
	shift
	/usr/bin/time -f '%M %U %S %e' -o "$out/time" "${nice[@]}" "$@" >"$out/$label.txt" 2>&1 || { cat "$out/$label.txt" >&2; exit 1; }
	read -r kb user sys wall <"$out/time"
	echo "$label $((kb / 1024)) $(echo "$user + $sys" | bc) $wall"
}

month=$(spec month "$(log month "$requests" "$keys")")
small=$(spec fit "$(log fit "$fit" "$((keys / 100 > 1 ? keys / 100 : 2))")")
points=$((4 * per))
rm -rf "$out/run" "$out/fit-run"
rows=()
ran=0
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $run_shards; do
	rows+=("$(timed "shard-$i" bin/ratesweep run "$month" --out "$out/run" --shard "$i/$shards" --shard-by key --workers "$workers" --quiet)")
	ran=$((ran + 1))
done
merge=""
[ "$ran" -lt "$shards" ] || merge=$(timed merge bin/ratesweep merge "$out/run")
fitrow=$(timed unsharded bin/ratesweep run "$small" --out "$out/fit-run" --workers "$workers" --quiet)

printf '\nA month: %s requests, %s Zipf keys over %s s; %d points as %d key shards, %d run (%s cores; load at the start %s, at the end %s)\n\n' \
	"$requests" "$keys" "$span" "$points" "$shards" "$ran" "$(nproc)" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| run | peak RSS MB | CPU s | wall s | decisions per CPU-s |\n|---|---|---|---|---|\n'
cpu=0
for r in "${rows[@]}"; do
	read -r label mb c w <<<"$r"
	# A key shard decides about 1/SHARDS of the requests (keys hash evenly).
	printf '| %s | %s | %s | %s | %s |\n' "$label" "$mb" "$c" "$w" "$(echo "$points * $requests / $shards / ($c + 0.01)" | bc)"
	cpu=$(echo "$cpu + $c" | bc)
done
if [ -n "$merge" ]; then
	read -r _ mmb mcpu mwall <<<"$merge"
	printf '| merge | %s | %s | %s | |\n' "$mmb" "$mcpu" "$mwall"
fi
read -r _ fmb fcpu fwall <<<"$fitrow"
printf '| unsharded, %s requests | %s | %s | %s | %s |\n\n' "$fit" "$fmb" "$fcpu" "$fwall" "$(echo "$points * $fit / ($fcpu + 0.01)" | bc)"
if [ "$ran" -lt "$shards" ]; then
	cpu=$(echo "scale=2; $cpu * $shards / $ran" | bc)
	echo "key shards in all (projected from $ran of $shards, merge apart): $cpu CPU-s, $(echo "$points * $requests / ($cpu + 0.01)" | bc) decisions per CPU-second"
else
	echo "key shards in all (merge apart): $cpu CPU-s, $(echo "$points * $requests / ($cpu + 0.01)" | bc) decisions per CPU-second"
fi
echo "unsharded replay:  $fcpu CPU-s, $(echo "$points * $fit / ($fcpu + 0.01)" | bc) decisions per CPU-second"
[ -z "$merge" ] || tail -n 2 "$out/merge.txt"
