"""The web UI's pieces that need no Locust: stats JSON for the UI, the tab's rows, the form's rules."""

from __future__ import annotations

from pathlib import Path

from harness.aws.fidelity.throttle import DynamoCapacity
from harness.config import scenario as scenarios
from harness.load.web import form
from harness.load.web import tab as tab_mod
from harness.load.web.live import REPORT_STEPS, Summary
from harness.load.web.stats import TOTAL_LABEL, stats_for_ui
from harness.load.web.tab import modelled_capacity, probe_row, probe_view, table
from tests.support.plans import make_plan


def _entry(name: str, n: int, failures: int = 0, rps: float = 1.0) -> dict:
    return {"name": name, "method": "dynamodb", "num_requests": n, "num_failures": failures, "current_rps": rps,
            "current_fail_per_sec": rps * failures / max(n, 1), "total_rps": rps, "total_fail_per_sec": 0.0}


def test_steps_in_loop_order_and_the_header_on_iterations():
    names = ["commit", "delete", "export", "iteration", "lock", "method", "prune", "pull", "push", "release"]
    data = {"stats": [_entry(n, 100, rps=8.0) for n in names] + [_entry("Aggregated", 1000, 48, rps=80.0)],
            "current_rps": 80.0, "fail_ratio": 0.048}
    it = _entry("iteration", 100, failures=79, rps=10.0)
    out = stats_for_ui(data, it, None)
    shown = [s["name"] for s in out["stats"]]
    assert shown == ["1 lock", "2 pull", "3 method", "4 push", "5 commit", "6 export", "7 delete", "8 prune",
                     "9 release", "∑ iteration", TOTAL_LABEL]
    assert shown[:-1] == sorted(shown[:-1])  # the UI sorts its table by name: the order survives
    assert out["current_rps"] == 10.0 and out["fail_ratio"] == 0.79  # not every step event summed
    assert [s["name"] for s in data["stats"]][0] == "commit"  # Locust's own data is left alone


def test_a_step_that_belongs_to_another_follows_it_as_the_docs_say():
    # "collect" (a fenced release's garbage, counted in release_ms) sat unnumbered between "9 release" and the
    # total, a step docs/web-ui.md did not list (issue 54); two-phase sync's "commit_lock" likewise
    names = ["collect", "commit", "commit_lock", "iteration", "lock", "pull", "push", "release"]
    data = {"stats": [_entry(n, 10) for n in names] + [_entry("Aggregated", 80)]}
    shown = [s["name"] for s in stats_for_ui(data, None, None)["stats"]]
    assert shown == ["1 lock", "2 pull", "4 push", "4b commit lock", "5 commit", "9 release", "9b collect",
                     "∑ iteration", TOTAL_LABEL]
    assert shown[:-1] == sorted(shown[:-1])
    docs = (Path(__file__).resolve().parents[3] / "docs" / "web-ui.md").read_text()
    assert "`4b commit lock`" in docs and "`9b collect`" in docs


def test_the_header_shows_the_tabs_rate_and_nothing_once_stopped():
    # the header's "Iterations/s" was Locust's own current rate (every step's requests, its own window): 0 while
    # the tab read 6.29 it/s, and its last value after Stop (issue 54). Now both come from the tab's summaries.
    now, whole = _summary(ok=63, iterations=64), _summary(ok=300, iterations=312, seconds=50.0)
    rows = table(now, whole, capacity=None, throttles_now=None, throttles_test=None, probe=None)
    by = {r["metric"]: r for r in rows}
    assert by["Successful iterations / s"]["now"] == "6.30 it/s"
    data = {"stats": [_entry("iteration", 312, 12, rps=9.0), _entry("Aggregated", 3000, 12, rps=90.0)],
            "current_rps": 90.0, "fail_ratio": 0.004}
    out = stats_for_ui(data, _entry("iteration", 312, 12, rps=0.0), None, rows[0]["header"])
    assert out["current_rps"] == 6.3 and out["current_fail_per_sec"] == 0.1
    assert f"{100 * out['fail_ratio']:.1f} %" == by["Iteration failure %"]["test"] == "3.8 %"
    done = tab_mod.stopped(rows)
    by = {r["metric"]: r for r in done}
    assert done[0]["header"]["current_rps"] == 0.0 and by["Successful iterations / s"]["now"] == "0.00 it/s"
    assert by["Successful iterations / s"]["test"] == "6.00 it/s" and by["Bound by"]["now"] == "stopped"
    assert by["Lock wait p50 / p95"]["now"] == "–" and by["Lock wait p50 / p95"]["test"] == "12 ms / 240 ms"
    assert rows[0]["header"]["current_rps"] == 6.3  # the running rows are left as they were


def _summary(**kw) -> Summary:
    base = dict(seconds=10.0, iterations=20, ok=15, lock_p50=12.0, lock_p95=240.0,
                step_shares=dict.fromkeys(REPORT_STEPS, 1 / len(REPORT_STEPS)),
                counts={"pull_items_read": 3.0, "index_entries_written": 420.0, "catalog_rows": 1200.0,
                        "files_pushed": 5.0}, units_per_s={"read_units": 30.0, "write_units": 1250.0})
    base.update(kw)
    return Summary(**base)


