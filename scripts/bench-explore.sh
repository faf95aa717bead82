#!/usr/bin/env bash
# Benchmarks `report` and explore.html on a run of CLIENTS scenario clients
# (default 100000) and a grid of 60 settings (6 million client rows):
#  - the peak RSS of `report` and of `recommend --max-client-cut`
#    (/usr/bin/time -v; budget: 2 GB each);
#  - explore.html's size;
#  - in headless Chromium, in real time, ROUNDS times (default 5): the
#    page's performance marks read back from the page (navigation start to
#    its script, its data unpacked, the page ready and its first frame
#    painted), the page's own work (its script's start to that frame), and
#    a drag of the false-cut slider (each input event to its frame painted,
#    a performance measure; median, 90th percentile, largest of 40); and,
#    as the floor under every first render, the same browser painting a
#    blank page, and the CPU time of the whole browser (perf stat). Medians
#    over the rounds, with the load average;
#  - one more round under a Chromium trace (TRACE=0: none): the page's
#    main-thread CPU time to its first frame and per drag step
#    (scripts/explore-trace.jq), which the machine's load changes little.
# The budgets are a first render within 1 s and a drag step within 100 ms;
# it exits 1 when the median first render or the median of the drag's 90th
# percentiles misses its budget, or a peak RSS its 2 GB.
# SIZES=1 also prints explore.html's size for 10,000 settings (the budget:
# 1.5 MB) and for 1,000,000 settings (sampled; minutes).
#
# A benchmark, not a test: run it on a quiet machine.
#
# SETTINGS=50000 runs instead the lesson's scenario (7 clients) over 50,090
# settings (fixed window, sliding window, token bucket, nginx), of which
# the page holds 50,000: the chart's points at their most.
#
# Usage: scripts/bench-explore.sh [BIN]   (BIN default bin/ratesweep)
#        CLIENTS=N ROUNDS=N KEEP=DIR (keep the run in DIR; a kept run is
#        reused) RSS=0 (skip the RSS figures, keep DIR's report) SIZES=1
#        SETTINGS=50000
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin/ratesweep}
CLIENTS=${CLIENTS:-100000}
ROUNDS=${ROUNDS:-5}
MAXRSS_KB=2000000
load() { cut -d" " -f1-3 /proc/loadavg; }
echo "bench-explore: load average $(load) at the start"
fail=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
RUN=${KEEP:-$TMP/run}

if [ ! -d "$RUN/points" ] && [ "${SETTINGS:-}" = 50000 ]; then
	cp configs/lesson.yaml "$TMP/lesson.yaml"
	cat >"$TMP/spec.yaml" <<YAML
name: explore-bench-settings
scenario: lesson.yaml
sweep:
  - algorithm: fixed_window
    window_s: [10, 15, 20, 30, 45, 60, 90, 120, 180, 240]
    limit: {from: 50, to: 6295, step: 5}
  - algorithm: sliding_window
    window_s: [10, 15, 20, 30, 45, 60, 90, 120, 180, 240]
    limit: {from: 50, to: 6295, step: 5}
  - algorithm: token_bucket
    rate: {from: 1, to: 50, step: 1}
    capacity: {from: 10, to: 5000, step: 10}
  - algorithm: nginx
    rate: [5, 10, 15, 20, 30]
    burst: [0, 10, 50, 100, 200, 500, 900, 1500, 3000]
    delay: [0, 1000000]
YAML
	"$BIN" run "$TMP/spec.yaml" --out "$RUN" --quiet --force --workers 1
elif [ ! -d "$RUN/points" ]; then
	# CLIENTS clients over 60 s: legitimate ones at 1-4 requests per second
	# with a 5 s burst at 6-12, one in ten abusive at 5-20.
	awk -v n="$CLIENTS" 'BEGIN {
		print "name: explore bench"; print "duration_s: 60"; print "clients:"
		for (i = 0; i < n; i++) {
			if (i % 10 == 9) printf "  - {name: bot-%d, class: abusive, stage: code, segments: [[%d, 60, %d]]}\n", i, i % 30, 5 + i % 16
			else { b = 1 + i % 50; printf "  - {name: user-%d, class: legit, segments: [[0, %d, %d], [%d, %d, %d], [%d, 60, %d]]}\n", i, b, 1 + i % 4, b, b + 5, 6 + i % 7, b + 5, 1 + i % 4 }
		}
	}' >"$TMP/scenario.yaml"
	cat >"$TMP/spec.yaml" <<YAML
