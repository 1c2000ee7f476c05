// The harness panel under Locust's UI: what the chosen scenario does, and the session's tests
// with links to their reports. Plain DOM outside Locust's React root (React never touches it);
// every value is set with textContent.
(function () {
  "use strict";
  const POLL_MS = 2000;
  let catalogue = { current: null, scenarios: {} };
  let status = null;

  const css = document.createElement("style");
  css.textContent = `
    #harness-panel { position: fixed; left: 0; right: 0; bottom: 0; z-index: 1200; max-height: 38vh;
      overflow: auto; padding: 8px 16px 10px; font: 13px/1.45 system-ui, sans-serif; color: #1d1d1f;
      background: #f6f8fa; border-top: 2px solid #2f6f4f; box-shadow: 0 -2px 8px rgba(0,0,0,.12); }
    #harness-panel h2 { font-size: 13px; margin: 0 0 2px; color: #2f6f4f; text-transform: uppercase;
      letter-spacing: .04em; }
    #harness-panel .row { display: flex; gap: 28px; flex-wrap: wrap; }
    #harness-panel .col { flex: 1 1 420px; min-width: 320px; }
    #harness-panel .desc { font-weight: 600; }
    #harness-panel ul { margin: 2px 0 0; padding-left: 18px; }
    #harness-panel li { margin: 1px 0; }
    #harness-panel .settings { color: #444; }
    #harness-panel a { color: #0b5cad; font-weight: 600; }
    #harness-panel .running { color: #a15c00; font-weight: 600; }
    #harness-panel .warn { color: #b00020; }
    #harness-panel code { font-size: 12px; }
    body.harness-tab .MuiTableCell-root { padding: 5px 14px; }
    body { padding-bottom: 40vh; }
  `;
  document.head.appendChild(css);
  const panel = document.createElement("div");
  panel.id = "harness-panel";
  document.body.appendChild(panel);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  // The scenario of the running test; else the one chosen in the form; else the last test's.
  function chosenScenario() {
    if (status && status.running) return status.running.scenario_name;
    const select = document.querySelector('select[name="scenario"]');
    if (select) return select.value;
    const tests = (status && status.tests) || [];
    return tests.length ? tests[tests.length - 1].scenario_name : catalogue.current;
  }

  function secs(x) { return `${Math.round(x)} s`; }

  function testLine(t) {
    const n = String(t.number).padStart(3, "0");
    const li = el("li", {"data-test": n}, `test ${n} · ${t.scenario_name} · ${t.users ?? "?"} users · `);
    if (t.status === "running") {
      const r = status.running && status.running.number === t.number ? status.running : null;
      li.append(el("span", {class: "running"},
        r ? `running ${secs(r.elapsed_s)} of ${secs(r.bound_s)}, ${r.rows} iterations so far` : "running"));
      return li;
    }
    li.append(`${t.stop_reason || "stopped"} · ${t.rows ?? 0} iterations recorded · `);
    if (t.report) {
      li.append(el("a", {href: `./harness/tests/${t.number}/report/index.html`, target: "_blank",
                         class: "harness-report"}, "report"));
    } else if (t.report_error) {
      li.append(el("span", {class: "warn"}, `report failed (${t.report_error})`));
    } else {
      li.append("report being built…");
    }
    for (const gap of t.incomplete || []) {
      li.append(el("div", {class: "warn"}, `${gap.process} incomplete: ${gap.reason}`));
    }
    li.append(el("div", {class: "settings"}, el("code", {}, `${status.session_dir}/${t.dir}`)));
    return li;
  }

  function render() {
    const name = chosenScenario();
    const sc = catalogue.scenarios[name];
    const left = el("div", {class: "col"}, el("h2", {}, `Scenario: ${name || "?"}`));
    if (sc) {
      left.append(el("div", {class: "desc"}, sc.description || "(no description)"));
      left.append(el("div", {class: "settings"}, sc.settings.join(" · ")));
      const r = status && status.running;
      left.append(el("div", {class: "settings"}, r
        ? `This test: ${r.users} users at ${r.spawn_rate}/s, run time ${secs(r.bound_s)}.`
        : `Users, ramp-up and run time come from the form (the file says ${sc.fleet}).`));
    }
    const right = el("div", {class: "col"}, el("h2", {}, status && status.web_session ? "Tests in this session" : "Run"));
    if (status) {
      const tests = status.tests || [];
      right.append(el("div", {class: "settings"}, "Directory: ", el("code", {}, status.session_dir)));
      if (!tests.length) right.append(el("div", {}, "No test yet: start one from the form."));
      const ul = el("ul", {id: "harness-tests"});
      for (const t of tests.slice().reverse()) ul.append(testLine(t));
      right.append(ul);
    }
    panel.replaceChildren(el("div", {class: "row"}, left, right));
  }

  // Locust's header counts every step as a request; the harness makes it the iteration's, and says so.
  function relabel() {
    for (const e of document.querySelectorAll("header p, header h6, header span")) {
      if (e.childElementCount) continue;
      if (e.textContent === "RPS") e.textContent = "Iterations/s";
      else if (e.textContent === "Failures") e.textContent = "Iteration failures";
    }
  }

  // The scenario and its options live in Locust's collapsed "Custom parameters": open it once per form.
  function openOptions() {
    for (const s of document.querySelectorAll(".MuiAccordionSummary-root")) {
      if (s.textContent.includes("Custom parameters") && !s.dataset.harnessOpened) {
        s.dataset.harnessOpened = "1";
        if (s.getAttribute("aria-expanded") === "false") s.click();
      }
    }
  }

  function markTab() {
    const tab = new URLSearchParams(window.location.search).get("tab");
    document.body.classList.toggle("harness-tab", tab === "harness");
  }

  async function poll() {
    try {
      const r = await fetch("./harness/status", {cache: "no-store"});
      if (r.ok) status = await r.json();
    } catch (e) { /* Locust is gone: keep the last view */ }
    render();
    relabel();
    openOptions();
    markTab();
  }

  document.addEventListener("change", (e) => { if (e.target && e.target.name === "scenario") render(); });
  document.addEventListener("click", () => setTimeout(markTab, 50));
  fetch("./harness/scenarios", {cache: "no-store"}).then((r) => r.json()).then((c) => { catalogue = c; render(); });
  poll();
  setInterval(poll, POLL_MS);
})();
