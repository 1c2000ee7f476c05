"""The spec's story told by the real swamp (``harness story --driver swamp``), without swamp: the real-swamp ladder's
keys and their one-line errors, ``--swamp-repo NAME=DIR``, the pre-age in swamp's layout carried in each run's
plan, and the page's "not shown, and why"."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.config.plan import RunPlan
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.load.drivers import swamp as swampdrv
from harness.products.story import command, story
from harness.products.story import expect as story_expect
from harness.products.story import ladder as ladders
from harness.products.story import numbers as story_numbers
from tests.support.synthetic import make_run

LEGACY = "swamp-dynamodb@bc36088a"

SWAMP_LADDER = """
name = "real"
driver = "swamp"
[[chapter]]
name = "one"
model = "legacy GSI"
why_not = "swamp's code differs"
scenario = "legacy-gsi"
swamp_repo = "old"
sync = true
front = true
scale = 0.01
workers = 2
duration = "20s"
seed = { models = 3, versions = 2, layout = "swamp-dynamodb@bc36088a" }
expect = { grew = ["read_units"] }
"""


def _write(tmp_path: Path, text: str, name: str = "ladder.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _swamp_tree(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """A stand-in swamp executable and two templates, each with the DynamoDB extension's folder."""
    exe = tmp_path / "swamp"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    repos = {}
    for name in ("old", "new"):
        (tmp_path / name / "extensions" / "datastores" / "dynamodb_datastore").mkdir(parents=True)
        repos[name] = tmp_path / name
    return exe, repos


# ---- the shipped real-swamp ladder ----


def test_the_shipped_swamp_ladder_names_each_chapters_template_layout_and_scale():
    lad = ladders.load(command.SWAMP_LADDER)
    assert lad.driver == "swamp" and lad.swamp_repos() == ["ddb-legacy", "ddb", "s3"]
    model = ladders.load("migrating-bottleneck")
    assert [c.model for c in lad.chapters] == [c.name for c in model.chapters]  # the DynamoDB chapters, then S3
    legacy, larger = lad.chapters[0].runs
    assert legacy.swamp == larger.swamp == ladders.SwampRun("ddb-legacy", sync=True, front=True, scale=0.0002)
    # two pre-aged sizes, one run each, both in the legacy layout; the chapter judges the read across them
    assert [r.label for r in lad.chapters[0].runs] == ["legacy-gsi-dynamodb-2w-5x2", "legacy-gsi-dynamodb-2w-15x2"]
    assert larger.seed is not None and larger.seed.layout == LEGACY
    assert ladders.pre_aged_files(larger.seed) == 3 * ladders.pre_aged_files(legacy.seed) == 120
    assert lad.chapters[0].expect["grew_with_items"] == ["read_units"] and "grew" not in lad.chapters[0].expect
    assert legacy.seed is not None and legacy.seed.layout == LEGACY and legacy.seed.orphans == 0
    fid = legacy.scenario.fidelity
    assert fid.front is True and fid.config.dynamodb.scale == 0.0002  # scale is the run's [fidelity] scale
    assert legacy.latency == "aws-dynamodb"
    assert lad.chapters[0].expect["bound_by"] == ["partition:FILE"]  # the report names the hot "FILE" key
    assert all(r.swamp and r.swamp.repo == "ddb" and r.swamp.front for c in lad.chapters[1:5] for r in c.runs)
    assert all(c.why_not for c in lad.chapters)  # each chapter says where swamp's code may differ
    quick = ladders.load(command.SWAMP_LADDER, quick=True)
    q = [r.duration_s for c in quick.chapters for r in c.runs]
    f = [r.duration_s for c in lad.chapters for r in c.runs]
    assert all(a < b for a, b in zip(q, f, strict=True)) and sum(q) <= 950  # legacy: two sizes of 170 s
    assert "in swamp-dynamodb@bc36088a's layout" in ladders.run_line(legacy)
    assert "capacity x0.0002" in ladders.run_line(legacy) and "a full sync after each run" in ladders.run_line(legacy)


