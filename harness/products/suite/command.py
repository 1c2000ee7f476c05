"""``harness suite NAME``: a benchmark suite's scenarios on one backend, every layout, a fresh datastore each.

Planned like a run (the suite file parsed once, endpoints resolved, the
embedded stand-in started for the backend's service), built through the
plan's ``Factory`` (one fresh, tagged table or bucket per scenario and layout,
deleted after it), run by ``harness.products.suite.runner`` on one client, recorded
into the run directory as it goes (``suite-trials.jsonl``, one trial a line;
``suite-run.json``), then reported from those files alone
(``harness.products.suite.page.build``: ``suite.json``, ``suite.txt``, ``suite.html``).
With ``--baseline OTHER``: every phase against the other run's
(``harness.report.compare.suite``), ``compare.json`` and ``compare.txt``; exit 3
when a phase is credibly slower by more than ``--threshold``.

Exit codes: 0; 1 a scenario failed (the others still ran and are reported);
2 bad input (one line); 3 a regression against ``--baseline``.
"""

from __future__ import annotations

import json
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.aws.clients import Clients, Sessions
from harness.config.build import resolve_connection, stand_in_plan, start_stand_in
from harness.config.factory import Factory
from harness.config.plan import RunPlan
from harness.config.preflight import check_reachable
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode
from harness.datastore.backends.base import Backend
from harness.products.suite import page as suite_page
from harness.products.suite import spec as suites
from harness.products.suite import suite as suite_report
from harness.products.suite.runner import Outcome, Runner, Trial
from harness.record import runinfo
from harness.report.compare import suite as suite_compare
from harness.supervisor.supervise import signals_raise


@dataclass(frozen=True)
class SuiteOptions:
    """What ``harness suite``'s command line asked for."""

    suite: str
    backend: str | None = None
    layouts: str | None = None  # comma-separated, default every layout of the backend
    trials: int | None = None
    quick: bool = False
    scenarios: str | None = None  # comma-separated numbers or names
    run_dir: str | None = None
    compare: str | None = None  # another run's suite.json (or its run directory)
    threshold: float = 10.0  # percent
    min_ms: float = 1.0
    latency: str | None = None
    stand_in: str | None = None
    s3_stand_in: str | None = None


class FactoryDatastores:
    """The runner's tables and buckets: each one the plan for its layout, provisioned and torn down by the
    plan's ``Factory`` (tagged as the harness's; only what it created is deleted)."""

    def __init__(self, plan: RunPlan, sessions: Sessions, clients: Clients, executor: ThreadPoolExecutor,
                 note: Callable[[str], None]) -> None:
        self.plan, self.sessions, self.clients, self.executor, self.note = plan, sessions, clients, executor, note
        self._made: dict[int, Factory] = {}
        self._said: set[str] = set()

    def _note_once(self, line: str) -> None:
        key = line.split(": ", 2)[-1]  # the same note for every table of a run, said once
        if key not in self._said:
            self._said.add(key)
            self.note(line)

    def make(self, layout: str, name: str) -> Backend:
        factory = Factory(suites.layout_plan(self.plan, layout, name), sessions=self.sessions, executor=self.executor)
        backend = factory.backend(self.clients)
        factory.provision(self.clients, backend, note=self._note_once)
        self._made[id(backend)] = factory
        return backend

    def drop(self, backend: Backend) -> None:
        factory = self._made.pop(id(backend), None)
        if factory is not None:
            factory.teardown(self.clients, backend)


def _layouts(given: str | None, backend: str) -> tuple[str, ...]:
    own = suites.LAYOUTS[backend]
    if not given:
        return own
    picked = tuple(x.strip() for x in given.split(",") if x.strip())
    for x in picked:
        if x not in own:
            raise HarnessError(f"--layout {x}: {backend}'s layouts are {', '.join(own)}")
    return picked


def _baseline(path: str, backend: str) -> dict[str, Any]:
    try:
        doc = suite_report.read_summary(path)
    except FileNotFoundError:
        raise HarnessError(f"--baseline {path}: no such file (give another run's suite.json or its run directory)"
                           ) from None
    except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError
        raise HarnessError(f"--baseline {path}: not a suite.json ({e})") from None
    if doc.get("backend") != backend:
        raise HarnessError(f"--baseline {path} is a {doc.get('backend')} run and this one is {backend}: compare runs "
                           "of the same backend")
    return doc


def _run_dir(opts: SuiteOptions, run_id: str) -> Path:
    path = Path(opts.run_dir or Path("runs") / run_id)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise HarnessError(f"run directory {path} already exists and is not empty: choose another --run-dir")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _summary(say: Callable[[str], None]) -> Callable[[Outcome], None]:
    def report(o: Outcome) -> None:
        head = f"harness: {o.scenario.number:>2} {o.scenario.name} [{o.layout}]"
        if o.not_applicable:
            say(f"{head}: not applicable ({o.not_applicable})")
        elif o.error:
            say(f"{head}: FAILED after {len(o.trials)} trials: {o.error}")
        else:
            ms = sorted(t.total_ms for t in o.trials)
            say(f"{head}: {len(ms)} trials, total median {statistics.median(ms):.1f} ms (min {ms[0]:.1f}, "
                f"max {ms[-1]:.1f})")

    return report


