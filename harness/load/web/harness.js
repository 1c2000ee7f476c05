// The harness panel under Locust's UI: what the chosen scenario does, and the session's tests
// with links to their reports; on the Harness tab, live charts of the test so far (the iteration
// rate with its 95 % band, each step's share, the bound resource's utilization), drawn as SVG from
// the tab's own data (its first row's `charts`, the same numbers as its table). Plain DOM that React
// does not render; every value is set with textContent.
// On the Harness tab the charts come first: they sit right before the tab's table (a sibling React
// does not know of, placed again on every poll if a re-render took it away), so a reader sees the
// curves, then the numbers. Off that tab the charts wait, hidden, outside Locust's root. The panel follows
// Locust's page in its flow, on every tab: fixed at the bottom it covered the start form's Run Dir and
// Scenario and pushed START below the fold at 1400 x 900 (issue 54); the form is set tighter for the same
// reason, without Locust's Host field (the run's plan holds the endpoints: the harness needs no host).
// After START the page goes to the top of the Harness tab (followStart).
// Inside Locust's UI it touches text and style only (the header's labels, its status while Locust stops: see
// PASSING; the form's spacing), clicks the Harness tab once after START, and keeps that UI polling
// /stats/requests through a stop. It runs before Locust's own script (ui.py).
(function () {
  "use strict";
  const POLL_MS = 2000;
  let catalogue = { current: null, scenarios: {} };
  let status = null;

  // Locust's own UI (2.47.0, useSwarmUi) polls /stats/requests every 2 s only while the state it last read is
  // "spawning" or "running", and its Stop button does not poll again. Its last poll of a test can therefore land
  // while Locust is still "stopping" (a master waiting for its workers to stop) or "cleanup" (a single process
  // stopping its users): the page then stops polling and keeps showing that state, with Stop and no New, however
  // long ago Locust stopped (a page loaded in that state never polls at all: ui.py renders it as "running").
  // So every /stats/requests answer passes here: a passing state reaches Locust's UI as "running", which keeps
  // it polling until the settled state ("stopped") arrives, and the header's status shows the real one.
  const PASSING = new Set(["stopping", "cleanup"]);
  let passing = null;  // the real state while Locust's UI is told "running"
  const locustFetch = window.fetch.bind(window);
  window.fetch = async function (input, init) {
    const response = await locustFetch(input, init);
    const url = typeof input === "string" ? input : input && input.url;
    if (!url || !response.ok || !new URL(url, window.location.href).pathname.endsWith("/stats/requests")) {
      return response;
    }
    let data;
    try { data = await response.clone().json(); } catch (e) { return response; }
    if (!data || !PASSING.has(data.state)) { passing = null; return response; }
    passing = data.state;
    setTimeout(showState, 0);
    return new Response(JSON.stringify({...data, state: "running", harness_locust_state: data.state}),
                        {status: response.status, statusText: response.statusText,
                         headers: {"Content-Type": response.headers.get("Content-Type") || "application/json"}});
  };

  // The header's status while Locust's UI is told "running": the real (passing) state.
  function showState() {
    if (!passing) return;
    for (const label of document.querySelectorAll("header p, header h6, header span")) {
      const value = label.nextElementSibling;
      if (label.textContent === "Status" && value && value.textContent.toLowerCase() === "running") {
        value.textContent = passing;
      }
    }
  }

  const css = document.createElement("style");
  css.textContent = `
    #harness-panel { position: static; padding: 8px 16px 10px; font: 13px/1.45 system-ui, sans-serif;
      color: #1d1d1f; background: #f6f8fa; border-top: 2px solid #2f6f4f; }
    #root form > .MuiBox-root, #root form .MuiAccordionDetails-root > .MuiBox-root { gap: 16px; }
    #root form .MuiAccordion-root { margin: 0; }
    #root form .MuiInputBase-input { padding-top: 10px; padding-bottom: 10px; }
    #root form .MuiInputLabel-outlined:not(.MuiInputLabel-shrink) { transform: translate(14px, 9px) scale(1); }
    #root form .MuiFormControl-root:has(input[name="host"]) { display: none; }
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
    #harness-charts { display: none; gap: 18px; flex-wrap: wrap; padding: 8px 0 14px; box-sizing: border-box;
      width: 100%; font: 12px/1.4 system-ui, sans-serif; color: #1d1d1f; }
    body.harness-tab #harness-charts { display: flex; }
    #harness-charts figure { margin: 0; flex: 1 1 380px; min-width: 320px; overflow: hidden; }
    #harness-charts figcaption { font-weight: 600; margin-bottom: 2px; }
    #harness-charts .legend span { margin-right: 10px; overflow-wrap: anywhere; }
    #harness-charts svg { width: 100%; height: 190px; background: #fff; border: 1px solid #ddd; }
  `;
  document.head.appendChild(css);
  const charts = document.createElement("div");
  charts.id = "harness-charts";
  document.body.appendChild(charts);
  const panel = document.createElement("div");
  panel.id = "harness-panel";
  document.body.appendChild(panel);
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

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
    // how it ended in the outcome's words (harness/report/run/outcome.py), as its report and `harness runs` say it
    li.append(`${t.outcome_line || t.stop_reason || "stopped"} · ${t.rows ?? 0} iterations recorded · `);
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
      if (status.metrics) {  // --prometheus: the master's /metrics (a wildcard host is this page's host)
        const u = new URL(status.metrics);
        if (u.hostname === "0.0.0.0" || u.hostname === "[::]") u.hostname = location.hostname;
        right.append(el("div", {class: "settings"}, "Live metrics (Prometheus): ",
                        el("a", {id: "harness-metrics", href: u.href, target: "_blank"}, u.href)));
      }
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
    placeCharts();
  }

  // On the Harness tab: right before its table's container; elsewhere (or before the table is drawn):
  // back beside the panel, outside Locust's root.
  function placeCharts() {
    const table = document.body.classList.contains("harness-tab") ? document.querySelector("#root table") : null;
    const box = table && (table.closest(".MuiTableContainer-root, .MuiPaper-root") || table);
    if (box && box.parentNode) {
      if (charts.nextSibling !== box) box.parentNode.insertBefore(charts, box);
    } else if (charts.parentNode !== document.body) {
      document.body.insertBefore(charts, panel);
    }
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }

  // One chart: x is seconds since the test started, y from 0 to `top`; `lines` are
  // {values, color, dash, fill: [lo, hi] (a band) or "stack" (an area from `base`)}.
  function chart(title, unit, t, top, lines, legend) {
    const W = 420, H = 190, L = 40, R = 8, T = 8, B = 22;
    const fig = el("figure", {"data-chart": title}, el("figcaption", {}, title));
    const s = svg("svg", {viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none"});
    const tmax = Math.max(1, t.length ? t[t.length - 1] : 1);
    const x = (v) => L + (W - L - R) * v / tmax;
    const y = (v) => H - B - (H - T - B) * Math.min(Math.max(v, 0), top) / (top || 1);
    for (const f of [0, 0.5, 1]) {
      s.append(svg("line", {x1: L, x2: W - R, y1: y(top * f), y2: y(top * f), stroke: "#eee"}));
      const lab = svg("text", {x: L - 4, y: y(top * f) + 4, "text-anchor": "end", "font-size": 10, fill: "#666"});
      lab.textContent = unit === "%" ? `${Math.round(top * f * 100)}` : (top * f).toPrecision(2);
      s.append(lab);
    }
    const xl = svg("text", {x: W - R, y: H - 6, "text-anchor": "end", "font-size": 10, fill: "#666"});
    xl.textContent = `${Math.round(tmax)} s since the test started`;
    s.append(xl);
    for (const ln of lines) {
      const pts = [];
      ln.values.forEach((v, i) => { if (v !== null && v !== undefined && isFinite(v)) pts.push([x(t[i]), y(v), i]); });
      if (!pts.length) continue;
      if (ln.band) {
        const up = pts.map(([px, , i]) => `${px},${y(ln.band[1][i])}`);
        const down = pts.slice().reverse().map(([px, , i]) => `${px},${y(ln.band[0][i])}`);
        s.append(svg("polygon", {points: up.concat(down).join(" "), fill: ln.color, "fill-opacity": 0.15}));
      }
      if (ln.base) {
        const up = pts.map(([px, py]) => `${px},${py}`);
        const down = pts.slice().reverse().map(([px, , i]) => `${px},${y(ln.base[i] || 0)}`);
        s.append(svg("polygon", {points: up.concat(down).join(" "), fill: ln.color, "fill-opacity": 0.8}));
      } else {
        s.append(svg("polyline", {points: pts.map(([px, py]) => `${px},${py}`).join(" "), fill: "none",
                                  stroke: ln.color, "stroke-width": 1.6, "stroke-dasharray": ln.dash || ""}));
      }
    }
    fig.append(s);
    const leg = el("div", {class: "legend"});
    for (const [name, color] of legend) leg.append(el("span", {style: `color:${color}`}, `■ ${name}`));
    fig.append(leg);
    return fig;
  }

  function renderCharts(c) {
    if (!c || !c.t || !c.t.length) { charts.replaceChildren(); return; }
    const rateTop = Math.max(...c.ok_hi, ...c.failed_rate, 0.1) * 1.05;
    const rate = chart("Successful iterations / s (95 % band)", "it/s", c.t, rateTop, [
      {values: c.ok_rate, color: "#111", band: [c.ok_lo, c.ok_hi]},
      {values: c.failed_rate, color: "#d62728", dash: "4 3"},
    ], [["succeeded", "#111"], ["failed", "#d62728"]]);
    const names = Object.keys(c.shares);
    let base = c.t.map(() => 0);
    const stack = [];
    names.forEach((n, k) => {
      const top = c.shares[n].map((v, i) => (c.shares[n][i] === null ? null : base[i] + (v || 0)));
      stack.push({values: top, base: base.slice(), color: COLORS[k % COLORS.length]});
      base = top.map((v, i) => (v === null ? base[i] : v));
    });
    const shares = chart("Each step's share of a successful iteration", "%", c.t, 1, stack.reverse(),
                         names.map((n, k) => [n, COLORS[k % COLORS.length]]));
    const u = c.utilization || {values: []};
    const lines = [{values: u.values, color: "#2f6f4f"}];
    const legend = [[u.label || "utilization", "#2f6f4f"]];
    if (u.held) { lines.push({values: u.held, color: "#9467bd", dash: "4 3"}); legend.push(["held", "#9467bd"]); }
    const bound = chart(`Utilization of the bound resource: ${u.label || "-"}`, "%", c.t, 1, lines, legend);
    charts.replaceChildren(rate, shares, bound);
  }

  async function pollCharts() {
    if (!document.body.classList.contains("harness-tab")) return;
    try {
      const r = await fetch("./stats/requests", {cache: "no-store"});
      if (!r.ok) return;
      const data = await r.json();
      const tab = (data.extended_stats || []).find((x) => x.key === "harness");
      const first = tab && tab.data && tab.data[0];
      if (first && first.charts) renderCharts(first.charts);
      placeCharts();
    } catch (e) { /* Locust is gone: keep the last charts */ }
  }

  async function poll() {
    try {
      const r = await fetch("./harness/status", {cache: "no-store"});
      if (r.ok) status = await r.json();
    } catch (e) { /* Locust is gone: keep the last view */ }
    render();
    relabel();
    showState();
    openOptions();
    markTab();
    pollCharts();
  }

  // START: once the form has gone (Locust took the start), the Harness tab, from its top. Scrolled down to
  // reach START, the page used to stay at the bottom of Locust's statistics table (issue 54).
  const FOLLOW_MS = 90_000;  // a start Locust answers within ui.START_WAIT_S (60 s); later, the user moved on
  let followUntil = 0;
  document.addEventListener("submit", (e) => {
    const button = e.target && e.target.querySelector && e.target.querySelector('button[type="submit"]');
    if (button && button.textContent.trim().toLowerCase() === "start") {
      followUntil = Date.now() + FOLLOW_MS;
      followStart();
    }
  }, true);

  function followStart() {
    if (!followUntil) return;
    if (Date.now() > followUntil) { followUntil = 0; return; }
    const tab = [...document.querySelectorAll('[role="tab"]')]
      .find((t) => t.textContent.trim().toLowerCase() === "harness");
    if (!tab || document.querySelector('form select[name="scenario"]')) { setTimeout(followStart, 200); return; }
    followUntil = 0;
    if (tab.getAttribute("aria-selected") !== "true") tab.click();
    window.scrollTo(0, 0);
    setTimeout(markTab, 50);
  }

  document.addEventListener("change", (e) => { if (e.target && e.target.name === "scenario") render(); });
  document.addEventListener("click", () => setTimeout(markTab, 50));
  fetch("./harness/scenarios", {cache: "no-store"}).then((r) => r.json()).then((c) => { catalogue = c; render(); });
  poll();
  setInterval(poll, POLL_MS);
})();
