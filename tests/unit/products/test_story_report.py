"""The story's report from a story directory alone: each chapter judged from its runs' findings, in words.

Synthetic runs with known shapes (tests/support/synthetic.py) stand in for real ones: a chapter whose count grows
and whose step follows it is shown; a chapter that expects a count to grow that does not is reported as not
showing it, naming the numbers; twice the workers at the same fleet rate are "no faster".
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from PIL import Image

from harness.cli.main import main
from harness.products.story import expect as ex
from harness.products.story import story
from harness.products.story.numbers import closing_rows, growth_per_iteration
from tests.support.synthetic import make_run


def _const(v: float):
    return lambda t: np.full_like(t, v, dtype=float)


def _run(label: str, scenario: str, workers: int, expect: dict | None = None, slug: str = "") -> dict:
    return {"label": label, "run_dir": f"{slug}/{label}", "scenario": scenario, "backend": "dynamodb",
            "workers": workers, "duration_s": 300.0, "latency": None, "seed": None, "expect": expect or {},
            "line": f"{scenario} on dynamodb, {workers} workers, 300 s"}


def _story(tmp_path):
    d = tmp_path / "story"
    d.mkdir()
    grows = {"catalog_rows": lambda t: 10 + t, "files_pushed": _const(5.0)}
    make_run(d / "01-grows" / "disposable-dynamodb-4w", workers=4, duration_s=300.0, rate=_const(0.5),
             scenario="disposable", steps={"export_ms": lambda t: 5 + 0.2 * t, "pull_ms": _const(10.0)},
             counts=grows, history=True)
    flat = {"catalog_rows": _const(40.0), "files_pushed": _const(5.0)}
    for n in (2, 4):  # the same fleet rate (1 it/s) with twice the workers
        make_run(d / "02-flat" / f"pruning-dynamodb-{n}w", workers=n, duration_s=300.0, rate=_const(1.0 / n),
                 scenario="pruning", steps={"prune_ms": _const(30.0)}, counts=flat, history=True, seed=n)
    story.start(d, {"name": "synthetic", "title": "A synthetic story", "description": "", "source": "test",
                    "quick": False, "backend": None}, ["grows", "flat"])
    story.save_chapter(d, {"number": 1, "name": "grows", "fix": "disposable models", "slug": "01-grows",
                           "runs": [_run("disposable-dynamodb-4w", "disposable", 4, slug="01-grows")],
                           "expected": {"grew": ["catalog_rows"], "steady": ["files_pushed"],
                                        "explained_by": "catalog_rows"}, "comparison": None})
    story.save_chapter(d, {"number": 2, "name": "flat", "fix": "pruning", "slug": "02-flat",
                           "runs": [_run(f"pruning-dynamodb-{n}w", "pruning", n, slug="02-flat") for n in (2, 4)],
                           "expected": {"grew": ["catalog_rows"], "more_workers": "no faster"},
                           "comparison": "02-flat/comparison"})
    story.finish(d)
    return d


def test_report_rebuilds_the_story_and_judges_each_chapter_from_its_runs(tmp_path, capsys):
    d = _story(tmp_path)
    assert main(["report", str(d)]) == 2  # its kind is said by the command: one line naming it
    err = capsys.readouterr().err.strip()
    assert err == f"harness: {d} is a story's directory: `harness report --story {d}` builds its report"
    assert main(["report", "--story", str(d)]) == 0
    assert capsys.readouterr().out.strip() == f"harness: story {d / 'index.html'}"
    data = json.loads((d / "story.json").read_text())
    one, two = data["chapters"]
    assert one["shown"] is True and two["shown"] is False
    assert one["run_dirs"] == ["01-grows/disposable-dynamodb-4w"]
    assert two["run_dirs"] == ["02-flat/pruning-dynamodb-2w", "02-flat/pruning-dynamodb-4w"]  # N and 2N: two runs
    assert {"name", "run_dirs", "expected", "bound_by", "grew", "shown", "sentence"} <= set(one)
    assert any(g["count"] == "catalog_rows" and g["growth"] > 5 for g in one["grew"])
    assert one["sentence"].startswith("Shown: catalog rows grew x")
    # the chapter that expected growth it did not get says so, with its numbers, per run
    assert two["sentence"].startswith("Not shown: 2 workers: expected catalog rows to grow, it did not credibly (")
    scaling = next(c for c in two["checks"] if c["what"] == "more_workers")
    assert scaling["shown"] and "2 -> 4 workers: x2 workers gave x" in scaling["sentence"]
    assert (d / "02-flat" / "comparison" / "index.html").is_file()  # the chapter's comparison
    assert [r["number"] for r in data["closing"]] == [1, 2] and data["shown"] == 1
    html = (d / "index.html").read_text()
    assert "1 of 2 chapters showed what they expected" in html
    assert html.count('<tr class="chapter">') == 2
    for name in ("story_rate.png", "story_bound.png", "chapter-01.png", "chapter-02.png"):
        assert f'src="figures/{name}"' in html
        with Image.open(d / "figures" / name) as im:
            assert im.format == "PNG" and im.width >= 1000
    assert 'href="01-grows/disposable-dynamodb-4w/report/index.html"' in html


def test_a_rebuild_judges_the_same_runs_the_same_way(tmp_path):
    d = _story(tmp_path)
    story.build(d)
    first = json.loads((d / "story.json").read_text())
    story.build(d)  # story.json now holds the verdicts too: a rebuild reads only what it needs of it
    again = json.loads((d / "story.json").read_text())
    assert [(c["shown"], c["sentence"]) for c in first["chapters"]] == \
           [(c["shown"], c["sentence"]) for c in again["chapters"]]


def test_growth_per_iteration_is_each_workers_own_slope():
    rows = pd.DataFrame({"user": ["a"] * 5 + ["b"] * 5, "iteration": list(range(5)) * 2, "ok": True,
                         "catalog_rows": [100 + 2 * i for i in range(5)] + [2 * i for i in range(5)]})
    assert growth_per_iteration(rows, ["catalog_rows"]) == {"catalog_rows": 2.0}  # not skewed by a's offset


def _findings(kind: str | None, name: str | None, **over) -> dict:
    f = {"bottleneck": {"kind": kind, "name": name, "utilization": 0.97, "interval": [0.95, 0.99],
                        "seconds": [2.0, 40.0], "evidence": {"share": 0.8}},
         "work_counts": {}, "errors": {"lock_timeout": 0}, "rows": 100, "failures": 0, "failure_ratio": 0.0,
         "failure_interval": [0.0, 0.04], "fleet": {"degraded": False, "shape": "flat", "start_rate": 5.0,
                                                     "start_interval": [4.0, 6.0], "floor_rate": 4.8,
                                                     "floor_interval": [3.9, 5.9]}}
    f.update(over)
    return f


def test_a_chapter_that_expected_the_lock_says_what_bound_it_instead():
    (c,) = ex.judge_run(_findings("step", "pull"), {"bound_by": ["lock"]}, "r")
    assert not c.shown
    assert c.sentence == ("expected a lock, the fleet was bound by pull (inside an iteration 97 % [95-99] of the "
                          "time, 80 % of it in pull over 2-40 s)")
    (ok,) = ex.judge_run(_findings("lock", "dynamodb://t"), {"bound_by": ["lock"]}, "r")
    assert ok.shown and ok.sentence == "bound by the lock dynamodb://t (busy 97 % [95-99] over 2-40 s)"
    (none,) = ex.judge_run(_findings("lock", "k"), {"errors": ["lock_timeout"]}, "r")
    assert not none.shown and none.sentence == "expected lock timeouts, none of 100 iterations had one"


def test_more_workers_no_faster_needs_an_interval_short_of_linear_scaling():
    def comparison(iv):
        return {"fleet_scaling": [{"scenario": "shared-lock", "backend": "dynamodb", "workers": [6, 12],
                                   "fleet_ratio": 2.0, "rate_ratio": 1.0, "rate_interval": iv,
                                   "raised_rate": iv[0] > 1, "sentence": ""}]}

    (tight,) = ex.judge_chapter({"more_workers": "no faster"}, [], comparison([0.8, 1.25]))
    (wide,) = ex.judge_chapter({"more_workers": "no faster"}, [], comparison([0.5, 2.4]))
    (raised,) = ex.judge_chapter({"more_workers": "no faster"}, [], comparison([1.3, 2.1]))
    assert tight.shown and not wide.shown and not raised.shown
    assert "too wide to rule out scaling with the fleet" in wide.sentence


def test_closing_rows_name_each_runs_rate_bound_and_growth():
    chapter = {"number": 2, "name": "n", "fix": "f", "shown": False,
               "runs": [{"label": "a-6w", "scenario": "s", "backend": "dynamodb", "workers": 6},
                        {"label": "a-12w", "scenario": "s", "backend": "dynamodb", "workers": 12}],
               "rates": [{"run": "a-6w", "start": 6.1, "floor": 3.4, "shape": "flat"},
                         {"run": "a-12w", "start": 5.0, "floor": 3.0, "shape": "flat"}],
               "bound_by": [{"run": "a-6w", "kind": "lock", "name": "dynamodb://t", "utilization": 1.0,
                             "label": "the lock dynamodb://t"},
                            {"run": "a-12w", "kind": "lock", "name": "dynamodb://t", "utilization": 1.0,
                             "label": "the lock dynamodb://t"}],
               "grew": [], "checks": [{"run": None, "shown": False, "sentence": "s on DynamoDB: too noisy"}]}
    (row,) = closing_rows([chapter])
    assert row["rate"] == ["6 workers: 6.1 -> 3.4 it/s (within the noise: no segment is credibly below the start)",
                           "12 workers: 5 -> 3 it/s (within the noise: no segment is credibly below the start)"]
    assert row["bound_by"][0] == "6 workers: a lock 100 % (dynamodb://t)"
    assert row["grew"] == ["6 workers: nothing credibly", "12 workers: nothing credibly"]
    assert row["verdict"] == "not shown: s on DynamoDB: too noisy"


def test_every_error_kind_a_ladder_may_expect_is_judged_in_words():
    """push_failed (the swamp driver) and connection may be expected like the others: each has its words."""
    from harness.products.story.ladder import ERROR_KINDS
    for kind in ERROR_KINDS:
        (c,) = ex.judge_run(_findings(None, None, errors={kind: 3}, failures=3), {"errors": [kind]}, "r")
        assert c.shown and c.sentence.startswith("3 of 100 iterations failed with "), c.sentence
    (c,) = ex.judge_run(_findings(None, None, errors={"push_failed": 2}), {"no_errors": ["push_failed"]}, "r")
    assert not c.shown
    assert c.sentence == "expected no failed pushes (exit 0 with an error span), 2 of 100 iterations had one"


def _fleet(levels: list[tuple[int, int]], start: float, floor: float) -> dict:
    """A run's findings.fleet over 32 s segments after a 24 s warm-up, each (successes, failures)."""
    lv = [{"t0": 24.0 + 32 * i, "t1": 56.0 + 32 * i, "successes": ok, "failures": bad, "rate": ok / 32}
          for i, (ok, bad) in enumerate(levels)]
    return {"start_rate": start, "start_interval": [0.0, 0.115], "floor_rate": floor, "floor_interval": [0.0, 0.115],
            "end_rate": lv[-1]["rate"], "shape": "flat", "degraded": False, "dispersion": 1.0, "warmup_s": 24.0,
            "segment_s": 32.0, "levels": lv, "floor_index": 0}


