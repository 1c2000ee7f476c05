"""The command driver's ``[driver]`` keys: argv templates, their placeholders, timeout, environment, spans.

Read and checked here, once per process, from the scenario's data; every mistake is one line naming the
file and the key, before anything starts (``check`` runs in ``harness run`` before the run directory exists).
"""

from __future__ import annotations

import os
import shutil
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.config.scenario import Scenario
from harness.core.durations import option_duration
from harness.core.errors import HarnessError
from harness.record.otlp.mapping import SWAMP, Mapping, parse_overrides

COMMANDS = ("setup", "run", "delete", "prune")
KEYS = (*COMMANDS, "timeout", "env", "late_wait", "quiet", "history", "spans", "nice")
# what a template may name; setup runs once per worker, before any iteration
PLACEHOLDERS = ("worker", "iteration", "instance", "namespace", "method", "plan", "workdir", "table", "bucket",
                "backend", "region", "endpoint", "python")
PER_ITERATION = ("iteration", "instance", "method")
HISTORY_ENV = "HARNESS_HISTORY"  # where a command appends the safety checker's history (JSON lines)


@dataclass(frozen=True)
class CommandOptions:
    run: tuple[str, ...]
    setup: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    prune: tuple[str, ...] = ()
    timeout_s: float = 60.0
    env: dict[str, str] = field(default_factory=dict)
    late_wait_s: float = 2.0  # after a command exits, the longest its spans may still keep coming
    # after the exit, an incomplete trace is whole once its exporter has been quiet this long (no fixed wait for
    # spans that will not come: swamp's default exporter loses what is in flight at exit)
    quiet_s: float = 0.05
    history: bool = False  # the commands write the checker's history to $HARNESS_HISTORY
    mapping: Mapping = SWAMP
    # the commands' priority below the harness's: a hundred of them fill two cores, and Locust's own processes
    # must still answer their master's heartbeats (0: the harness's own priority)
    nice: int = 10


def fields_of(template: str, where: str) -> list[str]:
    """The placeholders ``{name}`` of one argument (``{{`` and ``}}`` are braces)."""
    try:
        names = [f for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError as e:
        raise HarnessError(f"{where}: {template!r}: {e} (write {{{{ and }}}} for a literal brace)") from None
    for f in names:
        if f not in PLACEHOLDERS:
            raise HarnessError(f"{where}: unknown placeholder {{{f}}} in {template!r}: choose from "
                               f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    return names


def fill(template: str, values: dict[str, str]) -> str:
    return template.format_map(values)


def resolve_executable(argv0: str) -> str | None:
    """A template's program: a path (relative to where the harness runs), a name on PATH, or a console script
    installed beside this Python (``harness-swamp`` in the project's .venv/bin, activated or not)."""
    if os.sep in argv0:
        p = Path(argv0).resolve()
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    return shutil.which(argv0) or shutil.which(argv0, path=str(Path(sys.executable).parent))


def parse(sc: Scenario) -> CommandOptions:
    """The scenario's command driver options, or the first thing wrong with them."""
    where = f"{sc.source or sc.name}: driver"
    o = dict(sc.driver.options)
    unknown = sorted(set(o) - set(KEYS))
    if unknown:
        raise HarnessError(f"{where}.{unknown[0]} is not a known key of the command driver ({', '.join(KEYS)})")
    if "run" not in o:
        raise HarnessError(f"{where}.run is missing: the command of one iteration, e.g. run = [\"swamp\", \"model\", "
                           "\"@webframp/system\", \"method\", \"run\", \"{method}\", \"{instance}\", \"--json\"]")
    templates = {}
    for key in COMMANDS:
        if key not in o:
            continue
        t = o[key]
        if not isinstance(t, list) or not t or not all(isinstance(a, str) for a in t):
            raise HarnessError(f"{where}.{key} must be a list of strings (one argument each), got {t!r}")
        for a in t:
            names = fields_of(a, f"{where}.{key}")
            if key == "setup" and set(names) & set(PER_ITERATION):
                raise HarnessError(f"{where}.setup runs once per worker, before any iteration: "
                                   f"{{{sorted(set(names) & set(PER_ITERATION))[0]}}} has no value there")
        templates[key] = tuple(t)
    env = o.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise HarnessError(f"{where}.env must be a table of NAME = \"value\" (strings), got {env!r}")
    for v in env.values():
        fields_of(v, f"{where}.env")
    history = o.get("history", False)
    if not isinstance(history, bool):
        raise HarnessError(f"{where}.history must be true or false, got {history!r}")
    nice = o.get("nice", 10)
    if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= 19:
        raise HarnessError(f"{where}.nice must be an integer from 0 to 19, got {nice!r}")
    mapping = SWAMP
    if "spans" in o:
        try:
            cols, requests = parse_overrides(o["spans"], f"{where}.spans")
        except ValueError as e:
            raise HarnessError(f"{sc.source or sc.name}: {e}") from None
        mapping = SWAMP.with_overrides(cols, requests)
    return CommandOptions(run=templates["run"], setup=templates.get("setup", ()), delete=templates.get("delete", ()),
                          prune=templates.get("prune", ()), timeout_s=option_duration(o, "timeout", 60.0, where),
                          env=dict(env), late_wait_s=option_duration(o, "late_wait", 2.0, where, positive=False),
                          quiet_s=option_duration(o, "quiet", 0.05, where, positive=False),
                          history=history, mapping=mapping, nice=nice)




def check(sc: Scenario) -> CommandOptions:
    """``parse`` and what a run needs besides: each program found, the safety check's history written."""
    opts = parse(sc)
    where = f"{sc.source or sc.name}: driver"
    for key in COMMANDS:
        argv = getattr(opts, key)
        if not argv:
            continue
        program = argv[0]
        if program == "{python}":
            continue
        if "{" in program:
            raise HarnessError(f"{where}.{key}: the program {program!r} must be a name or a path ({{python}} is "
                               "this harness's Python); placeholders belong in its arguments")
        if resolve_executable(program) is None:
            raise HarnessError(f"{where}.{key}: {program!r} is not an executable on PATH (nor beside "
                               f"{sys.executable}): install it, or give its path")
    if sc.checks.safety and not opts.history:
        raise HarnessError(f"{sc.source or sc.name}: [checks] safety reads the datastore's history, which a command "
                           "writes only if told to: set [driver] history = true (each command appends the "
                           f"checker's events as JSON lines to ${HISTORY_ENV}), or set safety = false")
    if sc.datastore.prune_every and not opts.prune:
        raise HarnessError(f"{where}.prune is missing, but [datastore] prune_every = {sc.datastore.prune_every}: "
                           "give the prune command, or set prune_every = 0")
    if sc.workload.lifecycle == "disposable" and not opts.delete:
        raise HarnessError(f"{where}.delete is missing, but the workload's models are disposable: give the "
                           "delete command (swamp model delete {instance} --force)")
    return opts
