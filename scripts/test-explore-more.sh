#!/usr/bin/env bash
# Checks explore.html's further metrics and bounds in headless Chromium, on
# two small runs: one with nginx's delay, clients that react to rejections
# (amplification, retry latency) and a penalty box (block_s), one whose
# requests carry costs (and a penalty box). On each, the page must show the
# further metrics the run has (the selected setting's table, the
# neighbours' columns) and offer a bound for each that recommend has a flag
# for; for 20 random sets of bounds (values taken from the settings' own,
# so bounds fall exactly on them too), the best setting and the best of
# each algorithm must equal `ratesweep recommend --format json`'s with the
# matching flags (--max-false-cut-cost, --max-legit-blocked-s,
# --max-amplification, --max-legit-delay-p99), and so must the nearest
# miss when nothing meets them, and so must the best setting's neighbours
# (a step to or from an optional parameter's default among them). Some
# sets must change recommend's choice
# against the same bounds without the further ones, and
# a copy of the page that ignores the further bounds must fail.
#
# Usage: scripts/test-explore-more.sh [BIN]   (BIN default bin/ratesweep).
# SEED=N fixes the bounds (default: random, printed).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin/ratesweep}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SEED=${SEED:-$RANDOM}
echo "test-explore-more: SEED=$SEED"

cat >"$TMP/react.yaml" <<'YAML'
name: react
replicates: 3
scenario:
  name: clients that answer back
  duration_s: 300
  arrivals: poisson
  clients:
    - name: portal
      class: legit
      segments: [[0, 300, 4]]
      on_reject: {retry: backoff, max_retries: 5, base_s: 0.5, cap_s: 30, jitter: full, honour_retry_after: true}
    - name: mobile app
      class: legit
      segments: [[0, 150, 2], [150, 200, 12], [200, 300, 2]]
      on_reject: {retry: immediate, max_retries: 3}
    - name: scraper
      class: abusive
      stage: code
      segments: [[40, 200, 18]]
      on_reject: {retry: immediate, max_retries: 10}
sweep:
  - {algorithm: token_bucket, rate: [2, 5, 10], capacity: [20, 60, 100], block_s: [0, 30]}
  - {algorithm: nginx, rate: [5, 10], burst: [10, 50, 200], delay: [0, 1000000]}
  - {algorithm: fixed_window, window_s: 60, limit: {from: 100, to: 1000, step: 100}}
YAML
cat >"$TMP/cost.yaml" <<'YAML'
name: cost
replicates: 2
scenario:
  name: requests that cost
  duration_s: 300
  arrivals: poisson
  clients:
    - {name: app, class: legit, segments: [[0, 300, 2]]}
    - {name: reports, class: legit, segments: [[0, 300, 1]], cost: 6}
    - {name: scraper, class: abusive, stage: none, segments: [[0, 300, 8]], cost: 3}
sweep:
  - {algorithm: token_bucket, rate: [4, 8, 16], capacity: {from: 6, to: 40, step: 2}, block_s: [0, 20]}
  - {algorithm: fixed_window, window_s: 10, limit: {from: 20, to: 200, step: 20}}
YAML

# values PAGE: the page's embedded further columns, as JSON {col: [values]}.
values() {
	node -e '
		const fs = require("fs"), zlib = require("zlib");
		const m = /<script type="application\/octet-stream" id="data">([^<]*)<\/script>/.exec(fs.readFileSync(process.argv[1], "utf8"));
		const D = JSON.parse(zlib.gunzipSync(Buffer.from(m[1].trim(), "base64")));
		const out = {};
		for (const k of ["dm", "dp", "am", "rd", "cu", "cup", "bs", "bn"]) if (D[k]) out[k] = D[k];
		console.log(JSON.stringify(out));' "$1"
}