def test_the_shipped_s3_chapter_is_the_models_on_the_s3_extension_pre_aged_in_its_layout():
    """The S3 chapter: the model ladder's disposable and pruning runs with their own expectations, on swamp-club's
    S3 extension (template s3), the bucket pre-aged to the spec's 3,500 index entries in c25ec91's layout, through
    the front with PutObject at AWS's latency; its why_not names the source in swamp's code."""
    lad = ladders.load(command.SWAMP_LADDER)
    s3 = lad.chapters[-1]
    model = ladders.load("migrating-bottleneck").chapters[-1]
    assert s3.model == model.name == "S3 beside DynamoDB"
    assert [r.scenario.name for r in s3.runs] == ["disposable", "pruning"]
    model_s3 = [r for r in model.runs if r.backend == "s3"]
    assert [r.expect for r in s3.runs] == [r.expect for r in model_s3]  # the model's own per-run expectations
    for r in s3.runs:
        assert r.backend == "s3" and r.latency == "aws-s3-vpce" == model_s3[0].latency
        assert r.swamp == ladders.SwampRun("s3", sync=False, front=True, scale=None)
        assert r.seed is not None and r.seed.layout == "swamp-s3@c25ec91" and r.seed.backend == "s3"
        assert r.seed.models * r.seed.versions >= 900  # >= 3,500 index entries (each run a model's few files)
        assert r.scenario.datastore.namespaces == "shared"  # the solo layout's readers: the bucket's root
        assert "in swamp-s3@c25ec91's layout" in ladders.run_line(r) and "through the front" in ladders.run_line(r)
    for source in ("isInternalCacheFile", "writeCatalogExportIfNeeded", "c25ec91", "06b6147"):
        assert source in s3.why_not


S3_CHAPTER = """
name = "real-s3"
driver = "swamp"
[[chapter]]
name = "s3"
scenario = "disposable"
backend = "s3"
swamp_repo = "s3"
front = true
latency = "aws-s3-vpce"
overrides = { datastore = { namespaces = "shared", lock_scope = "datastore" } }
workers = 2
duration = "20s"
seed = { models = 4, versions = 2, layout = "swamp-s3@c25ec91" }
expect = { steady = ["files_pushed"] }
"""


@pytest.mark.parametrize("edit, message", [
    (('backend = "s3"', 'backend = "dynamodb"'), "chapter[1].seed pre-ages S3 objects: drop it from the dynamodb "
                                                 "run (or run that chapter on s3 only)"),
    (("swamp-s3@c25ec91", LEGACY), "chapter[1].seed pre-ages DynamoDB items: drop it from the s3 run"),
])
def test_a_pre_age_must_be_the_runs_own_backends_layout(tmp_path, edit, message):
    with pytest.raises(HarnessError) as e:
        ladders.load(str(_write(tmp_path, S3_CHAPTER.replace(*edit))))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_an_s3_chapters_plan_pre_ages_its_own_bucket_in_the_s3_layout(tmp_path):
    exe = tmp_path / "swamp"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    (tmp_path / "s3" / "extensions" / "datastores" / "s3").mkdir(parents=True)
    lad = ladders.load(str(_write(tmp_path, S3_CHAPTER)))
    (r,) = lad.chapters[0].runs
    plan = command.plan_chapter_run(r, tmp_path / "run", UserEnvironment(), str(exe), {"s3": tmp_path / "s3"})
    assert plan.backend == "s3" and plan.scenario.driver.kind == "swamp"
    p = plan.seeding.preage
    assert p is not None and (p.models, p.versions, p.layout, p.backend) == (4, 2, "swamp-s3@c25ec91", "s3")
    assert plan.resources.bucket  # the bucket the driver's .swamp.yaml names is the one the pre-age writes
    again = RunPlan.from_json(plan.to_json())
    assert again.seeding.preage == p and again.seeding.preage.backend == "s3"
    record = command.static_record(lad.chapters[0], tmp_path)
    assert record["runs"][0]["seed"]["layout"] == "swamp-s3@c25ec91" and record["runs"][0]["backend"] == "s3"


