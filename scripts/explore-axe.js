// explore-axe.js: injected after axe-core (scripts/axe/axe.min.js) into a
// copy of explore.html by scripts/test-explore.sh. Once the page is ready
// it fills every part a user can open (all three bounds on, the best
// setting selected, so the neighbours, the export, the clients and the
// threshold view are drawn), runs axe-core on the whole page and writes
// the verdict into a pre element with id explore-check: ok when no
// violation has a serious or critical impact (all violations listed).
(function () {
  function verdict(out) {
    const pre = document.createElement("pre");
    pre.id = "explore-check";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  async function run() {
    for (const id of ["mi-on", "cc-on"]) {
      const c = document.getElementById(id);
      c.checked = true;
      c.dispatchEvent(new Event("change", { bubbles: true }));
    }
    document.getElementById("pick-select").click();
    const res = await window.axe.run(document, { resultTypes: ["violations"] });
    const v = res.violations.map((x) => ({ id: x.id, impact: x.impact, nodes: x.nodes.length, at: x.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
    const bad = v.filter((x) => x.impact === "serious" || x.impact === "critical");
    verdict({ ok: bad.length === 0, axe: window.axe.version, serious: bad.length, violations: v });
  }
  document.addEventListener("explore-ready", () => setTimeout(() => run().catch((e) => verdict({ ok: false, error: String(e) })), 50));
})();