name: explore-bench
scenario: scenario.yaml
sweep:
  - algorithm: fixed_window
    window_s: [10, 60]
    limit: {from: 40, to: 400, step: 40}
  - algorithm: sliding_window
    window_s: [10, 60]
    limit: {from: 40, to: 400, step: 40}
  - algorithm: token_bucket
    rate: [2, 5]
    capacity: {from: 30, to: 300, step: 30}
YAML
	"$BIN" run "$TMP/spec.yaml" --out "$RUN" --quiet --force --workers 1
fi
if [ "${RSS:-1}" = 1 ]; then
	# Peak memory (load-independent) of the commands that read every clients row.
	for cmd in "report $RUN --quiet" "recommend $RUN --max-false-cut 1% --max-client-cut 5%"; do
		# shellcheck disable=SC2086
		/usr/bin/time -v "$BIN" $cmd >/dev/null 2>"$TMP/time.log" || { cat "$TMP/time.log"; exit 1; }
		rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TMP/time.log")
		wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$TMP/time.log")
		echo "bench-explore: ratesweep ${cmd%% *}: peak RSS $((rss / 1024)) MB (budget $((MAXRSS_KB / 1024))), wall $wall (load $(load))"
		[ "$rss" -le "$MAXRSS_KB" ] || fail=1
	done
fi
[ -f "$RUN/report/explore.html" ] || "$BIN" report "$RUN" --quiet
PAGE=$RUN/report/explore.html
if [ "${SETTINGS:-}" = 50000 ]; then what="50,090 settings of the lesson's scenario"; else what="$CLIENTS clients"; fi
echo "bench-explore: explore.html $(stat -c %s "$PAGE") bytes, $what"
{ echo '<script>'; cat scripts/explore-bench.js; echo '</script>'; } >"$TMP/bench.html"
sed -e "/<meta charset/r $TMP/bench.html" "$PAGE" >"$RUN/report/explore-bench.html"

{ echo '<!doctype html><meta charset="utf-8"><script>addEventListener("load", () => requestAnimationFrame(() => setTimeout(() =>'
  echo 'console.log("explore-bench " + JSON.stringify({blankPaintMs: +performance.now().toFixed(1)})), 0)));</script><p>blank'; } >"$RUN/report/blank-bench.html"

