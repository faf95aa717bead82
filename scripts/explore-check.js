// explore-check.js: injected into a copy of explore.html by
// scripts/test-explore.sh, in <head> before the page's own script. It
// records every attempt to reach the network (a resource the page loads,
// a request the page's Content-Security-Policy blocks), then drives the
// page as a user does (typing the bounds, ticking the boxes, the arrow
// keys on the chart, the proxy menu) and compares what the page shows
// with what the command line printed for the same run:
//   window.EXPLORE_CASES    constraint sets and `recommend --format json`'s picks
//   window.EXPLORE_FRONTIER frontier.csv's point ids, in order
//   window.EXPLORE_EXPORTS  {id, label, target, text} from `ratesweep export`
//   window.EXPLORE_ROWS     (optional) the names of the further metrics the
//                           selected setting's table and the neighbours'
//                           headers must show, and the bounds that must be
//                           offered ({rows, heads, bounds})
// A case's further bounds (c.more: {cu, cuPct, bs, am, rd}) are typed into
// their inputs; with window.EXPLORE_FRONTIER absent the frontier and the
// exports are not compared.
// The verdict goes into the DOM as a pre element with id explore-check
// holding JSON ({"ok": true or false, …}), and to the parent frame.
(function () {
  const errors = [], net = [];
  const t0 = performance.now();
  document.addEventListener("securitypolicyviolation", (e) => net.push("blocked " + e.blockedURI + " (" + e.violatedDirective + ")"));
  new PerformanceObserver((l) => { for (const e of l.getEntries()) net.push("loaded " + e.name); }).observe({ type: "resource", buffered: true });
  window.addEventListener("error", (e) => errors.push("error: " + (e.message || (e.target && (e.target.src || e.target.href)) || "?")), true);

  function set(id, v) {
    const n = document.getElementById(id);
    n.value = v;
    n.dispatchEvent(new Event("input", { bubbles: true }));
  }
  function tick(id, on) {
    const c = document.getElementById(id);
    if (c.checked !== on) { c.checked = on; c.dispatchEvent(new Event("change", { bubbles: true })); }
  }
  function key(el, k) { el.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true })); }

  function run() {
    // renderMs: the page's script start to ready; readyMs: navigation start to then
    // (both in Chromium's virtual time: an order, not a measure).
    const out = { ok: false, cases: 0, neighbours: 0, ranges: 0, peaks: 0, exports: 0, frontier: 0, renderMs: +document.body.dataset.renderMs, readyMs: Math.round(readyAt), checkMs: 0 };
    const fail = (m) => { if (errors.length < 20) errors.push(m); };
    for (const c of window.EXPLORE_CASES || []) {
      set("fc-n", c.fc);
      tick("mi-on", c.mi !== null); if (c.mi !== null) set("mi-n", c.mi);
      tick("cc-on", c.cc !== null); if (c.cc !== null) set("cc-n", c.cc);
      for (const id of ["cu", "bs", "am", "rd"]) {
        const v = c.more ? c.more[id] : undefined;
        if (!document.getElementById(id + "-on")) { if (v !== undefined && v !== null) fail(`no input for the bound ${id}`); continue; }
        tick(id + "-on", v !== undefined && v !== null);
        if (id === "cu" && v !== undefined && v !== null) {
          const u = document.getElementById("cu-u");
          u.value = c.more.cuPct ? "pct" : "n";
          u.dispatchEvent(new Event("change", { bubbles: true }));
        }
        if (v !== undefined && v !== null) set(id + "-n", v);
      }
      const p = document.getElementById("pick");
      const what = `fc ${c.fc} mi ${c.mi} cc ${c.cc}` + (c.more ? " " + JSON.stringify(c.more) : "");
      if (p.dataset.kind !== c.kind || p.dataset.label !== c.label)
        fail(`${what}: page picks ${p.dataset.kind} ${p.dataset.label}, recommend ${c.kind} ${c.label}`);
      const by = {};
      for (const tr of document.querySelectorAll("#by-alg tr[data-alg]")) by[tr.dataset.alg] = tr.dataset.label;
      const a = JSON.stringify(Object.entries(by).sort()), b = JSON.stringify(Object.entries(c.byAlg).sort());
      if (a !== b) fail(`${what}: best per algorithm ${a}, recommend ${b}`);
      if (c.neighbours) {
        // The best setting's neighbours, as recommend lists them.
        document.getElementById("pick-select").click();
        const nb = [...document.querySelectorAll("#neighbours tr[data-label]")].map((tr) => tr.dataset.label).sort();
        if (JSON.stringify(nb) !== JSON.stringify(c.neighbours)) fail(`${what}: neighbours of ${c.label}: page ${JSON.stringify(nb)}, recommend ${JSON.stringify(c.neighbours)}`);
        out.neighbours++;
        // Narrowing a parameter's range to the best setting's value keeps it
        // the best (the best of a subset that holds it).
        const tok = c.label.split(" ")[1] || "", [name, v] = tok.split("=");
        const vals = window.explore.paramValues(name), at = vals.indexOf(Number(v));
        const lo = document.getElementById("plo-" + name), hi = document.getElementById("phi-" + name);
        if (at >= 0 && lo && hi) {
          set("phi-" + name, at); set("plo-" + name, at);
          if (p.dataset.label !== c.label) fail(`${what}: with ${name} from ${v} to ${v} the page picks ${p.dataset.label}, not ${c.label}`);
          for (const tr of document.querySelectorAll("#by-alg tr[data-label]")) {
            const t = tr.dataset.label.split(" ").find((x) => x.startsWith(name + "="));
            if (t && t !== tok) fail(`${what}: with ${name} from ${v} to ${v} the page shows ${tr.dataset.label}`);
          }
          document.getElementById("params-reset").click();
          out.ranges++;
        }
      }
      out.cases++;
    }
    // The further metrics: rows of the selected setting's table, columns
    // of the neighbours' table, and the bounds offered.
    const want2 = window.EXPLORE_ROWS;
    if (want2) {
      document.getElementById("pick-select").click();
      const rows = [...document.querySelectorAll("#metrics th")].map((th) => th.textContent);
      for (const r of want2.rows) if (!rows.includes(r)) fail(`the selected setting's table has no row ${JSON.stringify(r)}: ${JSON.stringify(rows)}`);
      const heads = [...document.querySelectorAll("#neighbours th")].map((th) => th.textContent);
      for (const h of want2.heads) if (!heads.includes(h)) fail(`the neighbours' table has no column ${JSON.stringify(h)}: ${JSON.stringify(heads)}`);
      for (const id of ["cu", "bs", "am", "rd"]) {
        if (want2.bounds.includes(id) !== !!document.getElementById(id + "-on")) fail(`the bound ${id} is ${want2.bounds.includes(id) ? "missing" : "offered"}`);
      }
      out.rows = rows.length;
    }
    // The frontier drawn against frontier.csv.
    const got = (window.explore && window.explore.frontierIds) || [];
    const want = window.EXPLORE_FRONTIER || [];
    out.frontier = got.length;
    if (window.EXPLORE_FRONTIER && JSON.stringify(got) !== JSON.stringify(want)) fail(`frontier: page ${got.length} points [${got.slice(0, 5)}…], frontier.csv ${want.length} [${want.slice(0, 5)}…]`);
    // The exports: walk the frontier with the arrow keys on the chart.
    const chart = document.getElementById("chart"), sel = document.getElementById("sel"), target = document.getElementById("target");
    const todo = new Map();
    for (const e of window.EXPLORE_EXPORTS || []) { if (!todo.has(e.id)) todo.set(e.id, []); todo.get(e.id).push(e); }
    chart.focus();
    key(chart, "Home");
    for (let k = 0; k < want.length; k++, key(chart, "ArrowRight")) {
      for (const e of todo.get(+sel.dataset.id) || []) {
        target.value = e.target;
        target.dispatchEvent(new Event("change", { bubbles: true }));
        const text = document.getElementById("export-text").textContent;
        // A sampled page holds the exports of some frontier settings only.
        if (!document.getElementById("sample-note").hidden && document.getElementById("export-note").textContent.startsWith("Not embedded")) { out.exportsSkipped = (out.exportsSkipped || 0) + 1; continue; }
        if (text !== e.text) fail(`export --to ${e.target} '${e.label}': the page shows ${JSON.stringify(text.slice(0, 200))}…`);
        out.exports++;
      }
      todo.delete(+sel.dataset.id);
      // A window policy that counts every request in its window (fixed
      // windows, the exact sliding log) cuts no client whose busiest window
      // stays within its limit: the threshold view's peaks against the
      // simulation's cuts.
      if (/^(fixed_window|sliding_log) /.test(sel.dataset.label)) {
        for (const tr of document.querySelectorAll("#peaks tr[data-over]")) {
          if (tr.dataset.over === "0" && tr.dataset.cut !== "" && +tr.dataset.cut > 0)
            fail(`${sel.dataset.label}: a client within the limit (${tr.textContent.slice(0, 80)}) was cut ${tr.dataset.cut}`);
          out.peaks++;
        }
      }
    }
    for (const id of todo.keys()) fail(`export: point ${id} never selected by the arrow keys`);
    if ((window.EXPLORE_EXPORTS || []).length && !out.exports) fail("export: no export text compared");
    // Nothing scrolls sideways.
    const sw = document.documentElement.scrollWidth, iw = window.innerWidth;
    out.width = { scroll: sw, inner: iw };
    if (sw > iw) fail(`the page scrolls sideways: ${sw} px wide in a ${iw} px window`);
    out.checkMs = Math.round(performance.now() - t0);
    if (net.length) fail("network: " + net.slice(0, 5).join("; "));
    out.ok = errors.length === 0;
    out.errors = errors;
    const pre = document.createElement("pre");
    pre.id = "explore-check";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
    if (window.parent !== window) window.parent.postMessage(pre.textContent, "*");
  }
  let readyAt = 0;
  const start = () => { readyAt = performance.now(); setTimeout(run, 50); }; // after any request the page starts at load
  document.addEventListener("explore-ready", start);
  window.addEventListener("load", () => setTimeout(() => { if (!document.body.dataset.ready) { errors.push("the page never became ready"); run(); } }, 15000));
})();