def test_a_run_of_few_slow_iterations_reads_its_rate_over_the_run_not_0_to_0():
    """Recorded (the real swamp's legacy chapter, 120 s): its first segment spent in the setup's full sync, 0
    iterations, then 3 and 2 + 1 failed; its levels read "0 -> 0 it/s", which is not what it did."""
    fl = _fleet([(0, 0), (3, 0), (2, 1)], 0.0, 0.0)
    sparse = ex.sparse_levels(fl)
    assert sparse.startswith("too few iterations to read a level: 6 in 96 s, 5 succeeded (0.0521 it/s [0.01")
    assert sparse.endswith("over the run after its 24 s warm-up)")
    rate = {"run": "legacy-gsi-dynamodb-2w", "start": 0.0, "floor": 0.0, "end": 0.0625, "shape": "flat",
            "sparse": sparse}
    (row,) = closing_rows([{"number": 1, "name": "legacy GSI", "fix": "", "shown": True, "grew": [],
                            "runs": [{"label": "legacy-gsi-dynamodb-2w", "scenario": "legacy-gsi",
                                      "backend": "dynamodb", "workers": 2}],
                            "rates": [rate], "bound_by": [], "checks": []}])
    assert row["rate"] == [sparse] and "0 -> 0" not in row["rate"][0]
    (c,) = ex.judge_run({"fleet": fl, "rows": 6, "failures": 1}, {"rate": "holds"}, "r")
    assert not c.shown and c.sentence.startswith("expected the rate to hold, it cannot be read: too few iterations")