def test_a_pre_ages_backend_is_its_layouts():
    from harness.config.build import RunOptions, plan_run
    from harness.config.plan import PreAge
    from harness.jobs.pacing.swamp_layout import ALL_LAYOUTS

    for name, layout in ALL_LAYOUTS.items():  # the config layer's rule agrees with the jobs layer's layouts
        assert PreAge(1, 1, 0, name).backend == layout.backend
    assert PreAge(1, 1).backend == "dynamodb"
    with pytest.raises(HarnessError, match="pre-ages swamp-s3@c25ec91's S3 objects: run the scenario with "
                                           "--backend s3"):
        plan_run(RunOptions(scenario="disposable", run_dir="unused", preage=PreAge(2, 2, 0, "swamp-s3@c25ec91")),
                 UserEnvironment())


@pytest.mark.parametrize("edit, key, message", [
    (('driver = "swamp"', 'driver = "deno"'), "driver", "must be model or swamp"),
    (('driver = "swamp"', ""), "chapter[1].why_not", "belongs to a real-swamp ladder"),
    (('swamp_repo = "old"', ""), "chapter[1].swamp_repo", "must name the run's repository template"),
    (("sync = true", 'sync = "yes"'), "chapter[1].sync", "must be true or false"),
    (("scale = 0.01", "scale = 0"), "chapter[1].scale", "must be a positive number"),
    ((', layout = "swamp-dynamodb@bc36088a"', ""), "chapter[1].seed.layout", "a real-swamp run needs it"),
    (("bc36088a\" }", "nope\" }"), "chapter[1].seed.layout", "must be one of swamp-dynamodb@a929b7a, "
                                                              "swamp-dynamodb@bc36088a, swamp-s3@c25ec91"),
    (("versions = 2,", "versions = 2, orphans = 1,"), "chapter[1].seed.orphans", "must be 0 with a layout"),
])
def test_a_malformed_swamp_ladder_is_one_line_naming_the_key(tmp_path, edit, key, message):
    p = _write(tmp_path, SWAMP_LADDER.replace(*edit))
    with pytest.raises(HarnessError) as e:
        ladders.load(str(p))
    text = str(e.value)
    assert text.startswith(f"{p}: {key} ") and message in text and "\n" not in text


def test_a_model_ladder_refuses_the_real_swamps_keys(tmp_path):
    text = SWAMP_LADDER.replace('driver = "swamp"', "").replace('model = "legacy GSI"\n', "")
    text = text.replace('why_not = "swamp\'s code differs"\n', "")
    with pytest.raises(HarnessError, match=r"chapter\[1\]\.swamp_repo belongs to a real-swamp ladder"):
        ladders.load(str(_write(tmp_path, text)))
    with pytest.raises(HarnessError, match=r"chapter\[1\]\.seed\.layout belongs to a real-swamp ladder"):
        ladders.load(str(_write(tmp_path, textwrap.dedent("""
            name = "m"
            [[chapter]]
            name = "one"
            scenario = "legacy-gsi"
            seed = { models = 3, layout = "swamp-dynamodb@bc36088a" }
            expect = { grew = ["read_units"] }
            """))))


# ---- --swamp-repo NAME=DIR ----


@pytest.mark.parametrize("values, message", [
    (["old"], "--swamp-repo 'old': give NAME=DIR"),
    (["=/tmp"], "give NAME=DIR"),
    (["old=/nonexistent/tpl"], "--swamp-repo old=/nonexistent/tpl: no such directory"),
    (["old={old}", "old={new}"], "--swamp-repo names 'old' twice"),
])
def test_swamp_repo_is_name_equals_dir(tmp_path, values, message):
    _, repos = _swamp_tree(tmp_path)
    with pytest.raises(HarnessError) as e:
        command.swamp_repos([v.format(**repos) for v in values])
    assert message in str(e.value) and "\n" not in str(e.value)
    assert command.swamp_repos([f"old={repos['old']}"]) == {"old": repos["old"].resolve()}


