#!/usr/bin/env bash
# Checks explore.html in headless Chromium against the command line on the
# same run (scripts/explore-check.js drives the page as a user does):
# for 20 random constraint sets the best setting and the best of each
# algorithm the page marks equal `ratesweep recommend --format json`'s; the
# frontier drawn equals frontier.csv's; the export text shown equals
# `ratesweep export`'s for frontier settings; the page makes no network
# request (what its Content-Security-Policy blocks and what resource timing
# records; Chromium's net log is no help: the browser itself calls home);
# nothing scrolls sideways at 1400 px nor at 390 px wide (headless Chromium
# windows are at least 500 px wide, so the page runs in a 390 px iframe).
# For the best setting of each feasible set, the neighbours shown equal
# recommend's, and narrowing a parameter's range to its value keeps it the
# best; along the frontier, a fixed window or sliding log setting cuts no
# client the threshold view shows within its limit. axe-core (vendored in
# scripts/axe for this test only) finds no serious or critical violation.
# It prints the file's size and its first render time.
#
# Usage: scripts/test-explore.sh [BIN [RUN_DIR]]   (BIN default bin/ratesweep;
# RUN_DIR default: a fresh default run, reported here). SEED=N fixes the
# constraint sets (default: random, printed).
#
# It also checks the checker: copies of the page that choose by the wrong
# objective, draw a wrong frontier, fetch from the network, are too wide
# for a phone, skip a neighbour or leave an input unlabelled must fail.
# With FIXED (a run whose settings tie on cut and missed, and constraint
# sets whose best is among tied settings), only the page and a copy that
# breaks ties by point order, which must fail, are checked.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin/ratesweep}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
RUN=${2:-}
if [ -z "$RUN" ]; then
	RUN=$TMP/run
	"$BIN" run --out "$RUN" --quiet
	"$BIN" report "$RUN" --quiet
fi
PAGE=$RUN/report/explore.html
[ -f "$PAGE" ] || { echo "test-explore: FAIL: no $PAGE"; exit 1; }
SEED=${SEED:-$RANDOM}
echo "test-explore: explore.html $(stat -c %s "$PAGE") bytes for $(($(wc -l <"$RUN/report/frontier.csv") - 1)) frontier points; SEED=$SEED"

