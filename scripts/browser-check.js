// The report page's checker, injected into a copy of index.html by
// scripts/test-browser.sh and run by headless Chromium (with
// --allow-file-access-from-files, so that the figures' files beside the page
// can be read back as pixels). After load it writes its verdict into the DOM
// as JSON ({ok, info, bad, errors}) in a pre element with id browser-check.
//
// What it checks, as a reader's browser shows the page:
//   - every image loads, every inline SVG has paths and text, no error and
//     no console.error;
//   - every font the SVG text names is loaded from the page or the SVG
//     itself (never a fallback from the machine), and no text element's box
//     leaves its figure or overlaps another text of it;
//   - each figure's SVG file, drawn by the browser, matches the PNG
//     rendering of the same figure (cells, bars, text in the same places);
//   - every algorithm has its own colour: the pixels under the curve markers
//     of the trade-off plot, read from the browser's rendering;
//   - each marker identifies itself on hover (an SVG <title>);
//   - the incomplete-run banner is shown when the page is of an incomplete
//     run (window.EXPECT_INCOMPLETE) on the page and in every figure;
//   - the page never scrolls sideways, nor does a figure's box, at a
//     desktop's width and in a 390 px iframe (a phone), where figures scale
//     to the page's width; at a desktop's width figure text is drawn at
//     least MIN_TEXT_PX tall and at MIN_FONT_PX or more (its font size
//     times its SVG's scale; on a phone the smallest is recorded);
//   - the decision card comes before every figure and table, and on a
//     phone ends within the first screen; its export shows the target
//     chosen, and its copy button answers;
//   - no text of the page holds a raw bidirectional control character;
//   - every best setting of the best-settings list is marked on the
//     trade-off plot (a hover mark of kind "pick"), and each frontier
//     stretch's name lies nearest a stretch of its own algorithm;
//   - where nginx is in the run, the tables have a delay column.
// In an iframe, the verdict is also posted to the parent page.
(function () {
  'use strict';
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

  // Tolerances. PNG (gonum's rasteriser) and SVG (Skia) differ only in
  // anti-aliasing at edges: a pixel "differs" when a channel is off by more
  // than PIXEL_DIFF, and a figure may have at most MAX_DIFF_FRACTION of them.
  var PIXEL_DIFF = 96, MAX_DIFF_FRACTION = 0.02;
  var MIN_COLOUR_DISTANCE = 45; // between two algorithms' colours, Euclidean in RGB
  var TEXT_SLACK = 1.5;         // px a text box may pass its figure's edge
  var MIN_OVERLAP = 0.3;        // share of the smaller box two texts may not overlap
  var MIN_TEXT_PX = 8;          // the least height of a figure text's box
  var MIN_FONT_PX = 11;         // the least font size a figure text is drawn at, px

  function load(src) {
    return new Promise(function (ok) {
      var im = new Image();
      im.onload = function () { ok(im.naturalWidth > 0 ? im : null); };
      im.onerror = function () { ok(null); };
      im.src = src;
    });
  }
  function fetchText(src) {
    return new Promise(function (ok) {
      var x = new XMLHttpRequest();
      x.onload = function () { ok(x.responseText); };
      x.onerror = function () { ok(null); };
      x.open('GET', src);
      x.send();
    });
  }
  function pixels(img, w, h) {
    var c = document.createElement('canvas');
    c.width = w; c.height = h;
    var ctx = c.getContext('2d');
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, w, h);
    ctx.drawImage(img, 0, 0, w, h);
    return ctx.getImageData(0, 0, w, h).data;
  }
  function family(el) {
    return getComputedStyle(el).fontFamily.split(',')[0].replace(/["']/g, '').trim();
  }

  async function check() {
    var bad = [], info = {};
    // Images and inline SVGs.
    var imgs = document.images;
    for (var i = 0; i < imgs.length; i++) {
      if (!(imgs[i].complete && imgs[i].naturalWidth > 0)) bad.push('img ' + imgs[i].src.slice(0, 80));
    }
    var svgs = Array.prototype.slice.call(document.querySelectorAll('svg'));
    svgs.forEach(function (s, j) {
      var r = s.getBoundingClientRect();
      if (!(r.width > 0 && r.height > 0 && s.querySelector('path') && s.querySelector('text'))) bad.push('svg #' + j + ' is empty');
    });
    var inner = document.querySelectorAll('svg image');
    for (var k = 0; k < inner.length; k++) {
      var href = inner[k].getAttribute('href') || inner[k].getAttributeNS('http://www.w3.org/1999/xlink', 'href');
      if (!(await load(href))) bad.push('svg image #' + k);
    }

    // Fonts: loaded from an @font-face, not found on the machine.
    await document.fonts.ready;
    var faces = {};
    document.fonts.forEach(function (f) { if (f.status === 'loaded') faces[f.family.replace(/["']/g, '')] = true; });
    var fams = {};
    document.querySelectorAll('svg text').forEach(function (t) { fams[family(t)] = true; });
    Object.keys(fams).forEach(function (f) {
      if (!faces[f]) bad.push('font "' + f + '" of the figures is not loaded from an @font-face (the machine\'s or a fallback font is drawn)');
    });

    // Text boxes: inside their figure, not on top of each other (at a
    // desktop's width: a figure scaled to a phone's width draws its text
    // below the browser's least font size, wider than laid out).
    var phone = window.innerWidth <= 500;
    var overlaps = 0;
    svgs.forEach(function (s) {
      if (phone) return;
      var fig = s.closest('figure');
      var name = fig ? fig.id : 'svg';
      var sr = s.getBoundingClientRect();
      var boxes = [];
      s.querySelectorAll('text').forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (r.width === 0) return;
        if (r.left < sr.left - TEXT_SLACK || r.right > sr.right + TEXT_SLACK || r.top < sr.top - TEXT_SLACK || r.bottom > sr.bottom + TEXT_SLACK) {
          bad.push(name + ': text "' + t.textContent.slice(0, 40) + '" overflows the figure');
        }
        boxes.push({r: r, s: t.textContent});
      });
      for (var a = 0; a < boxes.length; a++) {
        for (var b = a + 1; b < boxes.length; b++) {
          var p = boxes[a].r, q = boxes[b].r;
          var w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
          var h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
          if (w <= 0 || h <= 0) continue;
          var small = Math.min(p.width * p.height, q.width * q.height);
          if (w * h > MIN_OVERLAP * small) {
            overlaps++;
            if (overlaps <= 10) bad.push(name + ': texts "' + boxes[a].s.slice(0, 30) + '" and "' + boxes[b].s.slice(0, 30) + '" overlap');
          }
        }
      }
    });
    info.textOverlaps = overlaps;

    // Each figure: its SVG file as the browser draws it against its PNG.
    var figs = Array.prototype.slice.call(document.querySelectorAll('figure[id^="fig-"]'));
    info.figures = figs.length;
    info.worstDiff = 0;
    for (var fi = 0; fi < figs.length; fi++) {
      var stem = figs[fi].id.slice(4);
      var png = await load(stem + '.png'), svg = await load(stem + '.svg');
      if (!png || !svg) { bad.push(stem + ': PNG or SVG file does not load'); continue; }
      var src = await fetchText(stem + '.svg');
      if (src !== null && src.indexOf('@font-face') < 0) bad.push(stem + '.svg: no embedded font');
      var w = png.naturalWidth, h = png.naturalHeight;
      var a1 = pixels(png, w, h), a2 = pixels(svg, w, h);
      var n = 0;
      for (var pi = 0; pi < a1.length; pi += 4) {
        if (Math.abs(a1[pi] - a2[pi]) > PIXEL_DIFF || Math.abs(a1[pi + 1] - a2[pi + 1]) > PIXEL_DIFF || Math.abs(a1[pi + 2] - a2[pi + 2]) > PIXEL_DIFF) n++;
      }
      var frac = n / (w * h);
      info.worstDiff = Math.max(info.worstDiff, Math.round(frac * 10000) / 10000);
      if (frac > MAX_DIFF_FRACTION) bad.push(stem + '.svg differs from ' + stem + '.png in ' + (100 * frac).toFixed(1) + '% of the pixels');
    }

    // Colours per algorithm, from the pixels under the trade-off plot's
    // curve markers; hover titles on every marker.
    var tf = document.getElementById('fig-tradeoff-all') || document.getElementById('fig-tradeoff');
    if (!tf) {
      bad.push('no trade-off figure');
    } else {
      var stem2 = tf.id.slice(4);
      var marks = tf.querySelectorAll('svg g.hover circle');
      var curve = tf.querySelectorAll('svg g.hover circle[data-kind="curve"]');
      if (curve.length === 0) bad.push(stem2 + ': no hover markers on the curves');
      marks.forEach(function (m) {
        var t = m.querySelector('title');
        if (!t || !t.textContent) bad.push(stem2 + ': a marker has no <title>');
      });
      var png2 = await load(stem2 + '.png'), svg2 = await load(stem2 + '.svg');
      if (png2 && svg2 && curve.length > 0) {
        var vb = tf.querySelector('svg').viewBox.baseVal;
        var pw = png2.naturalWidth, ph = png2.naturalHeight, kx = pw / vb.width, ky = ph / vb.height;
        var px = pixels(svg2, pw, ph);
        var votes = {};
        // Each marker sits on its own curve, so the commonest saturated
        // colour around its centre (glyph, line, value label) is the
        // algorithm's; each algorithm takes the commonest over its markers.
        curve.forEach(function (m) {
          var cx = Math.round(m.cx.baseVal.value * kx), cy = Math.round(m.cy.baseVal.value * ky);
          var near = {}, best = null;
          for (var dy = -4; dy <= 4; dy++) {
            for (var dx = -4; dx <= 4; dx++) {
              var x = cx + dx, y = cy + dy;
              if (x < 0 || y < 0 || x >= pw || y >= ph) continue;
              var o = 4 * (y * pw + x), r = px[o], g = px[o + 1], b = px[o + 2];
              if (Math.max(r, g, b) - Math.min(r, g, b) < 40) continue; // white, grey or black
              var c = r + ',' + g + ',' + b;
              near[c] = (near[c] || 0) + 1;
              if (!best || near[c] > near[best]) best = c;
            }
          }
          if (!best) return;
          var alg = m.getAttribute('data-algorithm');
          votes[alg] = votes[alg] || {};
          votes[alg][best] = (votes[alg][best] || 0) + 1;
        });
        var cols = {};
        Object.keys(votes).forEach(function (alg) {
          var best = null;
          Object.keys(votes[alg]).forEach(function (c) { if (!best || votes[alg][c] > votes[alg][best]) best = c; });
          cols[alg] = best.split(',').map(Number);
        });
        info.colours = cols;
        var algs = Object.keys(cols);
        for (var x1 = 0; x1 < algs.length; x1++) {
          for (var x2 = x1 + 1; x2 < algs.length; x2++) {
            var c1 = cols[algs[x1]], c2 = cols[algs[x2]];
            var d = Math.hypot(c1[0] - c2[0], c1[1] - c2[1], c1[2] - c2[2]);
            if (d < MIN_COLOUR_DISTANCE) bad.push(stem2 + ': ' + algs[x1] + ' and ' + algs[x2] + ' share a colour (' + c1 + ' vs ' + c2 + ')');
          }
        }
      }
    }

    // Sideways scrolling and text size (a phone shows the page at 390 px).
    var sw = document.scrollingElement.scrollWidth, iw = window.innerWidth;
    info.width = {scroll: sw, inner: iw};
    if (sw > iw) bad.push('the page scrolls sideways: ' + sw + ' px wide in a ' + iw + ' px window');
    document.querySelectorAll('figure .scroll').forEach(function (b) {
      if (b.scrollWidth > b.clientWidth + 1) bad.push((b.closest('figure').id) + ': its box scrolls sideways (' + b.scrollWidth + ' px in ' + b.clientWidth + ')');
    });
    var minText = Infinity, minFont = Infinity, small = 0, smallest = '';
    document.querySelectorAll('figure svg text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (!(r.width > 0) || t.textContent.trim() === '') return;
      minText = Math.min(minText, r.height);
      // The size drawn: the computed font size (user units) times the
      // scale from the SVG's viewBox to the screen.
      var m = t.getScreenCTM(), px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      if (px < MIN_FONT_PX - 0.05) {
        small++;
        if (px < minFont) smallest = (t.closest('figure').id) + ': "' + t.textContent.slice(0, 30) + '"';
      }
      minFont = Math.min(minFont, px);
    });
    info.minTextPx = Math.round(minText * 10) / 10;
    info.minFontPx = Math.round(minFont * 10) / 10;
    if (phone) {
      // Figures scale to a phone's width, their text with them: measured,
      // not yet held to the desktop's sizes.
      info.phoneSmallTexts = small;
    } else if (minText < MIN_TEXT_PX) {
      bad.push('figure text drawn ' + info.minTextPx + ' px tall, less than ' + MIN_TEXT_PX);
    }
    if (small > 0 && !phone) bad.push(small + ' figure texts drawn smaller than ' + MIN_FONT_PX + ' px, the smallest ' + info.minFontPx + ' px (' + smallest + ')');

    // The decision card: first on the page, and on a phone within the
    // first screen.
    var card = document.getElementById('pick');
    if (!card) {
      bad.push('no decision card');
    } else {
      var cr = card.getBoundingClientRect();
      info.cardBottom = Math.round(cr.bottom + window.scrollY);
      if (iw <= 500 && cr.bottom + window.scrollY > window.innerHeight) bad.push('the decision card ends at ' + info.cardBottom + ' px, below the first screen (' + window.innerHeight + ' px)');
      var first = document.querySelector('figure, table');
      if (first && first.compareDocumentPosition(card) & Node.DOCUMENT_POSITION_FOLLOWING) bad.push('the decision card comes after a figure or table');
    }

    // Its export: the target chosen shows its own configuration, and the
    // copy button copies it (or selects it for the reader to copy).
    var ex = document.querySelector('#pick .export');
    if (card && !ex) bad.push('the decision card has no export');
    if (ex) {
      ex.open = true;
      var sel = ex.querySelector('select'), pres = ex.querySelectorAll('pre');
      var k = (sel.selectedIndex + 1) % sel.options.length;
      sel.selectedIndex = k;
      sel.dispatchEvent(new Event('change'));
      var shown = Array.prototype.filter.call(pres, function (p) { return !p.hidden; });
      if (shown.length !== 1 || shown[0] !== pres[k] || shown[0].textContent.indexOf('--to ' + sel.value) < 0) {
        bad.push('the card\'s export for ' + sel.value + ' is not the one shown');
      }
      ex.querySelector('button').click();
      await new Promise(function (ok) { setTimeout(ok, 300); });
      var said = ex.querySelector('.copied').textContent;
      info.copy = said;
      if (!said) bad.push('the card\'s copy button says nothing');
      ex.open = false;
    }

    // No raw bidirectional control in the page's text (a name is shown
    // with its controls visible, never applied).
    var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, null), node, bidi = 0;
    while ((node = walker.nextNode())) {
      var tag = node.parentNode && node.parentNode.nodeName;
      if (tag === 'SCRIPT' || tag === 'STYLE' || (node.parentNode && node.parentNode.id === 'browser-check')) continue;
      if (/[\u202A-\u202E\u2066-\u2069]/.test(node.nodeValue)) bidi++;
    }
    if (bidi > 0) bad.push(bidi + ' text nodes hold a raw bidirectional control character');

    // Picks on the trade-off plots: one mark per setting the list names.
    var picks = document.querySelectorAll('ul.pick li');
    var named = 0;
    picks.forEach(function (li) { if (li.textContent.indexOf('which cuts') >= 0) named++; });
    ['fig-tradeoff', 'fig-tradeoff-all'].forEach(function (id) {
      var f = document.getElementById(id);
      if (!f) return;
      var pm = f.querySelectorAll('svg g.hover circle[data-kind="pick"]');
      info.picks = pm.length;
      if (named > 0 && pm.length === 0) bad.push(id + ': the best settings are not marked on the plot');
      if (pm.length > named) bad.push(id + ': ' + pm.length + ' pick marks for ' + named + ' picks');
      // Frontier names: nearest a horizontal stretch of their algorithm.
      var corners = Array.prototype.map.call(f.querySelectorAll('svg g.hover circle[data-kind="frontier"]'), function (m) {
        var r = m.getBoundingClientRect();
        return {x: r.left + r.width / 2, y: r.top + r.height / 2, alg: m.getAttribute('data-algorithm')};
      }).sort(function (a, b) { return a.x - b.x; });
      var texts = Array.prototype.slice.call(f.querySelectorAll('svg text'));
      f.querySelectorAll('svg g.hover circle[data-kind="frontier-name"]').forEach(function (m) {
        var want = m.getAttribute('data-algorithm'), label = m.querySelector('title').textContent;
        var mr = m.getBoundingClientRect(), best = null, bd = Infinity;
        texts.forEach(function (t) {
          if (t.textContent !== label) return;
          var r = t.getBoundingClientRect(), d = Math.hypot(r.right - mr.left, r.top - mr.top);
          if (d < bd) { bd = d; best = r; }
        });
        if (!best) { bad.push(id + ': frontier name ' + label + ' not drawn'); return; }
        var cx = (best.left + best.right) / 2, cy = (best.top + best.bottom) / 2, near = null, nd = Infinity;
        for (var i = 0; i + 1 < corners.length; i++) {
          var a = corners[i], b = corners[i + 1];
          var dx = cx < a.x ? a.x - cx : cx > b.x ? cx - b.x : 0;
          var d = Math.hypot(dx, cy - a.y);
          if (d < nd) { nd = d; near = a.alg; }
        }
        if (near !== null && near !== want) bad.push(id + ': the frontier name "' + label + '" lies nearest a stretch of ' + near);
      });
    });

    // nginx's delay, wherever nginx is listed.
    var tables = Array.prototype.slice.call(document.querySelectorAll('table'));
    tables.forEach(function (tb) {
      if (!/nginx/.test(tb.querySelector('tbody') ? tb.querySelector('tbody').textContent : '')) return;
      var hs = Array.prototype.map.call(tb.querySelectorAll('thead th'), function (h) { return h.textContent; });
      if (hs.indexOf('algorithm') >= 0 && hs.indexOf('parameters') >= 0 && !hs.some(function (h) { return /delay/.test(h); })) {
        bad.push('table "' + (tb.caption ? tb.caption.textContent.slice(0, 40) : '') + '" lists nginx without its delay');
      }
    });

    // The incomplete-run banner.
    var banner = document.getElementById('incomplete-run');
    if (window.EXPECT_INCOMPLETE) {
      var br = banner && banner.getBoundingClientRect();
      if (!banner || !(br.height > 0) || banner.textContent.indexOf('INCOMPLETE RUN') < 0) bad.push('no incomplete-run banner on the page');
      svgs.forEach(function (s, j) {
        if (s.closest('figure') && s.textContent.indexOf('INCOMPLETE RUN') < 0) bad.push((s.closest('figure').id) + ': no incomplete-run banner');
      });
    } else if (banner) {
      bad.push('an incomplete-run banner on a complete run');
    }

    info.img = imgs.length;
    info.svg = svgs.length;
    return {ok: bad.length === 0 && errors.length === 0 && svgs.length > 0, info: info, bad: bad.slice(0, 40), errors: errors};
  }

  window.addEventListener('load', function () {
    check().catch(function (e) {
      return {ok: false, bad: ['checker failed: ' + e], errors: errors};
    }).then(function (v) {
      var out = document.createElement('pre');
      out.id = 'browser-check';
      out.textContent = JSON.stringify(v);
      document.body.appendChild(out);
      if (window.parent !== window) window.parent.postMessage(out.textContent, '*');
    });
  });
})();