def test_the_ladder_and_the_driver_must_agree_and_every_named_template_be_given(tmp_path):
    _, repos = _swamp_tree(tmp_path)
    lad = ladders.load(str(_write(tmp_path, SWAMP_LADDER)))
    opts = command.StoryOptions
    with pytest.raises(HarnessError, match="runs on the real swamp: add --driver swamp --swamp-repo old=DIR"):
        command.check_driver(lad, opts(ladder="x"))
    with pytest.raises(HarnessError, match="runs on swamp repository 'old', which no --swamp-repo names"):
        command.check_driver(lad, opts(ladder="x", driver="swamp"))
    with pytest.raises(HarnessError, match="--swamp-repo new: no chapter of 'real' runs on it"):
        command.check_driver(lad, opts(ladder="x", driver="swamp",
                                       swamp_repos=(f"old={repos['old']}", f"new={repos['new']}")))
    assert command.check_driver(lad, opts(ladder="x", driver="swamp", swamp_repos=(f"old={repos['old']}",))) == \
        {"old": repos["old"].resolve()}
    with pytest.raises(HarnessError, match="--driver swamp needs a real-swamp ladder"):
        command.check_driver(ladders.load("migrating-bottleneck"), opts(ladder="x", driver="swamp"))
    with pytest.raises(HarnessError, match="--swamp and --swamp-repo are the real swamp's"):
        command.check_driver(ladders.load("migrating-bottleneck"), opts(ladder="x", swamp_repos=("a=b",)))