def test_a_run_with_enough_iterations_a_segment_reads_its_levels():
    fl = _fleet([(7, 0), (6, 0), (8, 0)], 0.22, 0.19)
    assert ex.sparse_levels(fl) == ""
    assert ex.sparse_levels(_fleet([(3, 0), (2, 0), (3, 0)], 0.1, 0.06)) != ""  # 8 in 3 segments: too few
    assert ex.sparse_levels(_fleet([(0, 0), (20, 0), (20, 0)], 0.0, 0.0)) != ""  # nothing ran at the start


def test_a_count_no_iteration_recorded_is_said_so_not_too_few_iterations():
    """Recorded (the real swamp's S3 chapter): 12 successful iterations, none with a catalog_rows value (swamp
    06b6147 sends no span that says it); "too few successful iterations to compare" would be false."""
    never = {"label": "catalog rows", "first": None, "last": None, "growth": None, "interval": None, "grew": False,
             "n": [0, 0], "note": "too few successful iterations to compare"}
    f = {"rows": 12, "failures": 0, "work_counts": {"catalog_rows": never}}
    grew, steady = ex.judge_run(f, {"grew": ["catalog_rows"], "steady": ["catalog_rows"]}, "r")
    assert not grew.shown and grew.sentence == ("expected catalog rows to grow: none of 12 successful iterations "
                                                "recorded catalog rows (no span the commands sent says it)")
    assert not steady.shown and steady.sentence.startswith("expected catalog rows to hold: none of 12 successful")
    (few,) = ex.judge_run({"rows": 1, "failures": 1, "work_counts": {"catalog_rows": never}},
                          {"steady": ["catalog_rows"]}, "r")
    assert few.sentence == "expected catalog rows to hold, too few successful iterations to tell"
