#!/usr/bin/env bash
# Renders the default run's report in headless Chromium as a reader's browser
# does and checks it with scripts/browser-check.js: every image loads, no
# console error; fonts come from the page (not the machine) and no text
# leaves its figure or sits on another; each figure's SVG, drawn by the
# browser, matches its PNG pixel for pixel within anti-aliasing; every
# algorithm has its own colour under the trade-off plot's markers, and each
# marker has a hover title. A report of an incomplete run must be refused
# without --allow-incomplete and carry the banner on the page and every
# figure with it.
#
# A run whose names are markup must show them as text (no image loads, no
# script runs).
#
# Then scripts/test-explore.sh checks explore.html on the same run, and
# scripts/test-explore-more.sh its further metrics and bounds on two small
# runs of its own.
#
# Usage: scripts/test-browser.sh [BIN]   (BIN default: bin/ratesweep)
#
# Each run also checks the checker: broken copies of the page (a missing
# image, a corrupt image inside an SVG, a console error, a text overflowing
# its figure, a figure whose SVG is shifted against its PNG, two algorithms
# in one colour, fonts not embedded, the banner removed) must fail.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin/ratesweep}

if ! command -v chromium >/dev/null 2>&1; then
	echo "test-browser: installing Debian's chromium"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BIN" run --out "$TMP/run" --quiet
"$BIN" report "$TMP/run" --quiet
PAGE_DIR="$TMP/run/report"

# The checker runs first in <head> (after the charset): it records errors
# (capture phase, so failed resources count too) and console.error calls,
# then after load checks the page and writes its verdict into the DOM as
# <pre id="browser-check">.
{ echo '<script>'; cat scripts/browser-check.js; echo '</script>'; } >"$TMP/checker.html"

# check NAME FILE: loads FILE and returns 0 when the page passes.
check() {
	local name=$1 file=$2 prof
	prof=$(mktemp -d)
	set +e
	timeout 180 chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--allow-file-access-from-files --window-size=1400,1000 --hide-scrollbars \
		--user-data-dir="$prof" --enable-logging=stderr --v=0 --virtual-time-budget=60000 \
		--dump-dom "file://$file" >"$TMP/$name.dom" 2>"$TMP/$name.log"
	local rc=$?
	set -e
	rm -rf "$prof"
	local verdict
	verdict=$(sed -n 's/.*<pre id="browser-check">\(.*\)<\/pre>.*/\1/p' "$TMP/$name.dom" | sed 's/&quot;/"/g; s/&amp;/\&/g; s/&lt;/</g; s/&gt;/>/g')
	echo "test-browser: $name: chromium exit $rc; checker: ${verdict:-no verdict}"
	# Console messages (from scripts or from the browser, e.g. failed loads).
	if grep -E 'CONSOLE' "$TMP/$name.log"; then
		echo "test-browser: $name: console output above"
		return 1
	fi
	[ "$rc" -eq 0 ] && [[ $verdict == '{"ok":true,'* ]]
}

inject() { # inject SRC DST EXTRA_BODY_HTML [EXTRA_HEAD_HTML]
	sed -e "/<meta charset/r $TMP/checker.html" -e "s#<meta charset=\"utf-8\">#&${4:-}#" -e "s#</body>#$3</body>#" "$1" >"$2"
}

# A copy of the report whose figure STEM is changed by the sed script SED
# (in the SVG file and inline in the page): broken DIR STEM SED.
broken() {
	local dir=$TMP/$1 stem=$2 script=$3
	rm -rf "$dir"
	cp -r "$PAGE_DIR" "$dir"
	sed -i -e "$script" "$dir/$stem.svg"
	inject "$PAGE_DIR/index.html" "$dir/check.html" ""
}

inject "$PAGE_DIR/index.html" "$PAGE_DIR/check.html" ""
inject "$PAGE_DIR/index.html" "$PAGE_DIR/broken-image.html" '<img src="missing.png" alt="x">'
inject "$PAGE_DIR/index.html" "$PAGE_DIR/console-error.html" '<script>console.error("boom")</script>'
inject "$PAGE_DIR/index.html" "$PAGE_DIR/broken-svg-image.html" \
	'<svg width="20" height="20"><image href="data:image/png;base64,AAAA" width="10" height="10"/><path d="M0,0L9,9"/><text>x</text></svg>'
inject "$PAGE_DIR/index.html" "$PAGE_DIR/text-overflow.html" \
	'<svg width="60" height="20"><path d="M0,0L9,9"/><text x="30" y="15">capacity 10–3,000 requests</text></svg>'