def test_bad_swamp_input_is_one_line_and_exit_2_before_anything_runs(tmp_path, capsys):
    p = _write(tmp_path, SWAMP_LADDER)
    run_dir = tmp_path / "story"
    assert main(["story", str(p), "--driver", "swamp", "--swamp-repo", "old=/nonexistent",
                 "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "harness: --swamp-repo old=/nonexistent: no such directory (a swamp repository template: the " \
                  "folder that holds extensions/)"
    assert not run_dir.exists()


# ---- the plan each chapter's run gets ----


def test_a_real_swamp_runs_plan_carries_its_template_sync_front_scale_and_layout(tmp_path):
    exe, repos = _swamp_tree(tmp_path)
    lad = ladders.load(str(_write(tmp_path, SWAMP_LADDER)))
    r = lad.chapters[0].runs[0]
    plan = command.plan_chapter_run(r, tmp_path / "run", UserEnvironment(), str(exe), {"old": repos["old"]})
    sc = plan.scenario
    assert sc.name == "legacy-gsi-swamp" and sc.driver.kind == "swamp"
    assert sc.datastore.gsi == "legacy"  # the observer reads bc36088a's "FILE" layout
    o = swampdrv.parse(sc)
    assert o.sync is True and o.repo == repos["old"].resolve() and o.swamp == str(exe)
    assert sc.fidelity.front is True and plan.fidelity().dynamodb.scale == 0.01
    assert plan.seeding.preage is not None and plan.seeding.preage.layout == LEGACY
    again = RunPlan.from_json(plan.to_json())  # the supervisor's pre-age reads it back from plan.json
    assert again.seeding.preage == plan.seeding.preage
    record = command.static_record(lad.chapters[0], tmp_path)
    assert record["runs"][0]["seed"]["layout"] == LEGACY and record["runs"][0]["swamp"]["scale"] == 0.01
    assert (record["why_not"], record["model"]) == ("swamp's code differs", "legacy GSI")


def test_a_pre_age_in_swamps_layout_is_refused_off_the_swamp_driver(tmp_path):
    from harness.config.build import RunOptions, plan_run
    from harness.config.plan import PreAge

    with pytest.raises(HarnessError, match="is for the real swamp to read: run the scenario with --driver swamp"):
        plan_run(RunOptions(scenario="legacy-gsi", run_dir=str(tmp_path / "r"), preage=PreAge(2, 2, 0, LEGACY)),
                 UserEnvironment())


def test_the_swamp_driver_sync_key_is_a_boolean(tmp_path):
    exe, repos = _swamp_tree(tmp_path)
    from dataclasses import replace

    from harness.config import scenario as scenarios

    sc = scenarios.with_swamp(scenarios.twin_for(scenarios.load("legacy-gsi"), "swamp"), str(exe), str(repos["old"]))
    assert swampdrv.parse(sc).sync is False
    bad = replace(sc, driver=replace(sc.driver, options={**sc.driver.options, "sync": "yes"}))
    with pytest.raises(HarnessError, match=r"driver\.sync must be true or false"):
        swampdrv.parse(bad)


# ---- grew_with_items: a count per iteration across pre-aged sizes ----


def _sized_story(d: Path, small_units: float, big_units: float) -> dict:
    """A real-swamp legacy chapter at two pre-aged sizes (3 and 12 models x 2 versions), its runs synthetic: each
    iteration reads ``small_units`` / ``big_units`` read units (+-20 % over the run), judged by
    ``grew_with_items``."""
    d.mkdir()
    runs = []
    for size, units in (("3x2", small_units), ("12x2", big_units)):
        label = f"legacy-gsi-swamp-dynamodb-2w-{size}"
        make_run(d / "01-one" / label, workers=2, duration_s=120.0, rate=lambda t: np.full_like(t, 0.2, dtype=float),
                 scenario="legacy-gsi-swamp", steps={"pull_ms": lambda t: np.full_like(t, 10.0)},
                 counts={"read_units": lambda t, u=units: u * (1 + 0.2 * np.sin(t * 7.3))}, history=True,
                 seed=len(runs))
        models = int(size.split("x")[0])
        runs.append({"label": label, "run_dir": f"01-one/{label}", "scenario": "legacy-gsi-swamp",
                     "backend": "dynamodb", "workers": 2, "duration_s": 120.0, "latency": None,
                     "seed": {"models": models, "versions": 2, "orphans": 0, "layout": LEGACY}, "expect": {},
                     "line": f"legacy-gsi on dynamodb, 2 workers, 120 s, pre-aged {models} models x 2 versions",
                     "swamp": {"repo": "old", "sync": True, "front": True, "scale": 0.001}})
    story.start(d, {"name": "real", "title": "Real", "description": "", "source": "test", "quick": True,
                    "backend": None, "driver": "swamp"}, ["one"])
    story.save_chapter(d, {"number": 1, "name": "one", "fix": "none", "slug": "01-one", "runs": runs,
                           "expected": {"grew_with_items": ["read_units"]}, "comparison": None,
                           "why_not": "too few iterations at the larger size", "model": "legacy GSI"})
    story.finish(d)
    story.build(d)
    (c,) = json.loads((d / "story.json").read_text())["chapters"]
    return c


def test_grew_with_items_is_shown_when_the_larger_size_reads_credibly_more(tmp_path):
    c = _sized_story(tmp_path / "story", 8.0, 24.0)
    (check,) = c["checks"]
    assert check["what"] == "grew_with_items" and check["shown"] is True and c["shown"] is True
    # 3 models x (a definition, 3 files a version, a latest pointer) = 24 files; 12 models: 96
    s = check["sentence"]
    assert s.startswith("legacy-gsi-swamp on DynamoDB, 2 workers, 3x2 -> 12x2: read units per iteration x")
    ratio, lo, hi = (float(x) for x in re.search(r"iteration x([\d.]+) \[([\d.]+)-([\d.]+)\]", s).groups())
    assert 2.7 < ratio < 3.3 and 1 < lo < ratio < hi
    assert " at 24 pre-aged files to " in s and s.split(" to ")[1].split(" at ")[1].startswith("96 (n = ")
    assert c["with_items"] == [s]
    html = (tmp_path / "story" / "index.html").read_text()
    assert "<b>Run against run:</b>" in html and "3x2 -&gt; 12x2: read units per iteration x" in html
    assert "read units per iteration growing with the pre-aged items" in c["expected_sentence"]
    assert [r["short"] for r in c["runs"]] == ["3x2", "12x2"]  # each run's size, where the sizes differ
    # the closing table's "what grew": nothing within either run, the count across the sizes
    (row,) = story_numbers.closing_rows([c])
    assert row["grew"][-1].startswith("across sizes: read units per iteration x") and row["grew"][-1] in html


def test_grew_with_items_is_not_shown_when_both_sizes_read_the_same(tmp_path):
    c = _sized_story(tmp_path / "story", 8.0, 8.0)
    (check,) = c["checks"]
    assert check["shown"] is False and c["shown"] is False and c["why"] == "too few iterations at the larger size"
    assert "expected read units per iteration to grow with the items, it did not credibly: read units per " \
           "iteration x" in check["sentence"]
    lo, hi = (float(x) for x in re.search(r"\[([\d.]+)-([\d.]+)\]", check["sentence"]).groups())
    assert lo < 1 < hi


def test_grew_with_items_judges_each_size_against_the_next_and_needs_two_iterations_a_size():
    levels = {f"r{n}": {"scenario": "legacy-gsi", "backend": "dynamodb", "workers": 2, "items": n * 8,
                        "unit": "files", "size": f"{n}x2", "read_units": vals}
              for n, vals in ((20, [30.0, 31.0, 29.0]), (5, [10.0, 11.0, 9.0]), (10, [20.0]))}
    checks = story_expect.judge_chapter({"grew_with_items": ["read_units"]}, [], None, None, levels)
    assert [(c.shown, c.sentence.split(":")[0]) for c in checks] == [
        (False, "legacy-gsi on DynamoDB, 2 workers, 5x2 -> 10x2"),
        (False, "legacy-gsi on DynamoDB, 2 workers, 10x2 -> 20x2")]
    assert "too few successful iterations to compare read units per iteration (3 and 1" in checks[0].sentence
    levels["r10"]["read_units"] = [20.0, 21.0, 19.0]
    checks = story_expect.judge_chapter({"grew_with_items": ["read_units"]}, [], None, None, levels)
    assert all(c.shown for c in checks) and "x2 [" in checks[0].sentence and "x1.5 [" in checks[1].sentence
    (none,) = story_expect.judge_chapter({"grew_with_items": ["read_units"]}, [], None, None, {})
    assert not none.shown and none.sentence == "expected runs at two pre-aged sizes to compare, found none"


# ---- the page: "not shown, and why" ----


def test_a_chapter_the_real_code_does_not_show_reads_not_shown_and_why(tmp_path):
    d = tmp_path / "story"
    d.mkdir()
    make_run(d / "01-one" / "legacy-gsi-swamp-dynamodb-2w", workers=2, duration_s=120.0,
             rate=lambda t: np.full_like(t, 0.2, dtype=float), scenario="legacy-gsi-swamp",
             steps={"pull_ms": lambda t: np.full_like(t, 10.0)},
             counts={"read_units": lambda t: np.full_like(t, 15.0)}, history=True)
    story.start(d, {"name": "real", "title": "Real", "description": "", "source": "test", "quick": True,
                    "backend": None, "driver": "swamp"}, ["one"])
    run = {"label": "legacy-gsi-swamp-dynamodb-2w", "run_dir": "01-one/legacy-gsi-swamp-dynamodb-2w",
           "scenario": "legacy-gsi-swamp", "backend": "dynamodb", "workers": 2, "duration_s": 120.0, "latency": None,
           "seed": {"models": 3, "versions": 2, "orphans": 0, "layout": LEGACY}, "expect": {},
           "line": "legacy-gsi on dynamodb, 2 workers, 120 s, capacity x0.001",
           "swamp": {"repo": "old", "sync": True, "front": True, "scale": 0.001}}
    story.save_chapter(d, {"number": 1, "name": "one", "fix": "none", "slug": "01-one", "runs": [run],
                           "expected": {"grew": ["read_units"]}, "comparison": None,
                           "why_not": "legacy method runs scope their pulls (swamp 06b6147)", "model": "legacy GSI"})
    story.finish(d)
    story.build(d)
    (c,) = json.loads((d / "story.json").read_text())["chapters"]
    assert c["shown"] is False and c["why"] == "legacy method runs scope their pulls (swamp 06b6147)"
    assert c["sentence"].startswith("Not shown, and why: legacy method runs scope their pulls (swamp 06b6147). "
                                    "expected read units per iteration to grow, it did not credibly")
    (row,) = json.loads((d / "story.json").read_text())["closing"]
    assert row["verdict"] == "not shown, and why: legacy method runs scope their pulls (swamp 06b6147)"
    html = (d / "index.html").read_text()
    assert '<p class="verdict why"><b>Not shown, and why: legacy method runs scope their pulls (swamp 06b6147).' \
           in html
    assert "1. one: not shown, and why" in html and "The model's chapter:</b> legacy GSI" in html
    assert "capacity x0.001" in html and "Every run is the real swamp CLI" in html


def _real_story(d: Path, ladder_extra: dict | None = None) -> None:
    """A one-chapter real-swamp story (the legacy chapter, its run synthetic) recorded in ``d``."""
    d.mkdir()
    make_run(d / "01-one" / "legacy-gsi-swamp-dynamodb-2w", workers=2, duration_s=120.0,
             rate=lambda t: np.full_like(t, 0.2, dtype=float), scenario="legacy-gsi-swamp",
             steps={"pull_ms": lambda t: np.full_like(t, 10.0)},
             counts={"read_units": lambda t: np.full_like(t, 15.0)}, history=True)
    story.start(d, {"name": "real", "title": "Real", "description": "", "source": "test", "quick": True,
                    "backend": None, "driver": "swamp", **(ladder_extra or {})}, ["one"])
    run = {"label": "legacy-gsi-swamp-dynamodb-2w", "run_dir": "01-one/legacy-gsi-swamp-dynamodb-2w",
           "scenario": "legacy-gsi-swamp", "backend": "dynamodb", "workers": 2, "duration_s": 120.0, "latency": None,
           "seed": {"models": 3, "versions": 2, "orphans": 0, "layout": LEGACY}, "expect": {},
           "line": "legacy-gsi on dynamodb, 2 workers, 120 s", "swamp": {"repo": "old", "sync": True,
                                                                          "front": True, "scale": 0.001}}
    story.save_chapter(d, {"number": 1, "name": "one", "fix": "none", "slug": "01-one", "runs": [run],
                           "expected": {"grew": ["read_units"]}, "comparison": None,
                           "why_not": "legacy method runs scope their pulls (swamp 06b6147)", "model": "legacy GSI"})
    story.finish(d)


def _model_story(d: Path, shown: bool) -> Path:
    """A model story's record (`harness story migrating-bottleneck`): its legacy chapter judged."""
    d.mkdir()
    story.start(d, {"name": "migrating-bottleneck", "title": "Model", "description": "", "source": "test",
                    "quick": True, "backend": None}, ["legacy GSI"])
    data = story.read(d)
    data["chapters"] = [{"number": 1, "name": "legacy GSI", "shown": shown,
                         "sentence": "Shown: bound by the partition FILE" if shown else "Not shown: noisy"}]
    story.write(d, data)
    return d


def test_beside_shows_each_chapter_beside_the_models_verdict(tmp_path):
    model = _model_story(tmp_path / "model", shown=True)
    d = tmp_path / "story"
    _real_story(d, {"beside": str(story.check_beside(str(model), "swamp"))})
    story.build(d)
    data = json.loads((d / "story.json").read_text())
    (c,) = data["chapters"]
    assert c["beside"]["shown"] is True and c["beside"]["sentence"] == "Shown: bound by the partition FILE"
    assert data["closing"][0]["beside"] == "the model: shown"
    html = (d / "index.html").read_text()
    assert ('<b>Beside the model:</b> <a href="../model/index.html#chapter-1">the model\'s chapter legacy GSI</a>: '
            "Shown: bound by the partition FILE") in html
    assert "<i>the model: shown</i>" in html


def test_beside_must_be_a_model_story_for_a_real_swamp_ladder(tmp_path, capsys):
    model = _model_story(tmp_path / "model", shown=False)
    with pytest.raises(HarnessError, match="--beside shows a real-swamp ladder's chapters beside the model's"):
        story.check_beside(str(model), "model")
    with pytest.raises(HarnessError, match=r"--beside .*nowhere: not a story directory"):
        story.check_beside(str(tmp_path / "nowhere"), "swamp")
    real = tmp_path / "real"
    _real_story(real)
    with pytest.raises(HarnessError, match="a real-swamp story; give a story of the model's ladder"):
        story.check_beside(str(real), "swamp")
    exe, repos = _swamp_tree(tmp_path)
    assert main(["story", str(_write(tmp_path, SWAMP_LADDER)), "--driver", "swamp", "--swamp", str(exe),
                 "--swamp-repo", f"old={repos['old']}", "--beside", str(tmp_path / "nowhere"),
                 "--run-dir", str(tmp_path / "never")]) == 2
    assert capsys.readouterr().err.strip().startswith("harness: --beside ")
    assert not (tmp_path / "never").exists()
