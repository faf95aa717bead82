// explore-bench.js: injected into a copy of explore.html by
// scripts/bench-explore.sh, in <head> before the page's script. In real
// (not virtual) time it reads the page's own performance marks
// (explore-script: its script starts; explore-data: the embedded data
// unpacked; explore-ready: the choice made and the chart drawn), then marks
// the first frame painted after it, then drags the false-cut slider: for
// each of 40 input events, a performance measure from the event to the end
// of the next frame the browser paints (the choice, the tables and the
// chart redrawn). It logs one line "explore-bench {json}" to the console,
// which Chromium writes to stderr. All times in ms from navigation start.
(function () {
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const at = (name) => { const m = performance.getEntriesByName(name, "mark"); return m.length ? +m[0].startTime.toFixed(1) : null; };
  async function run() {
    await frame();
    performance.mark("explore-painted");
    const r = document.getElementById("fc-r"), max = +r.max || 10;
    for (let k = 0; k < 40; k++) {
      performance.mark("drag-start");
      r.value = String((max * (k + 1)) / 40);
      r.dispatchEvent(new Event("input", { bubbles: true }));
      await frame();
      performance.measure("drag", "drag-start");
    }
    const drag = performance.getEntriesByName("drag", "measure").map((m) => m.duration).sort((a, b) => a - b);
    const q = (p) => +drag[Math.min(drag.length - 1, Math.floor(p * drag.length))].toFixed(1);
    const script = at("explore-script"), painted = at("explore-painted");
    console.log("explore-bench " + JSON.stringify({
      settings: window.explore.settings, clients: +document.body.dataset.clients,
      scriptAtMs: script, dataAtMs: at("explore-data"), readyAtMs: at("explore-ready"), firstPaintMs: painted,
      pageMs: +(painted - script).toFixed(1), // the page's own work: its script's start to the frame painted
      dragMedianMs: q(0.5), dragP90Ms: q(0.9), dragMaxMs: +drag[drag.length - 1].toFixed(1),
    }));
  }
  document.addEventListener("explore-ready", () => run().catch((e) => console.log("explore-bench failed: " + e)));
})();
