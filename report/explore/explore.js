// explore.js: the explorer's script (no library, no network). It reads the
// data embedded in #data (gzip, base64, columnar JSON), draws every setting
// on a canvas, and chooses the best setting for the constraints exactly as
// `ratesweep recommend` does (recommend/recommend.go: feasibility on the
// replicate means, the objective, the tie on the other metric within 1e-9,
// then the earlier point; the nearest miss by summed violation).
"use strict";
(function () {
  const COLOURS = ["#332288", "#CC6677", "#117733", "#DDCC77", "#88CCEE", "#882255", "#44AA99", "#999933", "#AA4499", "#555555"];
  const $ = (id) => document.getElementById(id);
  let D, N, X, Y, frontier = [], shown = [], sel = -1, hover = -1, pick = -1, feas = null, scale = null;

  async function load() {
    const b64 = $("data").textContent.trim();
    const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
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
  // tie metric; values within 1e-9 are equal and the earlier point stays.
  function better(o, t, bo, bt) {
    const eps = 1e-9;
    if (Math.abs(o - bo) > eps) return o < bo;
    return t < bt - eps;
  }

  // choose returns recommend's choices for bounds {fc, mi, cc} (percent;
  // null: not constrained) among the settings of the algorithms shown.
  function choose(b) {
    const objLC = b.mi !== null;
    const obj = objLC ? D.lc : D.mp, tie = objLC ? D.mp : D.lc;
    let overall = -1, near = -1, nearV = 0, count = 0;
    const byAlg = new Map(), ok = new Uint8Array(N);
    for (let i = 0; i < N; i++) {
      if (!shown[D.alg[i]]) continue;
      let v = 0, good = true, m;
      if (b.fc !== null) { m = b.fc - D.lc[i]; if (m < 0) { good = false; v += -m; } }
      if (b.mi !== null) { m = b.mi - D.mp[i]; if (m < 0) { good = false; v += -m; } }
      if (b.cc !== null) { m = b.cc - D.wc[i]; if (m < 0) { good = false; v += -m; } }
      if (near < 0 || v < nearV || (v === nearV && better(obj[i], tie[i], obj[near], tie[near]))) { near = i; nearV = v; }
      if (!good) continue;
      ok[i] = 1; count++;
      const a = D.alg[i], j = byAlg.get(a);
      if (j === undefined || better(obj[i], tie[i], obj[j], tie[j])) byAlg.set(a, i);
      if (overall < 0 || better(obj[i], tie[i], obj[overall], tie[overall])) overall = i;
    }
    return { overall, near, byAlg, ok, count, objective: objLC ? "legit_cut_pct" : "missed_pct" };
  }

  function bounds() {
    const v = (id) => ($(id + "-on") && !$(id + "-on").checked ? null : parseFloat($(id + "-n").value));
    const b = { fc: v("fc"), mi: v("mi"), cc: v("cc") };
    for (const k in b) if (b[k] !== null && !(b[k] >= 0 && b[k] <= 100)) b[k] = null;
    return b;
  }

  let choice = null;
  function update() {
    const b = bounds();
    choice = choose(b);
    feas = choice.ok;
    pick = choice.overall >= 0 ? choice.overall : choice.near;
    const p = $("pick");
    p.dataset.label = pick >= 0 ? label(pick) : "";
    p.dataset.kind = choice.overall >= 0 ? "overall" : pick >= 0 ? "nearest" : "";
    p.innerHTML = pick < 0 ? "No algorithm shown." : choice.overall >= 0
      ? `${esc(label(pick))} <span class="note">(${choice.count} of ${N} settings meet the constraints)</span>`
      : `Nothing meets the constraints; nearest miss: ${esc(label(pick))}`;
    $("objective").textContent = "Chosen: the least " + (choice.objective === "legit_cut_pct"
      ? "legitimate cut % (missed % breaks ties)" : "missed % (legitimate cut % breaks ties)") +
      " among the settings meeting every bound, on the means over replicates; ties go to the earlier setting.";
    const rows = [];
    for (let a = 0; a < D.algs.length; a++) {
      const i = choice.byAlg.get(a);
      if (i === undefined) continue;
      rows.push(`<tr data-alg="${esc(D.algs[a])}" data-label="${esc(label(i))}"><td><span class="sw" style="background:${COLOURS[a % COLOURS.length]}"></span> ${esc(D.algs[a])}</td>` +
        `<td><button class="link" data-i="${i}">${esc(D.label[i] || label(i))}</button></td><td class="n">${fmt(D.lc[i])}</td><td class="n">${fmt(D.mp[i])}</td></tr>`);
    }
    $("by-alg").tBodies[0].innerHTML = rows.join("") || `<tr><td colspan="4">No setting of the algorithms shown meets the constraints.</td></tr>`;
    if (sel < 0 && pick >= 0) select(pick); else draw();
  }

  // Chart. A drag fires many input events: the choice and the tables follow
  // each at once, the canvas is redrawn once per frame.
  let frame = 0;
  function draw() {
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; paint(); });
  }
  const PAD = { l: 46, r: 10, t: 10, b: 38 };
  function paint() {
    const c = $("chart"), dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth, h = c.clientHeight;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    let xmax = 0;
    for (let i = 0; i < N; i++) if (X[i] > xmax) xmax = X[i];
    xmax = xmax > 0 ? xmax * 1.02 : 1;
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
    // Points: faint ones first, then those meeting the constraints.
    for (const pass of [0, 1]) {
      g.globalAlpha = pass ? 0.9 : 0.18;
      for (let i = 0; i < N; i++) {
        const a = D.alg[i];
        if (!shown[a] || (feas ? feas[i] === 1 : true) !== (pass === 1)) continue;
        g.fillStyle = COLOURS[a % COLOURS.length];
        g.fillRect(sx(X[i]) - 1.5, sy(Y[i]) - 1.5, 3, 3);
      }
    }
    g.globalAlpha = 1;
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
      if (!shown[D.alg[i]]) continue;
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
      ["Point id", String(D.id[i])],
      ["Replicates", reps + (reps >= 3 ? " (intervals: Student's t)" : " (no interval under 3)")],
    ];
    if (choice && feas) rows.push(["Meets the constraints", feas[i] ? "yes" : "no"]);
    $("metrics").innerHTML = rows.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td class="n">${esc(v)}</td></tr>`).join("");
    showExport();
    showClients();
    for (const tr of $("by-alg").querySelectorAll("tr[data-label]")) tr.classList.toggle("sel", tr.dataset.label === label(i));
    draw();
  }

  function showExport() {
    const t = $("target").value, texts = D.exports[t] || {};
    const text = texts[sel];
    $("export-text").textContent = text || "";
    $("export-note").textContent = text !== undefined
      ? `What \`ratesweep export --to ${t} --run RUN_DIR\` prints for this setting (embedded for the settings on the frontier only).`
      : `Not embedded for this setting (only the settings on the frontier carry one); run: ratesweep export --to ${t} --run ${D.run} '${label(sel)}'`;
  }

  function showClients() {
    const t = $("clients"), note = $("clients-note");
    if (!D.clients || !D.clients.length) { t.innerHTML = ""; note.textContent = "The run has no client rows."; return; }
    const pairs = D.cuts[sel];
    if (!D.cuts_all && !D.cut_at.includes(sel)) {
      t.innerHTML = ""; note.textContent = "In a run this large, per-client cuts are embedded for the settings on the frontier or on an algorithm's frontier only."; return;
    }
    const cut = new Float64Array(D.clients.length);
    if (pairs) for (let k = 0; k < pairs.length; k += 2) cut[pairs[k]] = pairs[k + 1];
    const order = D.clients.map((_, k) => k).sort((a, b) => cut[b] - cut[a] || a - b).slice(0, 50);
    note.textContent = `Requests offered and cut per client, means over replicates` +
      (D.clients_total > D.clients.length ? `; ${D.clients.length} of ${D.clients_total} clients embedded (those any setting cuts most)` : "") +
      (D.clients.length > 50 ? "; the 50 most cut shown" : "") + ".";
    t.innerHTML = `<caption>Clients at ${esc(label(sel))}</caption><thead><tr><th scope="col">Client</th><th scope="col">Class</th><th scope="col" class="n">Offered</th><th scope="col" class="n">Cut</th><th scope="col" class="n">Cut %</th></tr></thead><tbody>` +
      order.map((k) => `<tr><td>${esc(D.clients[k])}</td><td>${esc(D.client_class[k])}</td><td class="n">${fmt(D.client_offered[k], 0)}</td><td class="n">${fmt(cut[k], 1)}</td><td class="n">${fmt(D.client_offered[k] ? (100 * cut[k]) / D.client_offered[k] : 0)}</td></tr>`).join("") + "</tbody>";
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
    $("by-alg").addEventListener("click", (e) => { const b = e.target.closest("button[data-i]"); if (b) select(+b.dataset.i); });
    $("target").addEventListener("change", showExport);
    window.addEventListener("resize", draw);
  }

  async function main() {
    const t0 = performance.now();
    D = await load();
    N = D.id.length;
    X = D.px || D.lc; Y = D.py || D.mp;
    shown = D.algs.map(() => true);
    frontier = frontierOf();
    $("algs").insertAdjacentHTML("beforeend", D.algs.map((a, k) =>
      `<label><input type="checkbox" data-alg="${k}" checked><span class="sw" style="background:${COLOURS[k % COLOURS.length]}"></span>${esc(a)}</label>`).join(""));
    $("algs").addEventListener("change", (e) => { const k = e.target.dataset.alg; if (k !== undefined) { shown[+k] = e.target.checked; update(); } });
    $("target").innerHTML = D.targets.map((t) => `<option>${esc(t)}</option>`).join("");
    let lcMax = 0;
    for (let i = 0; i < N; i++) lcMax = Math.max(lcMax, D.lc[i]);
    $("fc-r").max = String(Math.min(100, Math.ceil(lcMax)));
    wire();
    update();
    window.explore = { frontierIds: frontier.map((i) => D.id[i]), choose, bounds, settings: N, renderMs: performance.now() - t0 };
    document.body.dataset.ready = "1";
    document.body.dataset.renderMs = String(Math.round(performance.now() - t0));
    document.dispatchEvent(new Event("explore-ready"));
  }
  main().catch((e) => { console.error("explore: " + e.name + ": " + e.message); document.body.insertAdjacentHTML("afterbegin", `<p class="banner">The explorer failed: ${esc(e.message)}</p>`); });
})();