# No @font-face for the page: the machine's fonts draw the inline SVGs.
sed -e '/@font-face{/,/^\t*}$/d' "$PAGE_DIR/index.html" >"$TMP/nofont.html"
inject "$TMP/nofont.html" "$PAGE_DIR/no-font.html" ""
# The first heat map's SVG file shifted by 20 pt against its PNG.
heat=$(basename "$(ls "$PAGE_DIR"/heatmap-1-*.svg | head -1)" .svg)
broken shifted "$heat" 's/viewBox="0 0 /viewBox="0 20 /'
# Two algorithms in one colour: the second algorithm's colour replaced by
# the first's in the trade-off SVG file.
trade=tradeoff-all
[ -f "$PAGE_DIR/$trade.svg" ] || trade=tradeoff
broken colours "$trade" 's/#332288/#CC6677/g'

# Names that are markup: the page must show them as text (an unescaped one
# would load an image or run a script, which the checker reports).
cat >"$TMP/markup.yaml" <<'EOF'
name: "markup <img src=x onerror=console.error('spec')>"
scenario:
  name: "<script>console.error('scenario')</script> & co"
  duration_s: 60
  clients:
    - name: "<img src=y onerror=console.error('client')>"
      class: legit
      segments: [[0, 20, 2], [20, 30, 12], [30, 60, 2]]
    - name: "abuser </svg><script>console.error('svg')</script>"
      class: abusive
      stage: none
      segments: [[0, 60, 9]]
sweep:
  - algorithm: sliding_window
    window_s: [30, 60]
    limit: {from: 10, to: 400, step: 10}
  - algorithm: token_bucket
    rate: [1, 2, 5]
    capacity: [10, 50, 100, 200]
EOF
"$BIN" run "$TMP/markup.yaml" --out "$TMP/markup" --quiet
"$BIN" report "$TMP/markup" --quiet
inject "$TMP/markup/report/index.html" "$TMP/markup/report/check.html" ""

# An incomplete run: its manifest and one clients part removed.
cp -r "$TMP/run" "$TMP/partial"
rm "$TMP/partial/manifest.json" "$TMP/partial/clients/part-000001.parquet"
fail=0
if "$BIN" report "$TMP/partial" --quiet 2>"$TMP/partial.err"; then
	echo "test-browser: FAIL: report accepted a run without its manifest"
	fail=1
elif ! grep -q "clients/part-000001.parquet" "$TMP/partial.err"; then
	echo "test-browser: FAIL: report's refusal does not name the missing part: $(cat "$TMP/partial.err")"
	fail=1
fi
# A finished run with a part deleted: exit 1, naming the command that
# recomputes it.
cp -r "$TMP/run" "$TMP/deleted"
rm -rf "$TMP/deleted/report"
rm "$TMP/deleted/points/part-000001.parquet"
set +e
"$BIN" report "$TMP/deleted" --quiet 2>"$TMP/deleted.err"
rc=$?
set -e
if [ "$rc" -ne 1 ] || ! grep -q -- "--out $TMP/deleted --resume" "$TMP/deleted.err"; then
	echo "test-browser: FAIL: a run with a part deleted: exit $rc: $(cat "$TMP/deleted.err")"
	fail=1
