#!/usr/bin/env bash
# make bench-check: time and peak RSS of `ratesweep check` on 10,000,000
# points (goal: peak RSS <= 500 MB, whatever the run's size). Two checks:
#   same grid   bench/10m.yaml against itself (the sides join point for point)
#   extended    the same grid with an entry inserted in front (the run's
#               points are placed by an index of the baseline's keys)
# The runs are written once under out/.bench-check and kept.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin/ratesweep}
out=out/.bench-check
[ -x /usr/bin/time ] || { echo "bench-check: GNU time is missing (apt-get install time)" >&2; exit 1; }
mkdir -p "$out"
sed 's/^name: bench-10m$/name: bench-10m-extended/; s/^sweep:$/sweep:\n  - algorithm: gcra\n    rate: [5, 10]\n    capacity: {from: 1, to: 500, step: 1}/' bench/10m.yaml > "$out/10m-extended.yaml"
cp "$out/10m-extended.yaml" bench/.10m-extended.yaml # scenario path is relative to bench/
trap 'rm -f bench/.10m-extended.yaml' EXIT
for spec in bench/10m.yaml bench/.10m-extended.yaml; do
	dir=$out/$(basename "$spec" .yaml | tr -d .)
	[ -f "$dir/manifest.json" ] || "$bin" run "$spec" --out "$dir" --force --quiet
done
status=0
measure() { # name, baseline, run
	/usr/bin/time -f '%M %e' -o "$out/time" "$bin" check --baseline "$2" "$3" --allow-scenario-change >"$out/check.txt" 2>&1 || true
	read -r kb secs <"$out/time"
	mb=$((kb / 1024))
	printf '%-10s %s\n           peak RSS %d MB, %s s (load %s)\n' "$1" "$(tail -1 "$out/check.txt")" "$mb" "$secs" "$(cut -d' ' -f1 /proc/loadavg)"
	[ "$mb" -le 500 ] || { echo "bench-check: $1: peak RSS $mb MB > 500 MB" >&2; status=1; }
}
measure "same grid" "$out/10m" "$out/10m"
measure "extended" "$out/10m" "$out/10m-extended"
exit $status