# 20 constraint sets (RANDOM_CASES): a false-cut bound always (as recommend
# requires one), a missed and a per-client bound each half the time; then
# the sets of FIXED ("FC:MI ...", percentages, MI null for none); and
# recommend's picks. A fixed set compares the picks only, not the best
# setting's neighbours: the page finds none along a parameter a label
# leaves at its default (nginx's delay 0), where recommend lists one.
RANDOM=$SEED
cases=()
for k in $(seq "${RANDOM_CASES:-20}") ${FIXED:-}; do
	fc=$((RANDOM % 1000)).$((RANDOM % 100))
	fc=$(awk -v v="$fc" 'BEGIN{printf "%g", v/100}') # 0–10 %
	mi=null cc=null
	[ $((RANDOM % 2)) = 1 ] && mi=$((RANDOM % 100)).$((RANDOM % 10))
	[ $((RANDOM % 2)) = 1 ] && cc=$((RANDOM % 40)).$((RANDOM % 10))
	nb=true
	[[ $k == *:* ]] && fc=${k%%:*} mi=${k#*:} cc=null nb=false
	args=(--max-false-cut "$fc%")
	[ "$mi" != null ] && args+=(--max-missed "$mi%")
	[ "$cc" != null ] && args+=(--max-client-cut "$cc%")
	set +e
	"$BIN" recommend "$RUN" "${args[@]}" --format json >"$TMP/rec.json" 2>/dev/null
	rc=$?
	set -e
	if [ "$rc" -gt 1 ]; then echo "test-explore: FAIL: recommend ${args[*]} exit $rc"; exit 1; fi
	q() { [ "$1" = null ] && echo null || echo "\"$1\""; }
	cases+=("$(jq -c --argjson fc "\"$fc\"" --argjson mi "$(q "$mi")" --argjson cc "$(q "$cc")" --argjson nb "$nb" \
		'{fc: $fc, mi: $mi, cc: $cc,
		  kind: (if .overall then "overall" else "nearest" end),
		  label: ((.overall // .nearest_miss).policy),
		  byAlg: ([(.by_algorithm // [])[] | {key: .algorithm, value: .policy}] | from_entries),
		  neighbours: (if .overall and $nb then ([.overall.neighbors // [] | .[].policy] | sort) else null end)}' "$TMP/rec.json")")
done
feasible=$(printf '%s\n' "${cases[@]}" | grep -c '"kind":"overall"' || true)
echo "test-explore: ${#cases[@]} constraint sets, $feasible with a feasible setting"

# frontier.csv's point ids, in order; export's text for three frontier
# settings (first, middle, last) and every target.
frontier=$(tail -n +2 "$RUN/report/frontier.csv" | cut -d, -f1 | paste -sd, -)
n=$(($(wc -l <"$RUN/report/frontier.csv") - 1))
exports=()
for row in 1 $(((n + 1) / 2)) "$n"; do
	id=$(tail -n +2 "$RUN/report/frontier.csv" | sed -n "${row}p" | cut -d, -f1)
	label=$(node -e '
		const [csv, id] = process.argv.slice(1); const fs = require("fs");
		const [head, ...rows] = fs.readFileSync(csv, "utf8").trim().split("\n");
		const h = head.split(","), r = rows.map((l) => l.split(",")).find((r) => r[0] === id);
		const params = h.slice(2, h.indexOf("caught")).map((p, k) => [p, r[2 + k]]).filter(([, v]) => v !== "");
		console.log([r[1], ...params.map(([p, v]) => p + "=" + v)].join(" "));' "$RUN/report/frontier.csv" "$id")
	for t in nginx haproxy envoy kong traefik go redis; do
		# A target that cannot take the policy is refused (exit 2): no text.
		"$BIN" export --to "$t" --run "$RUN" "$label" >"$TMP/export.txt" 2>/dev/null || continue
		exports+=("$(jq -cn --argjson id "$id" --arg l "$label" --arg target "$t" --rawfile text "$TMP/export.txt" '{id: $id, "label": $l, target: $target, text: $text}')")
	done
done
echo "test-explore: ${#exports[@]} export texts from ratesweep export"

{
	echo '<script>'
	echo "window.EXPLORE_CASES = [$(IFS=,; echo "${cases[*]}")];"
	echo "window.EXPLORE_FRONTIER = [$frontier];"
	echo "window.EXPLORE_EXPORTS = [$(IFS=,; echo "${exports[*]}")];"
	cat scripts/explore-check.js
	echo '</script>'
} >"$TMP/checker.html"
# inject SRC DST [SED [CHECKER]]: the checker after <meta charset>, the page edited by SED.
inject() { sed -e "/<meta charset/r ${4:-$TMP/checker.html}" -e "${3:-}" "$1" >"$2"; }

# The accessibility check: axe-core (vendored for this test only, checked
# against the checksum recorded in scripts/axe/VERSION) and its runner.
AXE_SHA=$(sed -n 's/^ *axe.min.js sha256 //p' scripts/axe/VERSION)
echo "$AXE_SHA  scripts/axe/axe.min.js" | sha256sum -c --quiet - || { echo "test-explore: FAIL: scripts/axe/axe.min.js differs from its recorded checksum"; exit 1; }
{ echo '<script>'; cat scripts/axe/axe.min.js; echo '</script><script>'; cat scripts/explore-axe.js; echo '</script>'; } >"$TMP/axe.html"

# check NAME FILE WIDTH: 0 when the page passes.
check() {
	local name=$1 file=$2 width=$3 prof
	prof=$(mktemp -d)
	set +e
	timeout 300 chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--window-size="$width",900 --hide-scrollbars --user-data-dir="$prof" \
		--enable-logging=stderr --v=0 --virtual-time-budget=120000 \
		--dump-dom "file://$file" >"$TMP/$name.dom" 2>"$TMP/$name.log"
	local rc=$?
	set -e
	rm -rf "$prof"
	local verdict
	verdict=$(sed -n 's/.*<pre id="explore-check">\(.*\)<\/pre>.*/\1/p' "$TMP/$name.dom" | sed 's/&quot;/"/g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g')
	echo "test-explore: $name: chromium exit $rc; checker: ${verdict:-no verdict}"
	if grep -E 'CONSOLE' "$TMP/$name.log"; then return 1; fi
	[ "$rc" -eq 0 ] && [[ $verdict == '{"ok":true,'* ]]
}

D=$RUN/report
inject "$PAGE" "$D/explore-check.html"
inject "$PAGE" "$D/explore-objective.html" 's/const objLC = b.mi !== null;/const objLC = b.mi === null;/'
inject "$PAGE" "$D/explore-frontier.html" 's/if (Y\[i\] < bestY)/if (Y[i] <= bestY)/'
inject "$PAGE" "$D/explore-fetch.html" 's#</body>#<img src="http://127.0.0.1:9/x.png" alt=""></body>#'
inject "$PAGE" "$D/explore-wide.html" 's#</main>#<div style="width:600px">wide</div></main>#'
inject "$PAGE" "$D/explore-neighbours.html" 's/a\[k - 1\], a\[k + 1\]/a[k + 1]/'
inject "$PAGE" "$D/explore-axe.html" "" "$TMP/axe.html"
inject "$PAGE" "$D/explore-unlabelled.html" 's/ aria-label="Max missed, %"//' "$TMP/axe.html"
inject "$PAGE" "$D/explore-ties.html" 's/return r < br;/return false;/'
# phone FRAME PAGE: a page showing PAGE in a 390 px iframe; the checker in
# PAGE posts its verdict up.
phone() {
	cat >"$1" <<HTML
<!DOCTYPE html><meta charset="utf-8"><title>390 px</title>
<iframe src="$(basename "$2")" style="width:390px;height:844px;border:0"></iframe>
<script>addEventListener("message", (e) => { const p = document.createElement("pre"); p.id = "explore-check"; p.textContent = e.data; document.body.appendChild(p); });</script>
HTML
}
phone "$D/explore-phone.html" "$D/explore-check.html"
phone "$D/explore-phone-wide.html" "$D/explore-wide.html"

names=(page phone axe objective frontier fetch wide neighbours unlabelled)
files=("$D/explore-check.html" "$D/explore-phone.html" "$D/explore-axe.html" "$D/explore-objective.html" "$D/explore-frontier.html" "$D/explore-fetch.html" "$D/explore-phone-wide.html" "$D/explore-neighbours.html" "$D/explore-unlabelled.html")
widths=(1400 1400 1400 1400 1400 1400 1400 1400 1400)
wants=(pass pass pass fail fail fail fail fail fail)
if [ -n "${FIXED:-}" ]; then # a run of tied settings: the page, and a copy that ignores the tie rank
	names=(page ties) files=("$D/explore-check.html" "$D/explore-ties.html") widths=(1400 1400) wants=(pass fail)
fi
JOBS=${TEST_BROWSER_JOBS:-3}
for i in "${!names[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
	( if check "${names[$i]}" "${files[$i]}" "${widths[$i]}" >"$TMP/${names[$i]}.out" 2>&1; then echo pass; else echo fail; fi >"$TMP/${names[$i]}.got" ) &
done
wait
fail=0
for i in "${!names[@]}"; do
	name=${names[$i]}
	cat "$TMP/$name.out"
	case "${wants[$i]}/$(cat "$TMP/$name.got")" in
	pass/pass) ;;
	pass/*) echo "test-explore: FAIL: $name"; fail=1 ;;
	fail/fail) echo "test-explore: ok: the checker rejects a page with: $name" ;;
	*) echo "test-explore: FAIL: the checker passed a page with: $name"; fail=1 ;;
	esac
done
rm -f "$D"/explore-*.html
[ "$fail" -eq 0 ] && echo "test-explore: PASS"
exit "$fail"
