"""The violating schedules ``harness explore --random`` found in the fenced datastore, replayed: none violates now.

``tests/fixtures/explore-holes.json`` stores them as plain steps (``harness explore --replay`` plays them without
Hypothesis); each replays in a fraction of a second here (in-process moto, a FakeClock, one module-wide set of
clients). The tests after the replay pin what the explorer itself must get right for its verdicts to mean
anything: a lost answer's first send is timed like any send.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.products.explore.world import Target

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "explore-holes.json"
STORED = json.loads(FIXTURE.read_text())["schedules"]
pytestmark = pytest.mark.xdist_group("explore-holes")  # one process: the module's in-process AWS is shared


@pytest.fixture(scope="module")
def troupe():
    from harness.products.explore.simulate import simulation

    with simulation() as t:  # (no Hypothesis runs here: a replay needs none)
        yield t


def _target(s: dict) -> Target:
    return Target(s["backend"], s["sync"], s["layout"], s["fencing"], s.get("uploads", "profile"),
                  s.get("shards", "model"))


@pytest.mark.parametrize("i", range(len(STORED)), ids=lambda i: f"schedule-{i + 1}")
def test_a_stored_violating_schedule_violates_no_more(troupe, i):
    from harness.products.explore.simulate import replay

    s = STORED[i]
    out = replay(_target(s), s["schedule"], troupe)
    assert out.violations == 0, (s["what"], out.findings, out.words)


def test_a_seal_whose_answer_is_lost_is_timed_by_its_first_send(troupe):
    """Issue 43's hole 3 (the fixture's fourth schedule): A's seal lands before B's grant and its answer is lost;
    botocore resends it after B committed on top. The explorer's hook lands the first send itself: the send must
    still be noted (old code: only the resend was, so the checker timed A's seal after B's grant: unsafe overlaps
    1, although the datastore had done right)."""
    from harness.products.explore.play import Play
    from harness.products.explore.simulate import IDS

    s = next(x for x in STORED if x["schedule"][0].get("fault") == "lost-answer" and x["backend"] == "dynamodb")
    IDS.rng.seed(0)
    p = Play(_target(s), troupe)
    for step in s["schedule"]:
        p.step(step)
    report = p.finish()
    commits = [e for e in p.stage.events if e["type"] == "commit"]
    a = next(c for c in commits if c["holder"] == "A" and c["fence"] == 3)  # the commit whose seal was lost
    b_grant = next(e for e in p.stage.events if e["type"] == "grant" and e["holder"] == "B" and e["fence"] == 4)
    assert a["ok"] and a["seq"] < next(c["seq"] for c in commits if c["holder"] == "B" and c["fence"] == 4)
    assert a["seal_ms"] < b_grant["granted_ms"] < a["sent_ms"], (a, b_grant)  # first send before, resend after
    assert report["overlaps"] == 1 and report["uncertain_overlaps"] == 1 and report["violations"] == 0, report
