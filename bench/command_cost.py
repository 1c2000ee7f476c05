"""What a process per step costs: the command driver's own CPU and wall time per iteration, beside the command's.

    python bench/command_cost.py            # 20 iterations of namespaced-command on an embedded moto server
    python bench/command_cost.py --quick    # 2 iterations (CI: checks it runs and prints its figures)
    python bench/command_cost.py --json     # the figures as JSON too

One worker of the command driver (``harness.load.drivers.command``, as a Locust user runs it, on gevent's hub,
without Locust) runs the reference command (``harness-swamp``) against a moto server on loopback. Per
iteration, medians: the driver's own CPU (this process: spawning, the OTLP receiver parsing what came,
joining spans into the row; ``getrusage(RUSAGE_SELF)``) and wall time outside the command; the command's CPU
(``getrusage(RUSAGE_CHILDREN)``: the processes, reaped), its wall time (spawn to exit) and the part of it its
spans account for (the steps). Beside them, what a bare process costs: ``python -c pass``, and the reference
command's imports alone; and the driver's cost with a command that does nothing (``true``, no spans) and the
receiver's CPU per span (swamp's JSON, one POST per span, decoded in process). The machine is shared: quote
the ratios beside the medians, from one run.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def _process(argv: list[str], n: int) -> tuple[float, float]:
    """(median wall s, median CPU s) of ``argv`` as a new process, ``n`` times."""
    walls, cpus = [], []
    for _ in range(n):
        c0, t0 = _cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu(resource.RUSAGE_CHILDREN) - c0)
    return statistics.median(walls), statistics.median(cpus)


def _driver(plan, n: int) -> list[dict]:
    """Run ``n`` iterations of one command-driver worker; per iteration its own and its commands' costs."""
    from harness.load import drivers
    from harness.record.schema import STEP_COLUMNS

    shared: dict = {}
    d = drivers.make(drivers.DriverContext(plan, process="local", user="w0-0", namespace="w0-0", rng_seed=1,
                                           shared=shared))
    out = []
    try:
        d.run_once()  # setup and the first run: imports warmed, the table's first items
        for _ in range(n):
            s0, c0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
            o = d.run_once()
            r = o.row
            steps = sum(r[c] or 0.0 for c in STEP_COLUMNS.values())
            out.append({"ok": r["ok"], "driver_cpu_ms": (_cpu(resource.RUSAGE_SELF) - s0) * 1000,
                        "command_cpu_ms": (_cpu(resource.RUSAGE_CHILDREN) - c0) * 1000,
                        "total_ms": r["total_ms"], "command_ms": r["command_ms"] or 0.0, "steps_ms": steps,
                        "spans": r["spans"] or 0})
    finally:
        shared["otlp"].close()
    return out


