#!/usr/bin/env bash
# make bench-check: time and peak RSS of `ratesweep check` on 10,000,000
# points (fails above a peak RSS of 500 MB, whatever the run's size). Cases (all by
# default, or name them: bash bench/check.sh reordered):
#   same       bench/10m.yaml against itself (the sides join point for point)
#   extended   the run has an entry inserted in front (run points are placed
#              by an index of the baseline's keys)
#   reordered  the run lists the entries in reverse order (run points wait in
#              bounded batches for passes over the baseline)
# The runs are written once under out/.bench-check and kept.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin/ratesweep}
out=out/.bench-check
cases=${*:-same extended reordered}
[ -x /usr/bin/time ] || { echo "bench-check: GNU time is missing (apt-get install time)" >&2; exit 1; }
mkdir -p "$out"
# Variants of bench/10m.yaml beside it (its scenario path is relative).
sed 's/^name: bench-10m$/name: bench-10m-extended/; s/^sweep:$/sweep:\n  - algorithm: gcra\n    rate: [5, 10]\n    capacity: {from: 1, to: 500, step: 1}/' bench/10m.yaml >bench/.10m-extended.yaml
awk '/^sweep:/ {s=1; print; next} s && /^  - / {n++} s {e[n]=e[n] $0 "\n"; next} {print} END {for (i=n; i>=1; i--) printf "%s", e[i]}' bench/10m.yaml |
	sed 's/^name: bench-10m$/name: bench-10m-reordered/' >bench/.10m-reordered.yaml
trap 'rm -f bench/.10m-extended.yaml bench/.10m-reordered.yaml' EXIT
run() { # spec, dir
	[ -f "$2/manifest.json" ] || "$bin" run "$1" --out "$2" --force --quiet
}
status=0
measure() { # name, baseline, run
	/usr/bin/time -f '%M %e' -o "$out/time" "$bin" check --baseline "$2" "$3" --allow-scenario-change >"$out/check.txt" 2>&1 || true
	read -r kb secs <"$out/time"
	mb=$((kb / 1024))
	printf '%-10s %s\n           peak RSS %d MB, %s s (load %s)\n' "$1" "$(tail -1 "$out/check.txt")" "$mb" "$secs" "$(cut -d' ' -f1 /proc/loadavg)"
	[ "$mb" -le 500 ] || { echo "bench-check: $1: peak RSS $mb MB > 500 MB" >&2; status=1; }
}
run bench/10m.yaml "$out/10m"
for c in $cases; do
	case $c in
	same) measure same "$out/10m" "$out/10m" ;;
	extended | reordered)
		run "bench/.10m-$c.yaml" "$out/10m-$c"
		measure "$c" "$out/10m" "$out/10m-$c"
		;;
	*) echo "bench-check: unknown case $c (same, extended, reordered)" >&2; exit 2 ;;
	esac
done
exit $status
