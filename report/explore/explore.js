// explore.js: the explorer's script (no library, no network). It reads the
// data embedded in #data (gzip, base64, columnar JSON), draws every setting
// on a canvas, and chooses the best setting for the constraints exactly as
// `ratesweep recommend` does (internal/choice: feasibility on the
// replicate means, the objective, the other metric within 1e-9, then the
// tie rank D.tr the report computed by the same rule: less delay, the
// simpler setting, the one inside its swept ranges, the earlier point; the
// nearest miss by summed violation, then in the same order).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  let D, N, X, Y, frontier = [], shown = [], sel = -1, hover = -1, pick = -1, feas = null, scale = null;
  // vis[i] is 1 when setting i is shown and chosen from: its algorithm is
  // ticked and its parameters lie in the ranges. P are the numeric
  // parameters: {name, vals (NaN where a setting does not take it),
  // distinct (sorted), lo, hi (indices into distinct)}.
  let vis = null, P = [];
  const colour = (a) => D.colors[a] || "#999999";

  async function load() {
    const str = atob($("data").textContent.trim()), bin = new Uint8Array(str.length);
    for (let k = 0; k < str.length; k++) bin[k] = str.charCodeAt(k);
    const stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  const label = (i) => D.algs[D.alg[i]] + (D.label[i] ? " " + D.label[i] : "");
  const fmt = (v, d = 2) => (v === null || v === undefined || Number.isNaN(v) ? "–" : Number(v).toFixed(d));
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");

  // frontierOf is the report's Pareto frontier (report/frontier.go): by x,
  // then y, then point order; a point stays when its y beats every point of
  // smaller x; a point equal in both to a kept one is its tie.
  function frontierOf() {
    const idx = Array.from({ length: N }, (_, i) => i);
    idx.sort((a, b) => X[a] - X[b] || Y[a] - Y[b] || a - b);
    const out = [];
    let bestY = Infinity;
    for (const i of idx) {
      const k = out.length ? out[out.length - 1] : -1;
      if (k >= 0 && X[k] === X[i] && Y[k] === Y[i]) continue;
      if (Y[i] < bestY) { out.push(i); bestY = Y[i]; }
    }
    return out;
  }

  // better is recommend's order: the smaller objective, then the smaller
  // tie metric (values within 1e-9 are equal), then the smaller tie rank;
  // at equal ranks the earlier point stays.
  function better(o, t, r, bo, bt, br) {
    const eps = 1e-9;
    if (Math.abs(o - bo) > eps) return o < bo;
    if (Math.abs(t - bt) > eps) return t < bt;
    return r < br;
  }

  // choose returns recommend's choices for bounds {fc, mi, cc} (percent;
  // null: not constrained) among the settings of the algorithms shown.
  function choose(b) {
    const objLC = b.mi !== null;
    const obj = objLC ? D.lc : D.mp, tie = objLC ? D.mp : D.lc, tr = D.tr;
    const before = (i, j) => better(obj[i], tie[i], tr[i], obj[j], tie[j], tr[j]);
    let overall = -1, near = -1, nearV = 0, count = 0;
    const byAlg = new Map(), ok = new Uint8Array(N);
    for (let i = 0; i < N; i++) {
      if (!vis[i]) continue;
      let v = 0, good = true, m;
      if (b.fc !== null) { m = b.fc - D.lc[i]; if (m < 0) { good = false; v += -m; } }
      if (b.mi !== null) { m = b.mi - D.mp[i]; if (m < 0) { good = false; v += -m; } }
      if (b.cc !== null) { m = b.cc - D.wc[i]; if (m < 0) { good = false; v += -m; } }
      if ((m = more(b, i)) >= 0) { good = false; v = m; }
      if (near < 0 || v < nearV || (v === nearV && before(i, near))) { near = i; nearV = v; }
      if (!good) continue;
      ok[i] = 1; count++;
      const a = D.alg[i], j = byAlg.get(a);
      if (j === undefined || before(i, j)) byAlg.set(a, i);
      if (overall < 0 || before(i, overall)) overall = i;
    }
    return { overall, near, byAlg, ok, count, objective: objLC ? "legit_cut_pct" : "missed_pct" };
  }

  function bounds() {
    const v = (id) => ($(id + "-on") && !$(id + "-on").checked ? null : parseFloat($(id + "-n").value));
    const b = { fc: v("fc"), mi: v("mi"), cc: v("cc") };
    for (const k in b) if (b[k] !== null && !(b[k] >= 0 && b[k] <= 100)) b[k] = null;
    // The further bounds the run has metrics for: {id: bound or null},
    // idPct for the cost bound in % (else cost units), and more: the
    // bounds set, as more() checks them.
    b.more = [];
    for (const c of MORE) {
      b[c.id] = null;
      if (!D[c.col] || !$(c.id + "-on").checked) continue;
      const x = parseFloat($(c.id + "-n").value), pct = !!c.pctCol && $(c.id + "-u").value === "pct";
      if (!(x >= c.min && x < Infinity) || (pct && x > 100)) continue;
      b[c.id] = x;
      if (c.pctCol) b[c.id + "Pct"] = pct;
      b.more.push({ v: pct ? D[c.pctCol] : D[c.col], bound: x, pp: pct, early: c.id === "cu" });
    }
    return b;
  }

  // MORE are the bounds on further metrics, each shown when the run has
  // its metric (D[col]): recommend's flags, in the order recommend checks
  // them. A bound in % (pctCol) is on D[pctCol], else on D[col].
  const MORE = [
    { id: "cu", col: "cu", pctCol: "cup", min: 0, flag: "--max-false-cut-cost",
      label: "Max false cut cost" },
    { id: "bs", col: "bs", min: 0, flag: "--max-legit-blocked-s",
      label: "Max time legitimate clients spend blocked, s (summed over them)" },
    { id: "am", col: "am", min: 1, flag: "--max-amplification",
      label: "Max legitimate amplification, attempts per intended request" },
    { id: "rd", col: "rd", min: 0, flag: "--max-legit-delay-p99",
      label: "Max added latency p99 of legitimate requests (retries), s" },
  ];

  // more checks setting i against the further bounds (b.more), as
  // recommend does (recommend/cost.go, blocked.go, reactions.go): a bound
  // holds when bound − value >= 0 (a NaN value misses it). It returns -1
  // when every further bound holds, else the violation of all the bounds,
  // summed in recommend's order (false cut, cost, missed, client cut, time
  // blocked, amplification, retry latency) and units: percentage points
  // for a bound in %, else the shortfall as a share of the bound (of at
  // least 1).
  function more(b, i) {
    if (!b.more || !b.more.length) return -1;
    let bad = false;
    for (const c of b.more) if (!(c.bound - c.v[i] >= 0)) bad = true;
    if (!bad) return -1;
    let v = 0;
    const add = (m, pp, bound) => { if (m < 0) v += pp ? -m : -m / Math.max(1, bound); };
    const further = (early) => { for (const c of b.more) if (c.early === early) add(c.bound - c.v[i], c.pp, c.bound); };
    if (b.fc !== null) add(b.fc - D.lc[i], true);
    further(true);
    if (b.mi !== null) add(b.mi - D.mp[i], true);
    if (b.cc !== null) add(b.cc - D.wc[i], true);
    further(false);
    return v;
  }

  let choice = null;
  function update() {
    const b = bounds();
    choice = choose(b);
    feas = choice.ok;
    feasGen++;
    pick = choice.overall >= 0 ? choice.overall : choice.near;
    const p = $("pick");
    p.dataset.label = pick >= 0 ? label(pick) : "";
    p.dataset.kind = choice.overall >= 0 ? "overall" : pick >= 0 ? "nearest" : "";
    p.innerHTML = pick < 0 ? "No algorithm shown." : choice.overall >= 0
      ? `${esc(label(pick))} <span class="note">(${choice.count} of ${N} settings meet the constraints)</span>`
      : `Nothing meets the constraints; nearest miss: ${esc(label(pick))}`;
    $("objective").textContent = "Chosen: the least " + (choice.objective === "legit_cut_pct"
      ? "legitimate cut % (missed % breaks ties)" : "missed % (legitimate cut % breaks ties)") +
      " among the settings meeting every bound, on the means over replicates; further ties go to the setting that adds less delay, then the simpler one, then the one inside its swept ranges, then the earlier.";
    const rows = [];
    for (let a = 0; a < D.algs.length; a++) {
      const i = choice.byAlg.get(a);
      if (i === undefined) continue;
      rows.push(`<tr data-alg="${esc(D.algs[a])}" data-label="${esc(label(i))}"><td><span class="sw" style="background:${colour(a)}"></span> ${esc(D.algs[a])}</td>` +
        `<td><button class="link" data-i="${i}">${esc(D.label[i] || label(i))}</button></td><td class="n">${fmt(D.lc[i])}</td><td class="n">${fmt(D.mp[i])}</td></tr>`);
    }
    $("by-alg").tBodies[0].innerHTML = rows.join("") || `<tr><td colspan="4">No setting of the algorithms shown meets the constraints.</td></tr>`;
    if (sel < 0 && pick >= 0) select(pick); else { if (sel >= 0) showNeighbours(); draw(); }
  }

  // Chart. A drag fires many input events: the choice and the tables follow
  // each at once, the canvas is redrawn once per frame.
  let frame = 0;
  function draw() {
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; paint(); });
  }
  const PAD = { l: 46, r: 10, t: 10, b: 38 };
  // The points are pixels written into two layer canvases (ImageData: no
  // path of 50,000 rectangles per frame): the faint layer holds every
  // setting shown and is redrawn only when the settings shown or the
  // chart's size change; the solid layer holds those meeting the
  // constraints and is redrawn when the choice changes. A frame copies the
  // two layers and draws the axes, constraint lines, frontier and rings
  // over them. visGen and feasGen count the changes of vis and feas.
  let visGen = 0, feasGen = 0, xmax = 1, byAlgIdx = [], rgba = [];
  const layers = { faint: null, solid: null };
  function layer(name, W, H, dpr, w, h, key, pass) {
    let l = layers[name];
    if (!l || l.W !== W || l.H !== H) {
      const cv = document.createElement("canvas");
      cv.width = W; cv.height = H;
      const g = cv.getContext("2d");
      const img = g.createImageData(W, H);
      l = layers[name] = { W, H, cv, g, img, px: new Uint32Array(img.data.buffer), key: null };
    }
    if (l.key === key) return l.cv;
    l.key = key;
    const px = l.px, s = Math.max(1, Math.round(3 * dpr));
    const kx = (w - PAD.l - PAD.r) / xmax, ky = (h - PAD.t - PAD.b) / 100, x0 = PAD.l - 1.5, y0 = h - PAD.b - 1.5;
    px.fill(0);
    for (let a = 0; a < byAlgIdx.length; a++) {
      if (!shown[a]) continue;
      const col = rgba[a], idx = byAlgIdx[a];
      for (let k = 0; k < idx.length; k++) {
        const i = idx[k];
        if (!vis[i] || (pass && !(feas && feas[i] === 1))) continue;
        const x = Math.round((x0 + X[i] * kx) * dpr), y = Math.round((y0 - Y[i] * ky) * dpr);
        if (!(x >= 0 && y >= 0 && x + s <= W && y + s <= H)) continue;
        for (let r = 0, o = y * W + x; r < s; r++, o += W) px.fill(col, o, o + s);
      }
    }
    l.g.putImageData(l.img, 0, 0);
    return l.cv;
  }
  // rgbaOf is colour "#rrggbb" as an opaque pixel of a Uint32Array over
  // ImageData (bytes r, g, b, a in memory order).
  function rgbaOf(c) {
    const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(c) || [0, "99", "99", "99"];
    const bytes = new Uint8Array([parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16), 255]);
    return new Uint32Array(bytes.buffer)[0];
  }
  function paint() {
    const c = $("chart"), dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth, h = c.clientHeight;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const ymax = 100;
    const sx = (v) => PAD.l + (v / xmax) * (w - PAD.l - PAD.r), sy = (v) => h - PAD.b - (v / ymax) * (h - PAD.t - PAD.b);
    scale = { sx, sy };
    // Axes and ticks.
    g.strokeStyle = "#999"; g.fillStyle = "#333"; g.font = "11px system-ui, sans-serif"; g.lineWidth = 1;
    g.beginPath(); g.moveTo(PAD.l, PAD.t); g.lineTo(PAD.l, h - PAD.b); g.lineTo(w - PAD.r, h - PAD.b); g.stroke();
    g.textAlign = "center"; g.textBaseline = "top";
    for (const t of ticks(xmax, Math.max(2, Math.floor((w - PAD.l) / 70)))) { g.fillText(t, sx(t), h - PAD.b + 4); }
    g.fillText("legitimate requests cut, %", PAD.l + (w - PAD.l - PAD.r) / 2, h - 14);
    g.textAlign = "right"; g.textBaseline = "middle";
    for (const t of ticks(ymax, 5)) g.fillText(t, PAD.l - 4, sy(t));
    g.save(); g.translate(11, PAD.t + (h - PAD.t - PAD.b) / 2); g.rotate(-Math.PI / 2); g.textAlign = "center"; g.fillText("abusive requests missed, %", 0, 0); g.restore();
    // Constraint lines.
    const b = bounds();
    g.setLineDash([4, 3]); g.strokeStyle = "#b00020";
    if (b.fc !== null && b.fc <= xmax) { g.beginPath(); g.moveTo(sx(b.fc), PAD.t); g.lineTo(sx(b.fc), h - PAD.b); g.stroke(); }
    if (b.mi !== null) { g.beginPath(); g.moveTo(PAD.l, sy(b.mi)); g.lineTo(w - PAD.r, sy(b.mi)); g.stroke(); }
    g.setLineDash([]);
    // Points: every setting shown faint, those meeting the constraints
    // solid over them.
    const W = c.width, H = c.height;
    if (W > 0 && H > 0) {
      g.globalAlpha = 0.18;
      g.drawImage(layer("faint", W, H, dpr, w, h, visGen, false), 0, 0, w, h);
      g.globalAlpha = 0.9;
      g.drawImage(layer("solid", W, H, dpr, w, h, visGen + "/" + feasGen, true), 0, 0, w, h);
      g.globalAlpha = 1;
    }
    // The frontier.
    g.strokeStyle = "#000"; g.lineWidth = 1.5; g.beginPath();
    frontier.forEach((i, k) => (k ? g.lineTo(sx(X[i]), sy(Y[i])) : g.moveTo(sx(X[i]), sy(Y[i]))));
    g.stroke();
    const ring = (i, r, col, lw) => { if (i < 0) return; g.strokeStyle = col; g.lineWidth = lw; g.beginPath(); g.arc(sx(X[i]), sy(Y[i]), r, 0, 2 * Math.PI); g.stroke(); };
    ring(pick, 8, "#000", 2.5);
    ring(sel, 5, "#005fcc", 2);
    ring(hover, 5, "#555", 1);
  }

  function ticks(max, n) {
    const step0 = max / n, p = Math.pow(10, Math.floor(Math.log10(step0)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= step0) || step0;
    const out = [];
    for (let v = 0; v <= max + 1e-9; v += step) out.push(+v.toFixed(6));
    return out;
  }

  function nearest(px, py) {
    let best = -1, bd = 144; // within 12 px
    for (let i = 0; i < N; i++) {
      if (!vis[i]) continue;
      const dx = scale.sx(X[i]) - px, dy = scale.sy(Y[i]) - py, d = dx * dx + dy * dy;
      if (d < bd) { bd = d; best = i; }
    }
    return best;
  }

  const interval = (arr, i) => (arr ? ` (95% ${fmt(arr[2 * i])}–${fmt(arr[2 * i + 1])})` : "");

  function select(i) {
    sel = i;
    const s = $("sel");
    s.dataset.label = i >= 0 ? label(i) : "";
    s.dataset.id = i >= 0 ? String(D.id[i]) : "";
    s.textContent = i >= 0 ? label(i) : "Nothing selected.";
    const reps = D.reps;
    const rows = [
      ["Legitimate cut, %", fmt(D.lc[i], 3) + interval(D.lci, i)],
      ["Missed, %", fmt(D.mp[i], 3) + interval(D.mpi, i)],
      ["Worst legitimate client cut, %", fmt(D.wc[i], 3) + interval(D.wci, i)],
      ["Caught, %", fmt(D.cp[i], 3)],
      ["False cut, requests", fmt(D.fc[i], 1)],
      ["Missed, requests", fmt(D.mi[i], 1)],
      ...moreRows(i),
      ["Point id", String(D.id[i])],
      ["Replicates", reps + (reps >= 3 ? " (intervals: Student's t)" : " (no interval under 3)")],
    ];
    if (choice && feas) rows.push(["Meets the constraints", feas[i] ? "yes" : "no"]);
    $("metrics").innerHTML = rows.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td class="n">${esc(v)}</td></tr>`).join("");
    showNeighbours();
    showExport();
    showClients();
    showPeaks(true);
    for (const tr of $("by-alg").querySelectorAll("tr[data-label]")) tr.classList.toggle("sel", tr.dataset.label === label(i));
    draw();
  }

  function showExport() {
    const t = $("target").value, texts = D.exports[t] || {};
    const text = texts[sel];
    $("export-text").textContent = text || "";
    $("export-note").textContent = text !== undefined
      ? `What \`ratesweep export --to ${t} --run RUN_DIR\` prints for this setting (embedded for the settings on the frontier only).`
      : `Not embedded for this setting (only settings on the frontier carry one${D.total > N ? "; in a run this large, 5 of them spread along it" : ""}); run: ratesweep export --to ${t} --run ${D.run} '${label(sel)}'`;
  }

  function showClients() {
    const t = $("clients"), note = $("clients-note");
    if (!D.clients || !D.clients.length) { t.innerHTML = ""; note.textContent = "The run has no client rows."; return; }
    if (!D.cuts_all && !D.cut_at.includes(sel)) {
      t.innerHTML = ""; note.textContent = "In a run this large, per-client cuts are embedded for the settings on the frontier or on an algorithm's frontier only."; return;
    }
    const cut = cutsAt(sel);
    const order = D.clients.map((_, k) => k).sort((a, b) => cut[b] - cut[a] || a - b).slice(0, 50);
    note.textContent = `Requests offered and cut per client, means over replicates` +
      (D.clients_total > D.clients.length ? `; ${D.clients.length} of ${D.clients_total} clients embedded (those any setting cuts most)` : "") +
      (D.clients.length > 50 ? "; the 50 most cut shown" : "") + "." +
      (D.explain ? ` Why each is cut (shared key, window shape, burst or sustained rate): ratesweep explain ${D.run} '${label(sel)}'` : "");
    t.innerHTML = `<caption>Clients at ${esc(label(sel))}</caption><thead><tr><th scope="col">Client</th><th scope="col">Class</th><th scope="col" class="n">Offered</th><th scope="col" class="n">Cut</th><th scope="col" class="n">Cut %</th></tr></thead><tbody>` +
      order.map((k) => `<tr><td>${esc(D.clients[k])}</td><td>${esc(D.client_class[k])}</td><td class="n">${fmt(D.client_offered[k], 0)}</td><td class="n">${fmt(cut[k], 1)}</td><td class="n">${fmt(D.client_offered[k] ? (100 * cut[k]) / D.client_offered[k] : 0)}</td></tr>`).join("") + "</tbody>";
  }

  // cutsAt is each embedded client's requests cut at setting i (means over
  // replicates), or null where the page holds none for i.
  function cutsAt(i) {
    if (!D.clients || (!D.cuts_all && !D.cut_at.includes(i))) return null;
    const cut = new Float64Array(D.clients.length), pairs = D.cuts[i];
    if (pairs) for (let k = 0; k < pairs.length; k += 2) cut[pairs[k]] = pairs[k + 1];
    return cut;
  }

  // params reads the numeric parameters from the labels and draws a pair
  // of linked sliders (least and greatest value shown) for each that takes
  // two values or more.
  function params() {
    const byName = new Map();
    for (let i = 0; i < N; i++) {
      const l = D.label[i];
      if (!l) continue;
      for (const tok of l.split(" ")) {
        const e = tok.indexOf("=");
        if (e < 0) continue;
        const v = Number(tok.slice(e + 1));
        if (!Number.isFinite(v)) continue;
        const k = tok.slice(0, e);
        let p = byName.get(k);
        if (!p) { p = { name: k, vals: new Float64Array(N).fill(NaN) }; byName.set(k, p); }
        p.vals[i] = v;
      }
    }
    // A label without an optional parameter its algorithm takes means the
    // parameter's default (D.defaults).
    if (D.defaults) for (let i = 0; i < N; i++) {
      const df = D.defaults[D.alg[i]];
      for (const k in df) { const p = byName.get(k); if (p && Number.isNaN(p.vals[i])) p.vals[i] = df[k]; }
    }
    P = [...byName.values()];
    for (const p of P) {
      const set = new Set();
      for (let i = 0; i < N; i++) if (!Number.isNaN(p.vals[i])) set.add(p.vals[i]);
      p.distinct = [...set].sort((a, b) => a - b);
      p.lo = 0; p.hi = p.distinct.length - 1;
    }
    const ranged = P.filter((p) => p.distinct.length > 1);
    if (!ranged.length) return;
    $("params").hidden = false;
    $("param-list").innerHTML = ranged.map((p) => {
      const n = esc(p.name), m = p.distinct.length - 1;
      return `<div class="prange" data-param="${n}"><span id="pr-${n}">${n}</span>` +
        `<div class="pair"><input type="range" id="plo-${n}" min="0" max="${m}" step="1" value="0" aria-label="${n}: least value shown">` +
        `<span id="plo-${n}-v"></span></div>` +
        `<div class="pair"><input type="range" id="phi-${n}" min="0" max="${m}" step="1" value="${m}" aria-label="${n}: greatest value shown">` +
        `<span id="phi-${n}-v"></span></div></div>`;
    }).join("");
    for (const p of ranged) {
      const lo = $("plo-" + p.name), hi = $("phi-" + p.name);
      const sync = (moved) => {
        p.lo = +lo.value; p.hi = +hi.value;
        if (p.lo > p.hi) { if (moved === lo) { p.hi = p.lo; hi.value = p.hi; } else { p.lo = p.hi; lo.value = p.lo; } }
        const f = (v) => String(v);
        $("plo-" + p.name + "-v").textContent = "from " + f(p.distinct[p.lo]);
        $("phi-" + p.name + "-v").textContent = "to " + f(p.distinct[p.hi]);
        lo.setAttribute("aria-valuetext", f(p.distinct[p.lo]));
        hi.setAttribute("aria-valuetext", f(p.distinct[p.hi]));
      };
      lo.addEventListener("input", () => { sync(lo); filter(); });
      hi.addEventListener("input", () => { sync(hi); filter(); });
      p.sync = sync;
      sync(null);
    }
    $("params-reset").addEventListener("click", () => {
      for (const p of ranged) { $("plo-" + p.name).value = 0; $("phi-" + p.name).value = p.distinct.length - 1; p.sync(null); }
      filter();
    });
  }

  // filter recomputes vis from the algorithms ticked and the ranges.
  function filter() {
    const act = P.filter((p) => p.distinct.length > 1 && (p.lo > 0 || p.hi < p.distinct.length - 1))
      .map((p) => [p.vals, p.distinct[p.lo], p.distinct[p.hi]]);
    for (let i = 0; i < N; i++) {
      let ok = shown[D.alg[i]];
      for (let k = 0; ok && k < act.length; k++) {
        const v = act[k][0][i];
        ok = Number.isNaN(v) || (v >= act[k][1] && v <= act[k][2]);
      }
      vis[i] = ok ? 1 : 0;
    }
    visGen++;
    update();
  }

  // neighboursOf lists the settings equal to i but for one parameter, at
  // its next lower and next higher value among the settings held (recommend's
  // neighbours): [{param, j}], in the order of i's label, then the
  // parameters i leaves at their default.
  const nbCache = new Map();
  function groupKey(i, name) {
    return D.alg[i] + "|" + D.label[i].split(" ").filter((t) => !t.startsWith(name + "=")).join(" ");
  }
  function neighboursOf(i) {
    const out = [], names = [];
    for (const tok of (D.label[i] || "").split(" ")) { const e = tok.indexOf("="); if (e > 0) names.push(tok.slice(0, e)); }
    const df = D.defaults ? D.defaults[D.alg[i]] : null;
    if (df) for (const k in df) if (!names.includes(k)) names.push(k); // at their default
    for (const name of names) {
      const p = P.find((q) => q.name === name);
      if (!p || Number.isNaN(p.vals[i])) continue;
      let m = nbCache.get(p.name);
      if (!m) {
        m = new Map();
        for (let j = 0; j < N; j++) {
          if (Number.isNaN(p.vals[j])) continue;
          const k = groupKey(j, p.name);
          let a = m.get(k);
          if (!a) m.set(k, (a = []));
          a.push(j);
        }
        for (const a of m.values()) a.sort((x, y) => p.vals[x] - p.vals[y]);
        nbCache.set(p.name, m);
      }
      const a = m.get(groupKey(i, p.name)), k = a.indexOf(i);
      for (const j of [a[k - 1], a[k + 1]]) if (j !== undefined) out.push({ param: p.name, j });
    }
    return out;
  }

  function showNeighbours() {
    const nb = neighboursOf(sel), t = $("neighbours"), mc = moreCols();
    $("neighbours-note").textContent = nb.length
      ? "The settings one grid step away in one parameter (as recommend lists them), with the change against this one in percentage points" +
        (D.total > N ? "; only those this page holds." : ".")
      : "No setting of the run differs from this one in a single parameter" + (D.total > N ? " among those this page holds." : ".");
    const d = (v) => (v > 0 ? "+" : "") + fmt(v);
    t.innerHTML = nb.length ? `<caption>Neighbours of ${esc(label(sel))}</caption><thead><tr><th scope="col">Parameter</th><th scope="col">Setting</th>` +
      `<th scope="col" class="n">False cut %</th><th scope="col" class="n">Missed %</th><th scope="col" class="n">Δ cut</th><th scope="col" class="n">Δ missed</th>` +
      mc.map((c) => `<th scope="col" class="n">${esc(c.head)}</th>`).join("") + `<th scope="col">Meets the constraints</th></tr></thead><tbody>` +
      nb.map(({ param, j }) => `<tr data-label="${esc(label(j))}"><td>${esc(param)}</td><td><button class="link" data-i="${j}">${esc(D.label[j])}</button></td>` +
        `<td class="n">${fmt(D.lc[j])}</td><td class="n">${fmt(D.mp[j])}</td><td class="n">${d(D.lc[j] - D.lc[sel])}</td><td class="n">${d(D.mp[j] - D.mp[sel])}</td>` +
        mc.map((c) => `<td class="n">${esc(c.cell(j))}</td>`).join("") +
        `<td>${feas && feas[j] ? "yes" : "no"}</td></tr>`).join("") + "</tbody>" : "";
  }

  // showPeaks draws the threshold view of a window setting: each client's
  // most requests in any window of the setting's length, against a
  // threshold (reset to the setting's limit when the setting changes).
  let peakAt = null;
  function showPeaks(reset) {
    const t = $("peaks"), note = $("peaks-note"), ctl = $("peaks-controls");
    const p = (name) => { const q = P.find((x) => x.name === name); return q ? q.vals[sel] : NaN; };
    const W = p("window_s"), L = p("limit");
    const w = D.peak_windows ? D.peak_windows.indexOf(W) : -1;
    if (sel < 0 || !D.window[D.alg[sel]] || Number.isNaN(W) || Number.isNaN(L) || w < 0 || !D.clients.length) {
      t.innerHTML = ""; ctl.hidden = true; peakAt = null;
      note.textContent = !D.peaks ? "Peak rates need the scenario's per-second rates: a replayed log's run has none here."
        : sel >= 0 && D.window[D.alg[sel]] && !Number.isNaN(W) ? `No peak rates embedded for windows of ${W} s.`
        : "For a window algorithm's setting (a limit of requests per window), this shows each client's busiest window against a threshold.";
      return;
    }
    ctl.hidden = false;
    const peaks = D.peaks[w];
    if (reset || !peakAt || peakAt.sel !== sel) {
      let mx = L;
      for (const v of peaks) mx = Math.max(mx, v);
      $("th-r").max = String(Math.ceil(mx * 1.05));
      $("th-r").value = $("th-n").value = String(L);
      peakAt = { sel, W, L, mx };
    }
    let th = parseFloat($("th-n").value);
    if (!(th >= 0)) th = L;
    $("th-n").previousElementSibling.setAttribute("aria-valuetext", `${th} requests per ${W} s`);
    const cut = cutsAt(sel);
    let nl = 0, na = 0;
    for (let k = 0; k < peaks.length; k++) if (peaks[k] > th) { if (D.client_class[k] === "abusive") na++; else nl++; }
    $("peaks-sum").textContent = `At ${th} requests per ${W} s, ${nl} legitimate and ${na} abusive client${nl + na === 1 ? "" : "s"} of ${peaks.length} ` +
      `go over it in some window; the setting's limit is ${L}.`;
    note.textContent = `Each client's most requests offered in any ${Math.max(1, Math.ceil(W))} s (the scenario's rates), the busiest 50 first, against a ` +
      `threshold you can move (it starts at the setting's limit). A client over the limit is one this setting can cut; the Cut column is what it cut (means over replicates).`;
    const order = peaks.map((_, k) => k).sort((a, b) => peaks[b] - peaks[a] || a - b).slice(0, 50);
    const mx = peakAt.mx || 1, pc = (v) => Math.min(100, (100 * v) / mx).toFixed(1) + "%";
    t.innerHTML = `<caption>Busiest ${W} s per client, against ${th}</caption><thead><tr><th scope="col">Client</th><th scope="col">Class</th>` +
      `<th scope="col" class="n">Peak</th><th scope="col">Against the threshold</th><th scope="col" class="n">Cut</th></tr></thead><tbody>` +
      order.map((k) => `<tr class="${peaks[k] > th ? "over" : ""}" data-over="${peaks[k] > th ? 1 : 0}" data-cut="${cut ? cut[k] : ""}"><td>${esc(D.clients[k])}</td><td>${esc(D.client_class[k])}</td>` +
        `<td class="n">${fmt(peaks[k], 0)}</td><td class="bar"><div class="barbox" role="img" aria-label="${fmt(peaks[k], 0)} ${peaks[k] > th ? "over" : "within"} ${th}">` +
        `<div class="fill" style="width:${pc(peaks[k])};background:${D.client_class[k] === "abusive" ? "#d55e00" : "#0072b2"}"></div><div class="th" style="left:${pc(th)}"></div></div></td>` +
        `<td class="n">${cut ? fmt(cut[k], 1) : "–"}</td></tr>`).join("") + "</tbody>";
  }

  // moreControls draws an input pair, off at first, for each further
  // bound the run has a metric for; the value starts at the largest any
  // setting has (the cost bound: in % of the legitimate cost).
  function moreControls() {
    const html = [];
    for (const c of MORE) {
      const col = D[c.col];
      if (!col) continue;
      const top = (a) => { let x = c.min; for (let i = 0; i < N; i++) if (a[i] > x) x = a[i]; return x; };
      const hi = c.pctCol ? Math.min(100, Math.ceil(top(D[c.pctCol]))) || 1 : +(top(col) * 1.01 + 0.01).toPrecision(3);
      c.max = hi;
      const name = esc(c.label);
      html.push(`<div class="bound" data-bound="${c.id}"><label><input type="checkbox" id="${c.id}-on"> ${name}` +
        (c.pctCol ? ` (<code>${c.flag}</code>)</label><select id="${c.id}-u" aria-label="${name}: unit" disabled><option value="pct">% of the legitimate cost offered</option><option value="n">cost units</option></select>` : ` (<code>${c.flag}</code>)</label>`) +
        `<div class="pair"><input type="range" id="${c.id}-r" aria-label="${name} slider" min="${c.min}" max="${hi}" step="any" value="${hi}" disabled>` +
        `<input type="number" id="${c.id}-n" aria-label="${name}" min="${c.min}" step="any" value="${hi}" disabled></div></div>`);
    }
    $("more-bounds").innerHTML = html.join("");
    for (const c of MORE) {
      if (!D[c.col]) continue;
      const r = $(c.id + "-r"), n = $(c.id + "-n"), on = $(c.id + "-on"), u = $(c.id + "-u");
      r.addEventListener("input", () => { n.value = r.value; update(); });
      n.addEventListener("input", () => { r.value = n.value; update(); });
      on.addEventListener("change", () => { r.disabled = n.disabled = !on.checked; if (u) u.disabled = !on.checked; update(); });
      if (u) u.addEventListener("change", () => {
        // The slider's range follows the unit: % of the cost, or cost units.
        let x = c.min;
        const a = u.value === "pct" ? D[c.pctCol] : D[c.col];
        for (let i = 0; i < N; i++) if (a[i] > x) x = a[i];
        r.max = String(u.value === "pct" ? Math.min(100, Math.ceil(x)) || 1 : Math.ceil(x) || 1);
        r.value = n.value = r.max;
        update();
      });
    }
  }

  // moreRows are the further metrics of setting i the run has, for the
  // selected setting's table: [name, value].
  function moreRows(i) {
    const rows = [];
    if (D.dm) rows.push(["Delay added to requests admitted (nginx), mean / p99, s", fmt(D.dm[i], 3) + " / " + fmt(D.dp[i], 3)]);
    if (D.am) rows.push(["Legitimate amplification, attempts per intended request", fmt(D.am[i], 4)]);
    if (D.rd) rows.push(["Added latency p99 of legitimate requests (retries), s", fmt(D.rd[i], 3)]);
    if (D.cu) rows.push(["False cut cost, cost units (% of the legitimate cost)", fmt(D.cu[i], 1) + " (" + fmt(D.cup[i], 3) + "%)"]);
    if (D.bs) rows.push(["Time legitimate clients spent blocked, s", fmt(D.bs[i], 1)]);
    if (D.bn) rows.push(["Penalty-box blocks started", fmt(D.bn[i], 1)]);
    return rows;
  }

  // moreCols are the further metrics the run has, as neighbour table
  // columns: {head, cell(j)}.
  function moreCols() {
    const out = [];
    if (D.dm) out.push({ head: "Delay mean / p99, s", cell: (j) => fmt(D.dm[j], 2) + " / " + fmt(D.dp[j], 2) });
    if (D.am) out.push({ head: "Amplification", cell: (j) => fmt(D.am[j], 3) });
    if (D.rd) out.push({ head: "Retry latency p99, s", cell: (j) => fmt(D.rd[j], 2) });
    if (D.cu) out.push({ head: "False cut cost", cell: (j) => fmt(D.cu[j], 1) });
    if (D.bs) out.push({ head: "Blocked, s", cell: (j) => fmt(D.bs[j], 1) });
    if (D.bn) out.push({ head: "Blocks", cell: (j) => fmt(D.bn[j], 1) });
    return out;
  }

  function wire() {
    for (const id of ["fc", "mi", "cc"]) {
      const r = $(id + "-r"), n = $(id + "-n"), on = $(id + "-on");
      r.addEventListener("input", () => { n.value = r.value; update(); });
      n.addEventListener("input", () => { r.value = n.value; update(); });
      if (on) on.addEventListener("change", () => { r.disabled = n.disabled = !on.checked; update(); });
    }
    const c = $("chart");
    c.addEventListener("pointermove", (e) => {
      const r = c.getBoundingClientRect(), i = nearest(e.clientX - r.left, e.clientY - r.top);
      if (i === hover) return;
      hover = i;
      const tip = $("tip");
      if (i < 0) { tip.hidden = true; } else {
        tip.hidden = false;
        tip.innerHTML = `${esc(label(i))}<br>cut ${fmt(D.lc[i])}% · missed ${fmt(D.mp[i])}%`;
        tip.style.left = Math.min(e.clientX - r.left + 12, c.clientWidth - 200) + "px";
        tip.style.top = e.clientY - r.top + 12 + "px";
      }
      draw();
    });
    c.addEventListener("pointerleave", () => { hover = -1; $("tip").hidden = true; draw(); });
    c.addEventListener("click", (e) => { const r = c.getBoundingClientRect(), i = nearest(e.clientX - r.left, e.clientY - r.top); if (i >= 0) select(i); });
    c.addEventListener("keydown", (e) => {
      if (!frontier.length || !["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"].includes(e.key)) return;
      e.preventDefault();
      const k = frontier.indexOf(sel), step = e.key === "ArrowRight" || e.key === "ArrowDown" ? 1 : -1;
      const to = e.key === "Home" ? 0 : e.key === "End" ? frontier.length - 1 : k < 0 ? 0 : k + step;
      select(frontier[Math.max(0, Math.min(frontier.length - 1, to))]);
    });
    $("pick-select").addEventListener("click", () => { if (pick >= 0) select(pick); });
    $("neighbours").addEventListener("click", (e) => { const b = e.target.closest("button[data-i]"); if (b) select(+b.dataset.i); });
    $("th-r").addEventListener("input", () => { $("th-n").value = $("th-r").value; showPeaks(false); });
    $("th-n").addEventListener("input", () => { $("th-r").value = $("th-n").value; showPeaks(false); });
    $("by-alg").addEventListener("click", (e) => { const b = e.target.closest("button[data-i]"); if (b) select(+b.dataset.i); });
    $("target").addEventListener("change", showExport);
    window.addEventListener("resize", draw);
  }

  async function main() {
    const t0 = performance.now();
    performance.mark("explore-script");
    D = await load();
    performance.mark("explore-data");
    N = D.id.length;
    X = D.px || D.lc; Y = D.py || D.mp;
    shown = D.algs.map(() => true);
    byAlgIdx = D.algs.map(() => []);
    for (let i = 0; i < N; i++) byAlgIdx[D.alg[i]].push(i);
    rgba = D.algs.map((_, a) => rgbaOf(colour(a)));
    let xm = 0;
    for (let i = 0; i < N; i++) if (X[i] > xm) xm = X[i];
    xmax = xm > 0 ? xm * 1.02 : 1;
    frontier = frontierOf();
    $("algs").insertAdjacentHTML("beforeend", D.algs.map((a, k) =>
      `<label><input type="checkbox" data-alg="${k}" checked><span class="sw" style="background:${colour(k)}"></span>${esc(a)}</label>`).join(""));
    $("algs").addEventListener("change", (e) => { const k = e.target.dataset.alg; if (k !== undefined) { shown[+k] = e.target.checked; filter(); } });
    vis = new Uint8Array(N).fill(1);
    params();
    if (D.total > N) {
      const n = $("sample-note");
      n.hidden = false;
      n.textContent = `This page holds ${N} of the run's ${D.total} settings: the ${D.choosable} that some constraints can choose ` +
        `(so the best setting is the one recommend chooses from the whole run, whichever algorithms are shown), the frontiers, ` +
        `and an even sample of the others for the picture. With parameter ranges narrowed, the choice is among the settings held here; ` +
        `neighbours, exports and per-client cuts of settings not held are not shown.`;
    }
    $("target").innerHTML = D.targets.map((t) => `<option>${esc(t)}</option>`).join("");
    let lcMax = 0;
    for (let i = 0; i < N; i++) lcMax = Math.max(lcMax, D.lc[i]);
    $("fc-r").max = String(Math.min(100, Math.ceil(lcMax)));
    moreControls();
    wire();
    update();
    window.explore = {
      frontierIds: frontier.map((i) => D.id[i]), choose, bounds, settings: N, renderMs: performance.now() - t0,
      // The values a parameter's sliders step through (their positions).
      paramValues: (name) => { const p = P.find((q) => q.name === name); return p ? p.distinct.slice() : []; },
    };
    document.body.dataset.ready = "1";
    document.body.dataset.renderMs = String(Math.round(performance.now() - t0));
    document.body.dataset.clients = String(D.clients_total || 0);
    performance.mark("explore-ready");
    document.dispatchEvent(new Event("explore-ready"));
  }
  main().catch((e) => { console.error("explore: " + e.name + ": " + e.message); document.body.insertAdjacentHTML("afterbegin", `<p class="banner">The explorer failed: ${esc(e.message)}</p>`); });
})();
