"""Locust's web UI, made the harness's: a harness tab, an honest header, a form that records what it ran.

Everything goes through what Locust's UI offers extensions: ``template_args``
(``extendedTabs`` / ``extendedTables``, the form's ``extra_options``), the
``extended_stats`` of ``/stats/requests``, and routes of our own on
``web_ui.app``. Four of Locust's view functions are wrapped, each for its
reasons (the polling ones: Locust's UI, 2.47.0, polls only while the state it
last read is "spawning" or "running", see ``PASSING_STATES``):

- ``/`` adds one script (the harness panel: the scenario's description and
  settings, the session's tests with links to their reports; it also keeps
  Locust's own UI polling through a stop, see ``harness.js``) and renders a
  page asked for while Locust is stopping as "running" (Locust's UI would
  never poll from "stopping");
- ``/swarm`` checks the scenario and the options the run's plan owns, and
  takes the run time, scenario and latency for the next test's plan (the
  harness times, and names, the stop), and answers a start once Locust has
  left "stopped" (``START_WAIT_S``);
- ``/stop`` notes why the test stopped;
- ``/stats/requests`` puts the steps in loop order and makes the header's
  rate and failure % the harness tab's own (``tab.header``: Locust counts
  every step as a request, over a window of its own), adds the harness tab's
  rows, and carries the runner's state now (not Locust's cached answer's).

Plain ``locust --headless`` output is untouched: the step names change only in
the UI's JSON.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import gevent
from flask import Response, jsonify, make_response, render_template, request, send_from_directory
from locust.runners import STATE_CLEANUP, STATE_INIT, STATE_RUNNING, STATE_SPAWNING, STATE_STOPPED, STATE_STOPPING
from locust.util.timespan import parse_timespan
from werkzeug.datastructures import ImmutableMultiDict

from harness.load.web import form
from harness.load.web.stats import ITERATION, stats_for_ui
from harness.load.web.tab import COLUMNS
from harness.record import runinfo

log = logging.getLogger("harness")

TAB_KEY = "harness"
SCRIPT = Path(__file__).with_name("harness.js")
SCRIPT_TAG = '<script src="./harness/harness.js" defer></script>'
LOCUST_SCRIPT = '<script type="module"'
# States Locust passes through on its way to "stopped". Locust's UI (2.47.0) polls only from "spawning" or
# "running": from one of these it would never learn that the stop ended (harness.js says more).
PASSING_STATES = (STATE_STOPPING, STATE_CLEANUP)
# For the same reason /swarm answers a start once Locust has left "ready" / "stopped": the harness prepares the
# test (its record, the table or bucket) in test_start, before Locust's state moves, and a page that read
# "stopped" after Start would never poll the test it started. Bounded: a start that fails ends the wait too.
START_WAIT_S = 60.0


def install(environment: Any, session: Any) -> None:
    """Wire the harness into ``environment.web_ui`` (called from Locust's ``init``)."""
    web_ui = environment.web_ui
    app = web_ui.app
    plan = session.plan
    auth = web_ui.auth_required_if_enabled
    web_ui.template_args["extendedTabs"] = [{"key": TAB_KEY, "title": "Harness"}]
    web_ui.template_args["extendedTables"] = [{"key": TAB_KEY, "structure": COLUMNS}]
    views = app.view_functions
    app.json.sort_keys = False  # the form lists the options in the harness's order (scenario first)

    def index() -> Response | str:
        web_ui.update_template_args()
        args = web_ui.template_args
        # the harness's endpoints come from the run's plan: Locust's "no host attribute set. Please provide one"
        # asked for something nothing uses (harness.js hides the Host field too)
        args["missing_host_warning"] = args["override_host_warning"] = False
        args["extra_options"] = form.adjust_extra_options(args["extra_options"], plan)
        if args.get("state") in PASSING_STATES:  # the page polls, and harness.js shows the real state
            args["state"] = STATE_RUNNING
        html = render_template("index.html", template_args=web_ui.template_args)
        # before Locust's own (module) script: deferred scripts run in document order, so harness.js has
        # wrapped fetch before Locust's UI asks for its first /stats/requests
        if LOCUST_SCRIPT in html:
            return html.replace(LOCUST_SCRIPT, SCRIPT_TAG + LOCUST_SCRIPT, 1)
        return html.replace("</body>", SCRIPT_TAG + "</body>", 1)

    swarm_view = views["locust.swarm"]

    def swarm() -> Response:
        problem = form.check_swarm(request.form, plan)
        running = environment.runner.state in (STATE_SPAWNING, STATE_RUNNING)
        run_time = (request.form.get("run_time") or "").strip()
        try:
            seconds = parse_timespan(run_time) if run_time else None
        except ValueError:
            problem = problem or f"run time {run_time!r} is not a duration: use e.g. 20s, 3m, 1h20m"
        if problem:
            log.error("harness: test not started: %s", problem)
            return jsonify({"success": False, "message": problem, "host": environment.host})
        if running:
            try:
                session.edited(int(request.form["user_count"]), float(request.form["spawn_rate"]))
            except (KeyError, ValueError):
                pass  # Locust answers a bad edit itself
        else:  # the next test's plan takes these (run time, scenario, latency) from the form
            session.pending_form = {"run_time_s": float(seconds) if seconds else None}
            for key in ("scenario", "latency"):
                if key in request.form:
                    session.pending_form[key] = request.form[key].strip()
        kept = [(k, v) for k, v in request.form.items(multi=True) if k != "run_time" and k not in form.OWNED]
        request.form = ImmutableMultiDict(kept)  # the harness times the test (and says why it stopped)
        response = swarm_view()
        if not running and response.is_json and response.get_json().get("success"):
            wait_for_start()
        if seconds and response.is_json and response.get_json().get("success"):
            data = response.get_json()
            data["run_time"] = seconds
            return jsonify(data)
        return response

    def wait_for_start() -> None:
        """Until Locust's state has left "ready" / "stopped" (or its start greenlets ended, or START_WAIT_S)."""
        deadline = time.monotonic() + START_WAIT_S
        while environment.runner.state in (STATE_INIT, STATE_STOPPED) and time.monotonic() < deadline:
            # Locust's own (2.47.0): the web UI's start greenlet (a master's start), the runner's spawning one
            starting = (getattr(web_ui, "_swarm_greenlet", None),
                        getattr(environment.runner, "spawning_greenlet", None))
            if not any(g is not None and not g.dead for g in starting):
                return
            gevent.sleep(0.1)
        if environment.runner.state in (STATE_INIT, STATE_STOPPED):
            log.warning("harness: Locust had not left %r %g s after the start", environment.runner.state, START_WAIT_S)

    stop_view = views["locust.stop"]

    def stop() -> Response:
        session.note_stop("stopped from the web UI")
        return stop_view()

    stats_view = views["locust.request_stats"]

    def request_stats() -> Response:
        response = stats_view()
        data = response.get_json()
        runner = environment.runner
        entry = next((e for e in runner.stats.entries.values() if e.name == ITERATION), None)
        percentiles = None
        if entry is not None and entry.num_requests:
            percentiles = {f"response_time_percentile_{p}": entry.get_current_response_time_percentile(p)
                           for p in (0.5, 0.95)}
        try:
            rows = session.tab_rows()
        except Exception:  # a broken tab must not blank Locust's own page: log it, keep the rest
            log.exception("harness: the harness tab failed")
            rows = None
        # the header's rate and failure % are the tab's (tab.header): one computation, one number on the page
        header = rows[0].get("header") if rows else None
        data = stats_for_ui(data, entry.to_dict() if entry is not None else None, percentiles, header)
        # Locust serves this JSON from a cache (2 s, longer once a computation took longer): the state is the
        # runner's own, now, so that the UI never acts on a state Locust has already left (see PASSING_STATES)
        data["state"], data["user_count"] = runner.state, runner.user_count
        if "worker_count" in data:
            data["worker_count"] = runner.worker_count
        if rows is not None:
            data["extended_stats"] = [{"key": TAB_KEY, "data": rows}]
        return jsonify(data)

    views["locust.index"] = auth(index)
    views["locust.swarm"] = auth(swarm)
    views["locust.stop"] = auth(stop)
    views["locust.request_stats"] = auth(request_stats)

    @app.route("/harness/harness.js")
    def script() -> Response:
        response = make_response(SCRIPT.read_text())
        response.headers["Content-Type"] = "application/javascript"
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.route("/harness/status")
    @auth
    def status() -> Response:
        return jsonify(session.status())

    @app.route("/harness/scenarios")
    @auth
    def catalogue() -> Response:
        return jsonify({"current": form.form_value(plan.scenario.source, plan.scenario_dirs),
                        "scenarios": form.catalogue(plan)})

    @app.route("/harness/tests/<int:number>/report/<path:name>")
    @auth
    def report(number: int, name: str) -> Response:
        if session.web:
            test_dir = session.root / runinfo.TESTS_DIR / f"{number:03d}"
        else:
            test_dir = session.root
        return send_from_directory(test_dir / "report", name)
