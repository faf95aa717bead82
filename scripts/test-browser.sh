#!/usr/bin/env bash
# Loads the default run's report page in headless Chromium and checks that
# every image loads (<img>, inline <svg>, and <image> inside the SVGs) and
# that the page logs nothing to the console and raises no error.
#
# Usage: scripts/test-browser.sh [BIN]   (BIN default: bin/ratesweep)
#
# Each run also checks the checker: three broken copies of the page (a missing
# image, a corrupt image inside an SVG, a console error) must fail, or the
# test fails.
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

# The checker runs first in <head> (after the charset): it records errors (capture phase, so
# failed resources count too) and console.error calls, then after load checks
# every image and writes its verdict into the DOM as <pre id="browser-check">.
cat >"$TMP/checker.html" <<'EOF'
<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    var t = e.target;
    if (t && t !== window) {
      var src = t.src || (t.href && t.href.baseVal) || (t.getAttribute && t.getAttribute('href')) || t.tagName;
      errors.push('resource failed: ' + String(src).slice(0, 80));
    } else {
      errors.push('error: ' + e.message);
    }
  }, true);
  var ce = console.error;
  console.error = function () {
    errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    ce.apply(console, arguments);
  };
  function loads(src) {
    return new Promise(function (ok) {
      var im = new Image();
      im.onload = function () { ok(im.naturalWidth > 0); };
      im.onerror = function () { ok(false); };
      im.src = src;
    });
  }
  window.addEventListener('load', function () {
    var bad = [], waits = [];
    var imgs = document.images;
    for (var i = 0; i < imgs.length; i++) {
      if (!(imgs[i].complete && imgs[i].naturalWidth > 0)) bad.push('img ' + imgs[i].src.slice(0, 80));
    }
    var svgs = document.querySelectorAll('svg');
    for (var j = 0; j < svgs.length; j++) {
      var r = svgs[j].getBoundingClientRect();
      if (!(r.width > 0 && r.height > 0 && svgs[j].querySelector('path') && svgs[j].querySelector('text'))) bad.push('svg #' + j + ' is empty');
    }
    var inner = document.querySelectorAll('svg image');
    Array.prototype.forEach.call(inner, function (im, k) {
      var href = im.getAttribute('href') || im.getAttributeNS('http://www.w3.org/1999/xlink', 'href');
      waits.push(loads(href).then(function (ok) { if (!ok) bad.push('svg image #' + k); }));
    });
    Promise.all(waits).then(function () {
      var out = document.createElement('pre');
      out.id = 'browser-check';
      out.textContent = JSON.stringify({ok: bad.length === 0 && errors.length === 0 && svgs.length > 0,
        img: imgs.length, svg: svgs.length, svgImage: inner.length, bad: bad, errors: errors});
      document.body.appendChild(out);
    });
  });
})();
</script>
EOF

# check NAME FILE: loads FILE and returns 0 when the page passes.
check() {
	local name=$1 file=$2 prof
	prof=$(mktemp -d)
	set +e
	timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$prof" --enable-logging=stderr --v=0 --virtual-time-budget=5000 \
		--dump-dom "file://$file" >"$TMP/$name.dom" 2>"$TMP/$name.log"
	local rc=$?
	set -e
	rm -rf "$prof"
	local verdict
	verdict=$(sed -n 's/.*<pre id="browser-check">\(.*\)<\/pre>.*/\1/p' "$TMP/$name.dom" | sed 's/&quot;/"/g')
	echo "test-browser: $name: chromium exit $rc; checker: ${verdict:-no verdict}"
	# Console messages (from scripts or from the browser, e.g. failed loads).
	if grep -E 'CONSOLE' "$TMP/$name.log"; then
		echo "test-browser: $name: console output above"
		return 1
	fi
	[ "$rc" -eq 0 ] && [[ $verdict == '{"ok":true,'* ]]
}

inject() { # inject SRC DST EXTRA_BODY_HTML
	sed -e "/<meta charset/r $TMP/checker.html" -e "s#</body>#$3</body>#" "$1" >"$2"
}

inject "$PAGE_DIR/index.html" "$PAGE_DIR/check.html" ""
inject "$PAGE_DIR/index.html" "$PAGE_DIR/broken-image.html" '<img src="missing.png" alt="x">'
inject "$PAGE_DIR/index.html" "$PAGE_DIR/console-error.html" '<script>console.error("boom")</script>'
inject "$PAGE_DIR/index.html" "$PAGE_DIR/broken-svg-image.html" \
	'<svg width="20" height="20"><image href="data:image/png;base64,AAAA" width="10" height="10"/><path d="M0,0L9,9"/><text>x</text></svg>'

fail=0
check page "$PAGE_DIR/check.html" || { echo "test-browser: FAIL: the report page"; fail=1; }
for neg in broken-image broken-svg-image console-error; do
	if check "$neg" "$PAGE_DIR/$neg.html"; then
		echo "test-browser: FAIL: the checker passed a page with a $neg"
		fail=1
	else
		echo "test-browser: ok: the checker rejects a page with a $neg"
	fi
done
[ "$fail" -eq 0 ] && echo "test-browser: PASS"
exit "$fail"