fail=0
RANDOM=$SEED
for name in react cost; do
	RUN=$TMP/$name
	"$BIN" run "$TMP/$name.yaml" --out "$RUN" --quiet --force
	"$BIN" report "$RUN" --quiet 2>/dev/null
	PAGE=$RUN/report/explore.html
	values "$PAGE" >"$TMP/values.json"
	case $name in
	react)
		bounds=(bs am rd)
		rows='["Delay added to requests admitted (nginx), mean / p99, s", "Legitimate amplification, attempts per intended request", "Added latency p99 of legitimate requests (retries), s", "Time legitimate clients spent blocked, s", "Penalty-box blocks started"]'
		heads='["Delay mean / p99, s", "Amplification", "Retry latency p99, s", "Blocked, s", "Blocks"]'
		;;
	cost)
		bounds=(cu bs)
		rows='["False cut cost, cost units (% of the legitimate cost)", "Time legitimate clients spent blocked, s", "Penalty-box blocks started"]'
		heads='["False cut cost", "Blocked, s", "Blocks"]'
		;;
	esac
	for b in "${bounds[@]}"; do
		jq -e --arg b "$b" 'has($b)' "$TMP/values.json" >/dev/null || { echo "test-explore-more: FAIL: $name: the page holds no $b"; fail=1; }
	done
	cases=()
	changed=0
	for _ in $(seq 20); do
		r=$((RANDOM % 2000)) # (a subshell would draw from a seed of its own)
		fc=$(awk -v v="$r" 'BEGIN{printf "%g", v/100}') # 0–20 %
		args=(--max-false-cut "$fc%")
		# A bound on missed abuse half the time: settings that cut nothing
		# meet every further bound, so without it every set is feasible.
		mi=null
		if [ $((RANDOM % 2)) = 1 ]; then mi=$((RANDOM % 80)); args+=(--max-missed "$mi%"); fi
		base=("${args[@]}")
		more='{}'
		for b in "${bounds[@]}"; do
			[ $((RANDOM % 2)) = 1 ] || continue
			pct=false col=$b
			if [ "$b" = cu ] && [ $((RANDOM % 2)) = 1 ]; then pct=true col=cup; fi
			# A setting's own value, as JavaScript prints it (it reads back
			# to the same number in Go and in the page).
			k=$RANDOM
			v=$(jq -r --arg c "$col" --argjson k "$k" '.[$c] | .[$k % length]' "$TMP/values.json")
			case $b in
			cu) if [ "$pct" = true ]; then args+=(--max-false-cut-cost "$v%"); else args+=(--max-false-cut-cost "$v"); fi ;;
			bs) args+=(--max-legit-blocked-s "$v") ;;
			am) args+=(--max-amplification "$v") ;;
			rd) args+=(--max-legit-delay-p99 "$v") ;;
			esac
			more=$(jq -c --arg b "$b" --arg v "$v" --argjson p "$pct" '.[$b] = $v | if $b == "cu" then .cuPct = $p else . end' <<<"$more")
		done
		set +e
		"$BIN" recommend "$RUN" "${args[@]}" --format json >"$TMP/rec.json" 2>"$TMP/rec.err"
		rc=$?
		"$BIN" recommend "$RUN" "${args[@]:0:${#base[@]}}" --format json >"$TMP/rec0.json" 2>/dev/null
		set -e
		if [ "$rc" -gt 1 ]; then echo "test-explore-more: FAIL: recommend ${args[*]}: exit $rc: $(cat "$TMP/rec.err")"; fail=1; continue; fi
		pick() { jq -r '(.overall // .nearest_miss).policy' "$1"; }
		[ "$(pick "$TMP/rec.json")" = "$(pick "$TMP/rec0.json")" ] || changed=$((changed + 1))
		cases+=("$(jq -c --arg fc "$fc" --argjson mi "$mi" --argjson more "$more" \
			'{fc: $fc, mi: (if $mi == null then null else ($mi | tostring) end), cc: null, more: $more,
			  kind: (if .overall then "overall" else "nearest" end),
			  label: ((.overall // .nearest_miss).policy),
			  byAlg: ([(.by_algorithm // [])[] | {key: .algorithm, value: .policy}] | from_entries),
			  neighbours: (if .overall then ([.overall.neighbors // [] | .[].policy] | sort) else null end)}' "$TMP/rec.json")")
	done
	feasible=$(printf '%s\n' "${cases[@]}" | grep -c '"kind":"overall"' || true)
	echo "test-explore-more: $name: ${#cases[@]} bound sets, $feasible with a feasible setting (the others: the nearest miss), $changed of them change recommend's choice against the same bounds without the further ones"
	[ "$changed" -gt 0 ] || { echo "test-explore-more: FAIL: $name: no set of further bounds changed the choice"; fail=1; }
	{
		echo '<script>'
		echo "window.EXPLORE_CASES = [$(IFS=,; echo "${cases[*]}")];"
		echo "window.EXPLORE_ROWS = {rows: $rows, heads: $heads, bounds: $(printf '%s\n' "${bounds[@]}" | jq -R . | jq -sc .)};"
		cat scripts/explore-check.js
		echo '</script>'
	} >"$TMP/checker.html"
	for kind in page ignored; do
		edit=
		[ $kind = ignored ] && edit='s/if ((m = more(b, i)) >= 0)/if (false)/'
		sed -e "/<meta charset/r $TMP/checker.html" -e "$edit" "$PAGE" >"$RUN/report/explore-more.html"
		prof=$(mktemp -d)
		set +e
		timeout 300 chromium --headless --no-sandbox --disable-gpu --no-first-run \
			--disable-background-networking --disable-component-update --disable-sync \
			--window-size=1400,900 --hide-scrollbars --user-data-dir="$prof" \
			--enable-logging=stderr --v=0 --virtual-time-budget=120000 \
			--dump-dom "file://$RUN/report/explore-more.html" >"$TMP/dom" 2>"$TMP/log"
		rc=$?
		set -e
		rm -rf "$prof"
		verdict=$(sed -n 's/.*<pre id="explore-check">\(.*\)<\/pre>.*/\1/p' "$TMP/dom" | sed 's/&quot;/"/g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g')
		ok=false
		[ "$rc" -eq 0 ] && ! grep -q CONSOLE "$TMP/log" && [[ $verdict == '{"ok":true,'* ]] && ok=true
		case $kind/$ok in
		page/true) echo "test-explore-more: $name: ok: ${verdict:0:200}" ;;
		page/*) echo "test-explore-more: FAIL: $name: chromium exit $rc: ${verdict:-no verdict}"; grep CONSOLE "$TMP/log" | head -5; fail=1 ;;
		ignored/false) echo "test-explore-more: $name: ok: the checker rejects a page that ignores the further bounds" ;;
		ignored/true)
			if [ "$changed" -gt 0 ]; then echo "test-explore-more: FAIL: $name: the checker passed a page that ignores the further bounds"; fail=1; fi ;;
		esac
	done
	rm -f "$RUN/report/explore-more.html"
done
[ "$fail" -eq 0 ] && echo "test-explore-more: PASS"
exit "$fail"
