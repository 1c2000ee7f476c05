"""The web UI's page as the harness serves it: its script before Locust's, and a page asked for mid-stop still polls.

Locust's UI (2.47.0) polls /stats/requests only from "spawning" or "running" (see harness.js): a page rendered
in "stopping" or "cleanup" would never learn that the stop ended. The browser side is tests/e2e/test_web_ui.py.
Run in a subprocess: importing Locust monkey-patches the whole interpreter (gevent), which must happen before
anything imports ssl and must not leak into other tests.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import json, re, time
from types import SimpleNamespace
import gevent
from locust import User, task
from locust.env import Environment
from harness.load.web import ui
from tests.support.plans import make_plan

class Idle(User):
    @task
    def nothing(self): pass

env = Environment(user_classes=[Idle])
env.create_local_runner()
web_ui = env.create_web_ui("127.0.0.1", 0)  # not started: Flask's test client asks it
ui.install(env, SimpleNamespace(plan=make_plan(), tab_rows=lambda: [], pending_form={}))
client = web_ui.app.test_client()
out = {}
for state in ("stopping", "cleanup", "stopped"):
    env.runner.state = state
    html = client.get("/").get_data(as_text=True)
    out[state] = {"page": re.search(r'"state": "(\w+)"', html).group(1),
                  "script_first": html.index(ui.SCRIPT_TAG) < html.index(ui.LOCUST_SCRIPT)}
    out[state]["json"] = client.get("/stats/requests").get_json()["state"]  # within Locust's 2 s cache
env.runner.state = "stopped"
# a start the harness takes a while to prepare (test_start: the record, the table), Locust "stopped" meanwhile
env.events.test_start.add_listener(lambda **_: gevent.sleep(2.5))
began = time.monotonic()
answer = client.post("/swarm", data={"user_count": 1, "spawn_rate": 1, "host": ""}).get_json()
start = {"success": answer["success"], "waited_s": time.monotonic() - began,
         "state": client.get("/stats/requests").get_json()["state"]}
env.runner.quit()
print(json.dumps({"pages": out, "start": start, "passing": list(ui.PASSING_STATES), "script": str(ui.SCRIPT)}))
"""


def _served() -> dict:
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_page_asked_for_while_locust_starts_or_stops_is_one_that_polls():
    served = _served()
    got = served["pages"]
    # Locust's UI polls from "running" (harness.js shows the real state); a settled state is rendered as it is
    assert {s: g["page"] for s, g in got.items()} == {"stopping": "running", "cleanup": "running",
                                                      "stopped": "stopped"}
    # harness.js wraps fetch before Locust's script asks for anything (deferred scripts run in document order)
    assert all(g["script_first"] for g in got.values())
    # the JSON itself tells the truth, and the runner's state now, not Locust's cached answer's
    assert {s: g["json"] for s, g in got.items()} == {s: s for s in got}
    # /swarm answers a start once Locust has left "stopped": the page's first poll finds the test it started
    start = served["start"]
    assert start["success"] and start["waited_s"] >= 2.5 and start["state"] in ("spawning", "running")
    # the server's passing states are the ones harness.js passes Locust's UI through
    script = Path(served["script"]).read_text()
    passing = re.search(r"const PASSING = new Set\(\[([^\]]*)\]\)", script).group(1)
    assert sorted(re.findall(r'"(\w+)"', passing)) == sorted(served["passing"]) == ["cleanup", "stopping"]