def _receiver_cpu_per_span(n: int) -> float:
    """The receiver's CPU per span: swamp's JSON, one span a body (its SimpleSpanProcessor's), decoded here."""
    sys.path.insert(0, str(ROOT / "tests"))
    from harness.record.otlp.receiver import Receiver, TraceBook
    from tests.unit.record.test_otlp import PARENT, TRACE, swamp_json

    book = TraceBook()
    book.expect(TRACE, PARENT, {})
    r, body = Receiver(book), swamp_json(False)
    c0 = _cpu(resource.RUSAGE_SELF)
    for _ in range(n):
        r.accept("POST", "/v1/traces", "", {"content-type": "application/json"}, body)
    return (_cpu(resource.RUSAGE_SELF) - c0) / n * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 iterations, 3 bare processes (seconds)")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    n = 2 if args.quick else args.iterations
    from dataclasses import replace

    from harness.aws.moto_server import EmbeddedMoto
    from harness.config.factory import Factory
    from tests.support.plans import at, make_plan

    bare = _process([sys.executable, "-c", "pass"], 3 if args.quick else 10)
    imports = _process([sys.executable, "-c", "import harness.refcmd.run, harness.refcmd.tracing, "
                        "harness.config.factory, opentelemetry.exporter.otlp.proto.http.trace_exporter"],
                       3 if args.quick else 10)
    server = EmbeddedMoto().start()
    tmp = Path(tempfile.mkdtemp(prefix="command-cost-"))
    try:
        plan = at(make_plan("namespaced", driver="command", run_dir=str(tmp / "run")), dynamodb=server.url,
                  s3=server.url)
        f = Factory(plan)
        clients = f.clients()
        f.provision(clients, f.backend(clients))
        it = _driver(plan, n)
        sc = plan.scenario
        empty = replace(sc, driver=replace(sc.driver, options={"run": ["true"], "late_wait": "0s"}))
        true_plan = replace(plan, scenario=empty, run_dir=str(tmp / "true"))
        nothing = _driver(true_plan, n)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # the two runs' rows: the figures below are read already
    per_span = _receiver_cpu_per_span(200 if args.quick else 2000)

    def med(rows: list[dict], k: str) -> float:
        return statistics.median(r[k] for r in rows)

    fig = {
        "iterations": n, "ok": sum(r["ok"] for r in it),
        "driver_cpu_ms": med(it, "driver_cpu_ms"), "driver_wall_ms": med(it, "total_ms") - med(it, "command_ms"),
        "command_cpu_ms": med(it, "command_cpu_ms"), "command_wall_ms": med(it, "command_ms"),
        "steps_ms": med(it, "steps_ms"), "spans": med(it, "spans"),
        "python_pass_wall_ms": bare[0] * 1000, "python_pass_cpu_ms": bare[1] * 1000,
        "imports_wall_ms": imports[0] * 1000, "imports_cpu_ms": imports[1] * 1000,
        "true_driver_cpu_ms": med(nothing, "driver_cpu_ms"), "true_command_wall_ms": med(nothing, "command_ms"),
        "receiver_cpu_per_span_ms": per_span,
    }
    fig["driver_share_of_cpu"] = fig["driver_cpu_ms"] / max(fig["driver_cpu_ms"] + fig["command_cpu_ms"], 1e-9)
    fig["outside_spans_share"] = 1 - fig["steps_ms"] / max(fig["command_wall_ms"], 1e-9)
    print(f"command driver, {n} iterations of namespaced-command on moto (medians per iteration; the machine "
          f"may be shared)")
    print(f"  driver (this process): {fig['driver_cpu_ms']:.1f} ms CPU, {fig['driver_wall_ms']:.1f} ms wall outside "
          f"the command; {fig['spans']:.0f} spans joined")
    print(f"  command (its process): {fig['command_cpu_ms']:.0f} ms CPU, {fig['command_wall_ms']:.0f} ms wall, of "
          f"which its spans' steps {fig['steps_ms']:.0f} ms ({fig['outside_spans_share']:.0%} outside every step)")
    print(f"  ratio: the driver is {fig['driver_share_of_cpu']:.1%} of the iteration's CPU "
          f"(driver {fig['driver_cpu_ms']:.1f} ms : command {fig['command_cpu_ms']:.0f} ms)")
    print(f"  a bare `python -c pass`: {fig['python_pass_wall_ms']:.0f} ms wall, {fig['python_pass_cpu_ms']:.0f} ms "
          f"CPU; the reference command's imports: {fig['imports_wall_ms']:.0f} ms wall, {fig['imports_cpu_ms']:.0f} "
          "ms CPU")
    print(f"  the driver with `true` (no spans): {fig['true_driver_cpu_ms']:.1f} ms CPU per iteration, "
          f"{fig['true_command_wall_ms']:.1f} ms wall per process; the receiver: "
          f"{fig['receiver_cpu_per_span_ms']:.3f} ms CPU per span (swamp's JSON, a span a body)")
    if args.json:
        print(json.dumps(fig, sort_keys=True))
    return 0 if fig["ok"] == n else 1


if __name__ == "__main__":
    raise SystemExit(main())
