"""`harness sweep` as a user meets it: a real quick sweep (two fleet sizes, real Locust, the embedded default),
its sweep.json, its run directories, `harness report --sweep SWEEP_DIR`, and its page in Debian's Chromium at 1280 px.

One shared sweep (module-scoped, one xdist group): `--quick` is sizes 1 and 2 at 8 s each, so it is bounded by
time (about a minute on a loaded machine, a 240 s timeout). Bad input costs no run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.conftest import harness
from tests.e2e.test_story_e2e import OVERFLOW
from tests.support.web_session import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("sweep_e2e")]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    sweep_dir = tmp_path_factory.mktemp("sweep") / "shared-lock"
    p = harness("sweep", "shared-lock", "--quick", "--run-dir", str(sweep_dir), timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    return p, sweep_dir, json.loads((sweep_dir / "sweep.json").read_text())


def test_each_size_is_a_run_of_its_own_with_its_rate_interval_and_bound(swept):
    p, sweep_dir, data = swept
    sizes = data["sizes"]
    assert [s["workers"] for s in sizes] == [1, 2]
    tables = set()
    for s in sizes:
        run_dir = sweep_dir / s["run_dir"]
        info = json.loads((run_dir / "run.json").read_text())
        assert info["scenario_name"] == "shared-lock"
        tables.add(info.get("table") or json.loads((run_dir / "plan.json").read_text())["resources"]["table"])
        assert (run_dir / "report" / "index.html").is_file()
        procs = (run_dir / "processes.csv").read_text().splitlines()
        assert procs[0] == "ts,process,role,pid,cpu_percent,cores"
        assert {line.split(",")[2] for line in procs[1:]} >= {"locust", "stand-in", "harness", "machine"}
        assert s["rate"] > 0 and s["interval"][0] <= s["rate"] <= s["interval"][1]
        assert len(s["segments"]) >= 3 and s["latency_ms"]["p50"] > 0
        assert s["bottleneck"]["sentence"]
    assert len(tables) == 2  # a fresh table each size
    fit = data["fit"]
    assert {"sigma", "kappa", "lambda", "peak_workers", "peak_rate", "intervals"} <= set(fit)
    assert fit["sigma"] is not None and fit["kappa"] == 0 and fit["kappa_fitted"] is False  # two sizes: σ, λ only
    assert fit["intervals"]["lambda"][0] <= fit["lambda"] <= fit["intervals"]["lambda"][1]
    assert f"harness: sweep {sweep_dir / 'index.html'}" in p.stdout
    assert "contention serializes" in p.stdout


def test_report_rebuilds_the_sweep_from_its_directory(swept, tmp_path):
    _, sweep_dir, before = swept
    p = harness("report", "--sweep", str(sweep_dir), "--out", str(tmp_path / "again"), timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == f"harness: sweep {tmp_path / 'again' / 'index.html'}"
    again = json.loads((tmp_path / "again" / "sweep.json").read_text())
    assert [(s["workers"], s["successes"]) for s in again["sizes"]] == \
           [(s["workers"], s["successes"]) for s in before["sizes"]]
    assert again["fit"]["sigma"] == pytest.approx(before["fit"]["sigma"])


@pytest.mark.parametrize("workers,says", [("1,,2", "separated by commas"), ("0,2", "'0' is not a fleet size"),
                                          ("2,2", "a size is given twice")])
def test_a_bad_workers_list_is_one_line_and_exit_2(workers, says, tmp_path):
    p = harness("sweep", "shared-lock", "--users", workers, "--run-dir", str(tmp_path / "s"), timeout=60)
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "s").exists()


def test_the_page_in_a_browser(swept):
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{CHROMIUM} is missing: .ci/run should have installed Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    _, sweep_dir, _ = swept
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((sweep_dir / "index.html").as_uri())
        page.wait_for_load_state("load")
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        images = page.evaluate("() => Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, "
                               "i.naturalWidth, i.naturalHeight])")
        assert {src for src, *_ in images} == {"figures/throughput.png", "figures/latency.png", "figures/bound.png"}
        assert all(done and w > 0 and h > 0 for _, done, w, h in images), images
        assert page.evaluate(OVERFLOW) == []
        text = page.locator("body").inner_text()
        assert "contention serializes" in text and "w002" in text
        lead = page.evaluate("() => document.querySelector('figure.lead img').getBoundingClientRect().top")
        assert lead < 800  # the throughput figure is on the first screen
        page.screenshot(path=str(sweep_dir / "page-1280.png"), full_page=True)
        browser.close()