def run_suite(opts: SuiteOptions, env: UserEnvironment, say: Callable[[str], None] = print) -> int:
    """Plan, run, record and report one suite; compare it with another run's when asked. The exit code."""
    suite = suites.load(opts.suite)
    if opts.quick:
        suite = suite.quick()
    suite = suite.with_trials(opts.trials).select(opts.scenarios)
    backend = opts.backend or suite.backend
    if backend not in suites.LAYOUTS:
        raise HarnessError(f"unknown backend {backend!r}: choose dynamodb or s3")
    layouts = _layouts(opts.layouts, backend)
    if opts.threshold < 0 or opts.min_ms < 0:
        raise HarnessError("--threshold and --min-ms must be 0 or more")
    baseline = _baseline(opts.compare, backend) if opts.compare else None
    stand_in = stand_in_plan(opts.stand_in or env.stand_in, opts.s3_stand_in or env.s3_stand_in, env)
    connection = resolve_connection(env, aws=False, needed=[backend])
    run_id = f"{suite.name}-{backend}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"
    plan = suites.suite_plan(suite, backend, connection, stand_in, run_id, "", opts.latency)  # checks the profile
    run_dir = _run_dir(opts, run_id)
    plan = replace(plan, run_dir=str(run_dir))
    outcomes: list[Outcome] = []
    info: dict[str, Any] = {
        "suite": suite.name, "suite_path": suite.path, "source": suite.source, "backend": backend,
        "layouts": list(layouts), "quick": suite.is_quick, "trials": suite.trials,
        "shape": suite.to_dict()["shape"], "datastore": suite.to_dict()["datastore"], "latency": opts.latency,
        "scenarios": [{"number": s.number, "name": s.name, "op": s.op, "phases": list(s.phases), "note": s.note,
                       "layouts": list(s.layouts)} for s in suite.scenarios],
        "started_at": _now(), "host": runinfo.host(), "versions": runinfo.versions(), "run_id": run_id}
    trials_file = (run_dir / suite_report.TRIALS_JSONL).open("a")

    def record(t: Trial) -> None:
        trials_file.write(json.dumps(t.to_dict()) + "\n")
        trials_file.flush()

    def finish(**extra: Any) -> None:
        info.update(outcomes=[o.to_dict() for o in outcomes], ended_at=_now(), **extra)
        (run_dir / suite_report.RUN_JSON).write_text(json.dumps(info, indent=2, default=str) + "\n")

    local = None
    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="suite-pool")
    try:
        with signals_raise():
            try:
                local, plan = start_stand_in(plan, say, run_dir)
                info["stand_in"] = plan.stand_in.started
                info["endpoint"] = plan.endpoint_summary()
                finish()
                sessions = Sessions(plan.connection.region)
                check_reachable(plan.connection, backend, sessions)
                factory = Factory(plan, sessions=sessions, executor=pool)
                clients = factory.clients()
                factory.fidelity(clients)
                stores = FactoryDatastores(plan, sessions, clients, pool, say)
                say(f"harness: suite {suite.name} on {backend} ({', '.join(layouts)}), {suite.trials} trials, "
                    f"{suite.shape.describe()} -> {run_dir}")
                report = _summary(say)

                def outcome(o: Outcome) -> None:
                    outcomes.append(o)
                    report(o)

                seed = secrets.randbits(32)
                info["order_seed"] = seed  # the per-round shuffle of the interleaved trials
                Runner(suite, stores, tag=secrets.token_hex(3), seed=seed, on_trial=record, on_outcome=outcome,
                       say=say).run(layouts)
                finish()
            except KeyboardInterrupt:
                finish(interrupted=True)
                if outcomes:
                    suite_page.build(run_dir)
                raise
    finally:
        trials_file.close()
        pool.shutdown(wait=False)
        if local:
            local.stop()
    doc, table = suite_page.build(run_dir)
    print(table, end="")
    print(f"harness: suite report {run_dir / 'suite.html'} (numbers: {run_dir / suite_report.SUITE_JSON})")
    code = 0
    failed = [o for o in outcomes if o.error]
    if failed:
        for o in failed:
            print(f"harness: scenario {o.scenario.number} [{o.layout}] failed: {o.error}", file=sys.stderr)
        code = ExitCode.FAILED
    if baseline is not None:
        cmp = suite_compare.compare(baseline, doc, threshold=opts.threshold / 100, min_ms=opts.min_ms)
        cmp["baseline"] = str(opts.compare)
        (run_dir / "compare.json").write_text(json.dumps(cmp, indent=2) + "\n")
        full = suite_compare.format_compare(cmp, str(opts.compare))
        (run_dir / "compare.txt").write_text(full + "\n")
        suite_page.build(run_dir, full)
        print(suite_compare.format_compare(cmp, str(opts.compare), only_flagged=True))
        if cmp["regressions"]:
            for x in cmp["regressions"]:
                print(f"harness: regression: {x['number']} {x['scenario']} [{x['layout']}] {x['phase']}: "
                      f"x{x['ratio']:.2f} [{x['interval'][0]:.2f}, {x['interval'][1]:.2f}]", file=sys.stderr)
            code = code or ExitCode.CHECKS_FAILED  # a failed scenario (incomplete results) says more
    return code