fi
partial=1
"$BIN" report "$TMP/partial" --allow-incomplete --quiet 2>/dev/null || {
	echo "test-browser: FAIL: report --allow-incomplete"
	fail=1 partial=0
}
# A phone: the page in a 390 px iframe (headless windows are at least 500 px
# wide); the checker inside posts its verdict up. Negatives: the page
# without its decision card or with one taller than a phone's screen,
# wider than the window, with figures drawn too small, with a raw bidi
# override, with an export menu that does nothing, without the picks' marks, with a frontier name meant for
# another algorithm, and without nginx's delay column.
phone() { # phone FRAME PAGE
	cat >"$1" <<HTML
<!DOCTYPE html><meta charset="utf-8"><title>390 px</title>
<iframe src="$(basename "$2")" style="width:390px;height:844px;border:0"></iframe>
<script>addEventListener("message", (e) => { const p = document.createElement("pre"); p.id = "browser-check"; p.textContent = e.data; document.body.appendChild(p); });</script>
HTML
}
phone "$PAGE_DIR/phone.html" "$PAGE_DIR/check.html"
# The decision card: missing; pushed below a phone's first screen; a
# page wider than the window; figures drawn too small on a desktop; a raw
# bidirectional override in the text.
sed -e '/<section id="pick"/,/<\/section>/d' "$PAGE_DIR/check.html" >"$PAGE_DIR/no-card.html"
sed -e 's#<h2>What to pick</h2>#&<div style="height:900px"></div>#' "$PAGE_DIR/check.html" >"$PAGE_DIR/tall-card.html"
phone "$PAGE_DIR/phone-tall-card.html" "$PAGE_DIR/tall-card.html"
inject "$PAGE_DIR/index.html" "$PAGE_DIR/sideways.html" '<div style="width:2400px">wide</div>'
inject "$PAGE_DIR/index.html" "$PAGE_DIR/small-figures.html" '' '<style>figure svg { width: 40% !important; }</style>'
inject "$PAGE_DIR/index.html" "$PAGE_DIR/bidi.html" "<p>admin$(printf '\u202e')gnp.exe</p>"
sed -e '/<script id="card-script">/,/<\/script>/d' "$PAGE_DIR/check.html" >"$PAGE_DIR/no-card-script.html"
sed -e '/<circle [^>]*data-kind="pick"/d' "$PAGE_DIR/check.html" >"$PAGE_DIR/no-picks.html"
sed -e 's/r="0" data-kind="frontier-name" data-algorithm="[a-z_]*"/r="0" data-kind="frontier-name" data-algorithm="nobody"/' "$PAGE_DIR/check.html" >"$PAGE_DIR/misnamed-frontier.html"
sed -e 's#<th class="num">delay mean / p99</th>#<th class="num">mean / p99</th>#g' "$PAGE_DIR/check.html" >"$PAGE_DIR/no-delay.html"
EXPECT='<script>window.EXPECT_INCOMPLETE = true</script>'
negs=("$PAGE_DIR/broken-image.html" "$PAGE_DIR/broken-svg-image.html" "$PAGE_DIR/console-error.html"
	"$PAGE_DIR/text-overflow.html" "$PAGE_DIR/no-font.html" "$TMP/shifted/check.html" "$TMP/colours/check.html"
	"$PAGE_DIR/no-card.html" "$PAGE_DIR/phone-tall-card.html" "$PAGE_DIR/sideways.html" "$PAGE_DIR/small-figures.html" "$PAGE_DIR/bidi.html"
	"$PAGE_DIR/no-card-script.html"
	"$PAGE_DIR/no-picks.html" "$PAGE_DIR/misnamed-frontier.html" "$PAGE_DIR/no-delay.html")
if [ "$partial" = 1 ]; then
	inject "$TMP/partial/report/index.html" "$TMP/partial/report/check.html" "" "$EXPECT"
	sed -e '/id="incomplete-run"/d' "$TMP/partial/report/index.html" >"$TMP/nobanner.html"
	inject "$TMP/nobanner.html" "$TMP/partial/report/no-banner.html" "" "$EXPECT"
	negs+=("$TMP/partial/report/no-banner.html")
fi

# Every page in its own Chromium, JOBS at a time (each check reads back
# every figure's pixels, so they run in parallel); the verdicts are printed
# in order once all are in. want: pass or fail.
JOBS=${TEST_BROWSER_JOBS:-4}
names=() files=() wants=()
add() { names+=("$1"); files+=("$2"); wants+=("$3"); }
add page "$PAGE_DIR/check.html" pass
add phone "$PAGE_DIR/phone.html" pass
add markup "$TMP/markup/report/check.html" pass
[ "$partial" = 1 ] && add incomplete "$TMP/partial/report/check.html" pass
for neg in "${negs[@]}"; do
	name=$(basename "$neg" .html)
	[ "$name" = check ] && name=$(basename "$(dirname "$neg")")
	add "$name" "$neg" fail
done
for i in "${!names[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
	( if check "${names[$i]}" "${files[$i]}" >"$TMP/${names[$i]}.out" 2>&1; then echo pass; else echo fail; fi >"$TMP/${names[$i]}.got" ) &
done
wait
for i in "${!names[@]}"; do
	name=${names[$i]}
	cat "$TMP/$name.out"
	got=$(cat "$TMP/$name.got")
	case "${wants[$i]}/$got" in
	pass/pass) ;;
	pass/*) echo "test-browser: FAIL: the page: $name"; fail=1 ;;
	fail/fail) echo "test-browser: ok: the checker rejects a page with: $name" ;;
	*) echo "test-browser: FAIL: the checker passed a page with: $name"; fail=1 ;;
	esac
done
# The explorer (explore.html) on the same run: scripts/test-explore.sh.
scripts/test-explore.sh "$BIN" "$TMP/run" || fail=1
# On a run whose settings tie on cut and missed (nginx queueing against
# nodelay, every rate at burst 0), the page picks among them as recommend
# does: false cut bounds alone, and missed targets across the tie groups.
"$BIN" run report/testdata/nginx-ties.yaml --out "$TMP/ties" --quiet
"$BIN" report "$TMP/ties" --quiet
RANDOM_CASES=0 FIXED="0:null 60:null 100:6 100:27 100:35 100:100" scripts/test-explore.sh "$BIN" "$TMP/ties" || fail=1
scripts/test-explore-more.sh "$BIN" || fail=1
[ "$fail" -eq 0 ] && echo "test-browser: PASS"
exit "$fail"
