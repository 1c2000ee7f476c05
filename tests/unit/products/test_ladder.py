"""Ladders as data: the shipped one loads, a user's loads, and a malformed one is one line naming file and key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.core.errors import HarnessError
from harness.products.story import ladder as ladders

GOOD = """
name = "mine"
[[chapter]]
name = "one"
scenario = "namespaced"
workers = [2, 4]
duration = "20s"
quick = { duration = "5s" }
seed = { models = 3, versions = 2 }
overrides = { lock = { wait = "2s" } }
expect = { grew = ["index_entries_written"], more_workers = "no faster" }
"""


def _write(tmp_path: Path, text: str, name: str = "ladder.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_the_shipped_ladder_is_the_seeds_six_chapters():
    lad = ladders.load("migrating-bottleneck")
    assert [c.name for c in lad.chapters] == ["legacy GSI", "per-model GSI, one lock per table", "namespaced locks",
                                               "disposable models", "pruning", "S3 beside DynamoDB"]
    scen = [[(r.scenario.name, r.backend, r.workers) for r in c.runs] for c in lad.chapters]
    assert scen[0] == [("legacy-gsi", "dynamodb", 4)]
    assert scen[1] == [("shared-lock", "dynamodb", 6), ("shared-lock", "dynamodb", 12)]  # N and 2N
    assert scen[5] == [("disposable", "dynamodb", 4), ("disposable", "s3", 4), ("pruning", "dynamodb", 4),
                       ("pruning", "s3", 4)]
    six = lad.chapters[5]
    assert {r.backend: r.latency for r in six.runs} == {"dynamodb": "aws-dynamodb", "s3": "aws-s3-vpce"}
    assert all(r.seed is not None for c in lad.chapters[:5] for r in c.runs)  # every DynamoDB chapter pre-aged
    assert lad.chapters[1].expect["more_workers"] == "no faster"
    # the legacy chapter's override reached the scenario (and nothing else of it changed)
    assert lad.chapters[0].runs[0].scenario.workload.think_time_s == 0.1
    assert (lad.chapters[0].runs[0].scenario.lock.retry_s, lad.chapters[0].runs[0].scenario.lock.retry_cap_s) == \
           (0.02, 0.05)
    assert lad.chapters[0].runs[0].scenario.datastore.gsi == "legacy"


def test_quick_takes_each_runs_quick_keys_and_the_full_ladder_is_longer():
    full, quick = ladders.load("migrating-bottleneck"), ladders.load("migrating-bottleneck", quick=True)
    f = [r.duration_s for c in full.chapters for r in c.runs]
    q = [r.duration_s for c in quick.chapters for r in c.runs]
    assert len(f) == len(q) == 10 and all(a < b for a, b in zip(q, f, strict=True))
    assert sum(q) <= 325  # the quick story's load: the rest of its 8 minutes is starting and reporting (10 runs)


def test_backend_moves_single_backend_chapters_and_drops_their_seeding():
    lad = ladders.load("migrating-bottleneck", backend="s3")
    assert [r.backend for r in lad.chapters[0].runs] == ["s3"] and lad.chapters[0].runs[0].seed is None
    assert [r.backend for r in lad.chapters[5].runs] == ["dynamodb", "s3", "dynamodb", "s3"]  # the comparison stays


def test_a_users_ladder_with_overrides_and_quick(tmp_path):
    lad = ladders.load(str(_write(tmp_path, GOOD)), quick=True)
    (ch,) = lad.chapters
    assert [(r.label, r.duration_s, r.workers) for r in ch.runs] == [("namespaced-dynamodb-2w", 5.0, 2),
                                                                    ("namespaced-dynamodb-4w", 5.0, 4)]
    assert ch.runs[0].scenario.lock.wait_s == 2.0 and ch.runs[0].seed.models == 3
    assert ch.slug == "01-one"


SIZES = """
name = "sizes"
[[chapter]]
name = "one"
scenario = "legacy-gsi"
workers = [2, 4]
duration = "20s"
seed = [{ models = 3, versions = 2 }, { models = 12, versions = 2 }]
quick = { duration = "5s", seed = [{ models = 2, versions = 2 }, { models = 8, versions = 2 }] }
expect = { bound_by = ["partition"], grew_with_items = ["read_units"] }
"""


def test_a_list_of_seeds_makes_one_run_per_pre_aged_size_as_workers_makes_one_per_fleet(tmp_path):
    path = str(_write(tmp_path, SIZES))
    (ch,) = ladders.load(path).chapters
    assert [(r.label, r.workers, r.seed.models, r.seed.versions) for r in ch.runs] == [
        ("legacy-gsi-dynamodb-2w-3x2", 2, 3, 2), ("legacy-gsi-dynamodb-2w-12x2", 2, 12, 2),
        ("legacy-gsi-dynamodb-4w-3x2", 4, 3, 2), ("legacy-gsi-dynamodb-4w-12x2", 4, 12, 2)]
    assert ch.expect["grew_with_items"] == ["read_units"]
    assert ch.run_expectations(ch.runs[0]) == {"bound_by": ["partition"]}  # a cross-run expectation, not a run's
    (quick,) = ladders.load(path, quick=True).chapters
    assert [(r.label, r.duration_s) for r in quick.runs] == [
        ("legacy-gsi-dynamodb-2w-2x2", 5.0), ("legacy-gsi-dynamodb-2w-8x2", 5.0),
        ("legacy-gsi-dynamodb-4w-2x2", 5.0), ("legacy-gsi-dynamodb-4w-8x2", 5.0)]
    # one seed keeps the run's name as it was (no size in it)
    (one,) = ladders.load(str(_write(tmp_path, GOOD, "one.toml"))).chapters
    assert [r.label for r in one.runs] == ["namespaced-dynamodb-2w", "namespaced-dynamodb-4w"]
    assert ladders.pre_aged_files(ch.runs[1].seed) == 24  # the model's layout: models x versions
    assert "pre-aged 12 models x 2 versions" in ladders.run_line(ch.runs[1])


def test_a_bad_list_of_seeds_is_one_line_and_exit_2(tmp_path, capsys):
    path = _write(tmp_path, SIZES.replace("{ models = 12, versions = 2 }", "{ models = 3, versions = 2 }", 1))
    assert main(["story", str(path), "--run-dir", str(tmp_path / "story")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and not (tmp_path / "story").exists()
    assert err.startswith(f"harness: {path}: chapter[1].seed lists the size 3 models x 2 versions twice")


BAD = [
    ('name = "x"\nchapters = 1\n', "chapters is not a known key"),
    ('name = "x"\n', "chapter must be one or more [[chapter]] tables"),
    ('[[chapter]]\nscenario = "namespaced"\n', "chapter[1].name must be a non-empty string"),
    ('[[chapter]]\nname = "a"\n', "chapter[1].scenario is missing"),
    ('[[chapter]]\nname = "a"\nscenario = "nosuch"\n', "chapter[1].scenario unknown scenario 'nosuch'"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nexpect = { bond_by = ["lock"] }\n',
     "chapter[1].expect.bond_by is not a known key"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nexpect = { bound_by = ["locks"] }\n',
     "chapter[1].expect.bound_by must be a list of bounds"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nexpect = { bound_by = ["step:comit"] }\n',
     "chapter[1].expect.bound_by names no step: 'step:comit'"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nexpect = { grew = ["catalog"] }\n',
     "chapter[1].expect.grew must be a list of work counts"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nexpect = { rate = "down" }\n',
     "chapter[1].expect.rate must be one of"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nexpect = { more_workers = "no faster" }\n',
     "chapter[1].expect.more_workers needs runs at two fleet sizes"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nexpect = { backends = "dynamodb faster" }\n',
     "chapter[1].expect.backends needs one scenario on both backends"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nworkers = [2, "x"]\n',
     "chapter[1].workers must be an integer or a list of them"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nduration = "soon"\n', "chapter[1].duration must be a"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nbackend = ["dynamodb", "s3"]\nseed = { models = 2 }\n',
     "chapter[1].seed pre-ages DynamoDB items"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nseed = { models = 2, orphans = 3 }\n',
     "chapter[1].seed.orphans (3) cannot be more than seed.models (2)"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nlatency = "aws-moon"\n', "chapter[1].latency"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nquick = { durations = "5s" }\n',
     "chapter[1].quick.durations is not a known key"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\noverrides = { lock = { wait = "never" } }\n',
     "chapter[1].overrides (over namespaced.toml): lock.wait must be a duration"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\noverrides = { fleet = { workerz = 3 } }\n',
     "chapter[1].overrides (over namespaced.toml): fleet.workerz is not a known key"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\n[[chapter]]\nname = "a"\nscenario = "pruning"\n',
     "chapter[2].name 'a' names two chapters"),
    ('[[chapter]]\nname = "a"\n[[chapter.run]]\nscenario = "pruning"\nexpect = { more_workers = "faster" }\n',
     "chapter[1].run[1].expect.more_workers is not a known key"),
    ('[[chapter]\nname = "a"\n', "malformed TOML"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nseed = [{ models = 2 }]\n',
     "chapter[1].seed must be a seed table or a list of two or more (one run per pre-aged size)"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nseed = [{ models = 2 }, 3]\n',
     "chapter[1].seed must be a seed table or a list of two or more"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nseed = [{ models = 2 }, { models = "x" }]\n',
     "chapter[1].seed[2].models must be an integer of at least 1"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nseed = [{ models = 2 }, { models = 2, versions = 10 }]\n',
     "chapter[1].seed lists the size 2 models x 10 versions twice"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nseed = { models = 2 }\n'
     'expect = { grew_with_items = ["read_units"] }\n', "chapter[1].expect.grew_with_items needs runs at two "
                                                       "pre-aged sizes"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nworkers = [2, 4]\nexpect = { grew_with_items = '
     '["read_units"] }\n', "chapter[1].expect.grew_with_items needs runs at two pre-aged sizes"),
    ('[[chapter]]\nname = "a"\nscenario = "namespaced"\nseed = [{ models = 2 }, { models = 4 }]\n'
     'expect = { grew_with_items = ["reads"] }\n', "chapter[1].expect.grew_with_items must be a list of work counts"),
]


@pytest.mark.parametrize("text,problem", BAD, ids=[p for _, p in BAD])
def test_a_malformed_ladder_is_one_line_naming_the_file_and_the_key(tmp_path, text, problem):
    path = _write(tmp_path, text)
    with pytest.raises(HarnessError) as e:
        ladders.load(str(path))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path)) and problem in msg, msg


def test_the_command_line_says_it_in_one_line_and_exits_2_before_running_anything(tmp_path, capsys):
    path = _write(tmp_path, BAD[6][0])
    story = tmp_path / "story"
    assert main(["story", str(path), "--run-dir", str(story)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"harness: {path}: chapter[1].expect.bound_by")
    assert not story.exists()  # refused before anything started
    assert main(["story", "nosuch-ladder"]) == 2
    assert "unknown ladder 'nosuch-ladder': choose one of migrating-bottleneck" in capsys.readouterr().err


def test_list_shows_the_shipped_ladders_with_their_chapters(capsys):
    assert main(["story", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("migrating-bottleneck") and "6 chapters" in out[0]
    assert out[2].strip().startswith("2. per-model GSI, one lock per table: shared-lock on dynamodb, 6 workers")


def test_a_ladder_of_swamp_runs_may_expect_push_failed(tmp_path):
    """push_failed is the swamp driver's kind (a push swamp downgraded to a warning): a ladder can expect it, and
    the report's failure columns and summary name it in order, before other."""
    from harness.report.run.compute import ERROR_KINDS
    text = '[[chapter]]\nname = "a"\nscenario = "namespaced"\nexpect = { errors = ["push_failed"] }\n'
    (ch,) = ladders.load(str(_write(tmp_path, text))).chapters
    assert ch.run_expectations(ch.runs[0])["errors"] == ["push_failed"]
    assert ERROR_KINDS.index("push_failed") == len(ERROR_KINDS) - 2
