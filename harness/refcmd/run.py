"""One call of the reference command: the worker's datastore as the last call left it, one command, saved.

``execute`` runs ``method run``, ``model delete`` or ``data prune`` on the harness's own datastore model,
exactly as the model driver's worker does (``harness.datastore.sync``), records its steps' times and every
request it made, saves the repository, and (when an OTLP endpoint is set) sends its spans
(``harness.refcmd.tracing``). The history the safety checker reads goes to ``HARNESS_HISTORY`` when set.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness.core.environment import CommandEnvironment
from harness.datastore.errors import error_kind
from harness.datastore.model import MODEL_TYPE
from harness.refcmd.repo import Repo


@dataclass
class Outcome:
    result: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None
    kind: str = ""


class TimedSteps(list):
    """The steps list a Datastore appends to, noting when each ended (its start: the end less its time)."""

    def __init__(self) -> None:
        super().__init__()
        self.ends: list[int] = []

    def append(self, step: Any) -> None:
        self.ends.append(time.time_ns())
        super().append(step)

    def timed(self) -> list[tuple[Any, int, int]]:
        return [(s, end - int(s.ms * 1e6), end) for s, end in zip(self, self.ends, strict=True)]


class History:
    """The checker's events as JSON lines, appended (the heartbeat's thread records too)."""

    def __init__(self, path: str) -> None:
        self.f = open(path, "a")  # noqa: SIM115 - closed by close()
        self.lock = threading.Lock()

    def __call__(self, event: dict) -> None:
        line = json.dumps(event, sort_keys=True, default=str) + "\n"
        with self.lock:
            self.f.write(line)

    def close(self) -> None:
        self.f.close()


def execute(cmd: dict[str, Any], started_ns: int) -> Outcome:
    env = CommandEnvironment.read()
    repo = Repo()
    history = History(env.history) if env.history else None
    store, plan, clients = repo.open(history, urls={"dynamodb": env.dynamodb_url, "s3": env.s3_url})
    requests = None
    if env.traces_endpoint:
        from harness.refcmd.tracing import RequestLog

        requests = RequestLog(plan.backend).install(getattr(clients, plan.backend))
    steps = TimedSteps()
    ready_ns = time.time_ns()
    out = Outcome()
    try:
        if cmd["command"] == "run":
            payloads = plan.scenario.workload.payload_bytes
            payload = payloads[store.calls % len(payloads)]
            store.calls += 1
            store.sync_run(cmd["instance"], cmd["method"], payload, steps)
            out.result = {"model": cmd["instance"], "method": cmd["method"], "status": "succeeded"}
        elif cmd["command"] == "delete":
            store.delete_model(cmd["instance"], steps, MODEL_TYPE)
            out.result = {"deleted": cmd["instance"]}
        else:
            report = store.prune(steps)
            out.result = {"models": len(report.models), "files": report.files, "rows": report.rows}
    except Exception as e:  # noqa: BLE001 - every failure is the command's exit code and its --json error
        out.error, out.kind = e, error_kind(e)
    done_ns = time.time_ns()
    rows = store.catalog.rows(store.ns)
    lock_key = store.lock_key()
    repo.save(store)
    if history is not None:
        history.close()
    if requests is not None:
        from harness.refcmd.tracing import Invocation, export

        export(env.traces_endpoint, env.traceparent, Invocation(
            command=cmd, backend=plan.backend, lock_key=lock_key, lock=plan.scenario.lock, catalog_rows=rows,
            steps=steps.timed(), calls=requests.calls, started_ns=started_ns, ready_ns=ready_ns, done_ns=done_ns,
            saved_ns=time.time_ns(), error=out.error))
    return out