def test_the_tab_reads_units_against_the_modelled_capacity():
    cap = modelled_capacity(scenarios.load("namespaced").fidelity.resolve("moto"))
    assert cap.write == 4000 and cap.read == 12000 and "warm throughput" in cap.basis
    rows = {r["metric"]: r for r in table(_summary(), _summary(), capacity=cap, throttles_now=0.5,
                                          throttles_test=0.25, probe=None)}
    assert rows["Write units"]["now"] == "1,250.0 of 4,000 WCU/s (31%)"
    assert rows["Successful iterations / s"]["now"] == "1.50 it/s"
    assert rows["Iteration failure %"]["now"] == "25.0 %"
    assert rows["Lock wait p50 / p95"]["now"] == "12 ms / 240 ms"
    assert rows["Index entries per commit"]["now"] == "420" and rows["Throttles / s"]["now"] == "0.50"
    assert [m for m in rows if m.startswith("Time in")] == [
        "Time in lock wait", "Time in pull", "Time in method", "Time in push", "Time in commit lock wait",
        "Time in commit", "Time in export", "Time in delete", "Time in prune"]
    # the global lock's wait before the commit (two-phase sync) is listed only when it took time
    one_lock = _summary(step_shares={**dict.fromkeys(REPORT_STEPS, 0.125), "commit_lock_ms": 0.0})
    rows = table(one_lock, one_lock, capacity=cap, throttles_now=0, throttles_test=0, probe=None)
    assert "Time in commit lock wait" not in [r["metric"] for r in rows]


def test_provisioned_and_scaled_capacity():
    cap = modelled_capacity(scenarios.load("namespaced").fidelity.resolve("moto").__class__(
        enabled=True, dynamodb=DynamoCapacity(mode="provisioned", read=100, write=50, scale=0.5)))
    assert (cap.read, cap.write) == (50, 25) and cap.basis == "provisioned, scale 0.5"
    assert modelled_capacity(scenarios.load("namespaced").fidelity.resolve("aws")) is None


def test_probe_view_compares_thirds_of_one_operation(tmp_path):
    p = tmp_path / "probes.csv"
    assert probe_view(p) is None
    # a Query that costs more, interleaved: it must not be mixed in; one slow GetItem at the end moves nothing
    get = [2.0, 3.0, 2.5, 2.0, 9.0, 9.5, 9.0, 8.0, 40.0]
    rows = [f"{i},GetItem,{ms}\n{i},Query,{ms * 10}\n" for i, ms in enumerate(get)] + ["9,GetItem,2.0\n"]
    p.write_text("ts,op,ms\n" + "".join(rows))
    assert probe_view(p) == {"op": "GetItem", "last_ms": 8.0, "first_ms": 2.5, "samples": 10}
    p.write_text("ts,op,ms\n1,GetItem,2.0\n2,GetItem,3.0\n3,GetItem,9.0\n")
    assert probe_view(p) == {"op": "GetItem", "last_ms": 3.0, "first_ms": None, "samples": 3}
    assert probe_row(probe_view(p))["test"] == "too few samples to compare"


def test_the_form_offers_known_scenarios_and_keeps_owned_options_fixed():
    plan = make_plan(str(scenarios.resolve("namespaced")), run_dir="/runs/s1", backend="dynamodb", latency="aws")
    extra = {k: {"default_value": "", "choices": None, "help_text": ""} for k in
             ("backend", "latency", "run_dir", "scenario")}
    out = form.adjust_extra_options(extra, plan)
    assert list(out)[:2] == ["scenario", "latency"]
    assert out["scenario"]["default_value"] == "namespaced"  # the path of a known scenario reads as its name
    assert out["latency"]["default_value"] == "aws"  # the plan's --latency, kept unless the form clears it
    assert set(scenarios.available()) <= set(out["scenario"]["choices"])
    assert out["run_dir"]["choices"] == ["/runs/s1"] and out["backend"]["choices"] == ["dynamodb"]
    assert form.check_swarm({"scenario": "pruning", "run_dir": "/runs/s1", "backend": "dynamodb"}, plan) is None
    assert "cannot be changed" in form.check_swarm({"scenario": "pruning", "run_dir": "/elsewhere"}, plan)
    assert "cannot be changed" in form.check_swarm({"scenario": "pruning", "backend": "s3"}, plan)
    assert "unknown scenario 'nope'" in form.check_swarm({"scenario": "nope"}, plan)


def test_a_scenario_file_outside_the_known_ones_is_offered_too(tmp_path):
    own = tmp_path / "mine.toml"
    own.write_text('description = "my own"\n[fleet]\nworkers = 2\n')
    cat = form.catalogue(make_plan(str(own)))
    assert cat[str(own)]["description"] == "my own" and cat[str(own)]["fleet"].startswith("2 workers")
    assert "lock per namespace, namespaces per-worker" in cat["namespaced"]["settings"]
    assert "lock per namespace, namespaces per-worker (3 workers each)" in cat["lock-safety"]["settings"]


def test_the_forms_run_time_is_empty_without_duration_as_the_docs_say():
    # docs/web-ui.md: "--duration fills the run time (empty: the scenario's duration bounds the test)"; the form
    # showed the scenario's 60 (Locust's -t, its prefill), as if the user had asked for it (issue 54)
    from harness.supervisor.run import locust_command

    plain = make_plan("namespaced", web=True)
    assert plain.locust.run_time_s is None and "-t" not in locust_command(plain, "plan.json")
    timed = make_plan("namespaced", web=True, duration_s=45.0)
    cmd = locust_command(timed, "plan.json")
    assert cmd[cmd.index("-t") + 1] == "45s"
    headless = make_plan("namespaced")  # headless: the bound, the scenario's 60 s
    cmd = locust_command(headless, "plan.json")
    assert cmd[cmd.index("-t") + 1] == "60s"