# page FILE CPUKEY: loads FILE in headless Chromium and prints its
# explore-bench json, with CPUKEY: the CPU time, ms, of the whole browser
# (all its processes, from start to stop; perf stat's task-clock) when
# perf is installed. CPU time barely depends on the load as wall time does.
page() {
	local prof pid line="" cpu=null perf=()
	prof=$(mktemp -d)
	command -v perf >/dev/null && perf=(perf stat -x, -e task-clock -o "$TMP/perf")
	"${perf[@]}" chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--window-size=1400,900 --user-data-dir="$prof" --enable-logging=stderr --v=0 \
		"file://$1" >/dev/null 2>"$TMP/log" &
	pid=$!
	for _ in $(seq 600); do
		line=$(grep -o 'explore-bench [^"]*{.*}' "$TMP/log" | head -1 || true)
		[ -n "$line" ] && break
		grep -q 'explore-bench failed' "$TMP/log" && break
		sleep 0.2
	done
	if [ ${#perf[@]} -gt 0 ]; then
		# Stop the browser, perf's child, so that perf writes its count.
		kill "$(pgrep -P "$pid" | head -1)" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		cpu=$(awk -F, '/task-clock/ { printf "%.0f", $1 }' "$TMP/perf")
	else
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$prof"
	[ -n "$line" ] || { echo "bench-explore: $1: no result" >&2; grep CONSOLE "$TMP/log" | head -5 >&2; return 1; }
	line=${line#explore-bench }
	echo "$line" | sed 's/\\"/"/g' | jq -c --argjson c "${cpu:-null}" --arg k "$2" '. + {($k): $c}'
}

rounds=()
for round in $(seq "$ROUNDS"); do
	json=$(page "$RUN/report/explore-bench.html" cpuMs)
	blank=$(page "$RUN/report/blank-bench.html" blankCpuMs)
	json=$(jq -c --argjson b "$blank" '. + $b' <<<"$json")
	echo "bench-explore: round $round (load $(load)): $json"
	rounds+=("$json")
done
rm -f "$RUN/report/blank-bench.html"
med=$(printf '%s\n' "${rounds[@]}" | jq -s -c 'def median: sort | .[(length - 1) / 2 | floor];
	{firstPaintMs: (map(.firstPaintMs) | median), blankPaintMs: (map(.blankPaintMs) | median), pageMs: (map(.pageMs) | median),
	 dataMs: (map(.dataAtMs - .scriptAtMs) | median | . * 10 | round / 10), dragMedianMs: (map(.dragMedianMs) | median), dragP90Ms: (map(.dragP90Ms) | median),
	 cpuMs: (map(.cpuMs) | median), blankCpuMs: (map(.blankCpuMs) | median)}')
echo "bench-explore: medians over $ROUNDS rounds (load $(load)): $med"
echo "bench-explore: first render $(jq -r .firstPaintMs <<<"$med") ms from navigation start (budget 1000; a blank page: $(jq -r .blankPaintMs <<<"$med") ms; the page's own work: $(jq -r .pageMs <<<"$med") ms, of which unpacking the data $(jq -r .dataMs <<<"$med") ms), drag step median $(jq -r .dragMedianMs <<<"$med") ms, 90th percentile $(jq -r .dragP90Ms <<<"$med") ms (budget 100)"
[ "$(jq -r .cpuMs <<<"$med")" = null ] || echo "bench-explore: CPU time of the whole browser: $(jq -r .cpuMs <<<"$med") ms for the page, its first render and the 40 drag steps; $(jq -r .blankCpuMs <<<"$med") ms for a blank page"
jq -e '.firstPaintMs <= 1000 and .dragP90Ms <= 100' <<<"$med" >/dev/null || fail=1

# One more round under a Chromium trace: the page's main-thread CPU time
# (scripts/explore-trace.jq), which the load of the machine changes little.
if [ "${TRACE:-1}" = 1 ]; then
	prof=$(mktemp -d)
	sed -e "/<meta charset/r $TMP/bench.html" "$PAGE" >"$RUN/report/explore-bench.html"
	chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--window-size=1400,900 --user-data-dir="$prof" --enable-logging=stderr --v=0 \
		--trace-startup=toplevel,blink.user_timing --trace-startup-format=json \
		--trace-startup-file="$TMP/trace.json" --trace-startup-duration=40 \
		"file://$RUN/report/explore-bench.html" >/dev/null 2>"$TMP/log" &
	pid=$!
	cpu=""
	for _ in $(seq 600); do # the trace is written after 40 s
		if [ -s "$TMP/trace.json" ] && cpu=$(jq -c -f scripts/explore-trace.jq "$TMP/trace.json" 2>/dev/null); then break; fi
		sleep 0.5
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$prof" "$RUN/report/explore-bench.html"
	echo "bench-explore: traced round (load $(load)): main-thread CPU ${cpu:-(no trace)}"
	if [ -n "$cpu" ]; then
		echo "bench-explore: the page's main thread: $(jq -r .firstRenderCpuMs <<<"$cpu") ms of CPU to its first frame painted (budget 1000), $(jq -r .dragCpuMedianMs <<<"$cpu") ms per drag step (median; budget 100)"
	fi
fi
rm -f "$RUN/report/explore-bench.html"

if [ "${SIZES:-}" = 1 ]; then
	go test ./report -run 'TestExploreSize10k$' -count=1 -v | sed -n 's/.*explore.html: /bench-explore: explore.html: /p'
	go test ./report -run XXX -bench 'BenchmarkExploreSize1e6' -benchtime=1x -timeout 3600s |
		sed -n 's/^BenchmarkExploreSize1e6[^ ]* *1 *[0-9]* ns\/op */bench-explore: 1,000,000 settings: /p'
fi
exit "$fail"
