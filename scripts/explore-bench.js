// explore-bench.js: injected into a copy of explore.html by
// scripts/bench-explore.sh, in <head> before the page's script. In real
// (not virtual) time it measures the first render, from navigation start
// to the page's explore-ready event (the data unpacked, the choice made,
// the chart drawn), then a drag of the false-cut slider: for each of 40
// input events, from the event to the end of the next frame the browser
// paints (the choice, the tables and the chart redrawn). It logs one line
// "explore-bench {json}" to the console, which Chromium writes to stderr.
(function () {
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  async function run() {
    const ready = performance.now();
    await frame();
    const painted = performance.now();
    const r = document.getElementById("fc-r"), max = +r.max || 10, drag = [];
    for (let k = 0; k < 40; k++) {
      const t0 = performance.now();
      r.value = String((max * (k + 1)) / 40);
      r.dispatchEvent(new Event("input", { bubbles: true }));
      await frame();
      drag.push(performance.now() - t0);
    }
    drag.sort((a, b) => a - b);
    const q = (p) => +drag[Math.min(drag.length - 1, Math.floor(p * drag.length))].toFixed(1);
    console.log("explore-bench " + JSON.stringify({
      settings: window.explore.settings, clients: document.body.dataset.clients,
      readyMs: Math.round(ready), firstPaintMs: Math.round(painted), scriptMs: +document.body.dataset.renderMs,
      dragMedianMs: q(0.5), dragP90Ms: q(0.9), dragMaxMs: +drag[drag.length - 1].toFixed(1),
    }));
  }
  document.addEventListener("explore-ready", () => run().catch((e) => console.log("explore-bench failed: " + e)));
})();
