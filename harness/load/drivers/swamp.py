"""The swamp driver: the real swamp CLI and its datastore extension, with the story's loop built in.

The command driver runs whatever argv a scenario gives; this one knows swamp (06b6147, its extensions at
webframp a929b7a / swamp-club c25ec91, docs/command-driver.md) and runs the story's loop the way a swamp user
does, so a run measures swamp rather than a misconfigured swamp:

- each user's repository is made from a template the user names (``--swamp-repo DIR``: a swamp repository's
  ``extensions/``, and its ``deno.json`` for S3): ``swamp init --tool none``, the template copied in, the
  ``.swamp.yaml`` datastore pointed at the run's own table or bucket and the user's namespace, then
  ``swamp datastore status --json`` once, so the extensions' bundling is not the first iteration's cost;
- every model is created (``swamp model create @webframp/system NAME``) before its first run: an
  auto-created model's first run takes no lock and syncs nothing, and ``model delete`` cannot find it;
- the methods are ``@webframp/system``'s own, ``OTEL_BSP_USE=1`` is set (swamp's default span processor loses
  the spans still in flight at ``Deno.exit``; ``[driver] env = { OTEL_BSP_USE = "" }`` unsets it);
- a ``--json`` result whose trace carries an error span (a push swamp downgraded to a warning, exit 0) fails
  the row as ``push_failed`` with swamp's message; the spans are read by the mapping for swamp's layout
  (``harness.record.otlp.mapping.REAL_SWAMP``: each lock by its key).

The scenario's fleet, namespaces, models, lifecycle and prune cadence drive the loop; its ``[lock]`` and sync
profile do not reach swamp, which locks and syncs as it does (its TTL and wait come back in the spans).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path

from harness.config.scenario import Scenario
from harness.core.durations import option_duration
from harness.core.errors import HarnessError
from harness.load.drivers._command_options import CommandOptions, resolve_executable
from harness.load.drivers.base import DriverContext
from harness.load.drivers.command import CommandDriver, Otlp, Ran, otlp_of
from harness.record.otlp.mapping import REAL_SWAMP

KEYS = ("swamp", "swamp_repo", "env", "timeout", "nice", "late_wait", "methods", "sync")
SYSTEM = "@webframp/system"
# @webframp/system's methods (extensions/models/system/diagnostics.ts); the harness's own defaults (get_load,
# get_disk) are not among them
METHODS = ("get_uptime", "get_memory", "get_disk_usage", "get_os_info")
DEFAULT_ENV = {"OTEL_BSP_USE": "1"}
PUSH_FAILED = "push_failed"
EXTENSION_DIRS = {"dynamodb": "dynamodb", "s3": "s3"}  # what a template's extensions/datastores must mention


@dataclass(frozen=True)
class SwampOptions:
    swamp: str  # the swamp executable, resolved
    repo: Path  # the repository template
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 120.0
    nice: int = 10
    late_wait_s: float = 2.0
    methods: tuple[str, ...] = METHODS
    # after each run a full `swamp datastore sync --pull` (the legacy layout's method runs scope their pulls to the
    # model's key range: only a full sync reads the whole gsi1pk = "FILE" partition, the spec's first bottleneck)
    sync: bool = False

    def command_options(self) -> CommandOptions:
        s = self.swamp
        return CommandOptions(
            run=(s, "model", SYSTEM, "method", "run", "{method}", "{instance}", "--skip-checks", "--skip-reports",
                 "--json"),
            delete=(s, "model", "delete", "{instance}", "--force", "--json"),
            prune=(s, "data", "prune", "--force", "--json"),
            timeout_s=self.timeout_s, env={**DEFAULT_ENV, **self.env}, late_wait_s=self.late_wait_s,
            mapping=REAL_SWAMP, nice=self.nice)


def parse(sc: Scenario) -> SwampOptions:
    """The scenario's ``[driver]`` for swamp, or the first thing wrong with it (one line)."""
    where = f"{sc.source or sc.name}: driver"
    o = dict(sc.driver.options)
    unknown = sorted(set(o) - set(KEYS))
    if unknown:
        raise HarnessError(f"{where}.{unknown[0]} is not a key of the swamp driver ({', '.join(KEYS)}): swamp's "
                           "loop is built in (kind = \"command\" takes argv templates)")
    program = o.get("swamp", "swamp")
    if not isinstance(program, str) or not program:
        raise HarnessError(f"{where}.swamp must be the swamp executable (a name on PATH or a path), got {program!r}")
    exe = resolve_executable(program)
    if exe is None:
        raise HarnessError(f"swamp not found: {program!r} is not an executable on PATH; give its path with --swamp "
                           "PATH (or [driver] swamp)")
    repo = o.get("swamp_repo")
    if not repo or not isinstance(repo, str):
        raise HarnessError("the swamp driver needs a repository template: --swamp-repo DIR (or [driver] swamp_repo), "
                           "a folder with the swamp extensions/ (and deno.json for S3) each user's repository gets")
    template = Path(repo).expanduser().resolve()
    datastores = template / "extensions" / "datastores"
    if not datastores.is_dir():
        raise HarnessError(f"swamp repository template {repo!r}: no extensions/datastores/ in it (give the folder "
                           "that holds extensions/, e.g. realswamp's template/ddb)")
    names = " ".join(p.name for p in datastores.iterdir())
    if EXTENSION_DIRS[sc.backend] not in names:
        raise HarnessError(f"swamp repository template {repo!r} has no {sc.backend} datastore extension "
                           f"(extensions/datastores/ holds: {names or 'nothing'}); give the {sc.backend} template")
    env = o.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise HarnessError(f"{where}.env must be a table of NAME = \"value\" (\"\" unsets it), got {env!r}")
    methods = o.get("methods", list(METHODS))
    if not isinstance(methods, list) or not methods or not all(isinstance(m, str) and m for m in methods):
        raise HarnessError(f"{where}.methods must be a list of {SYSTEM}'s method names, got {methods!r}")
    nice = o.get("nice", 10)
    if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= 19:
        raise HarnessError(f"{where}.nice must be an integer from 0 to 19, got {nice!r}")
    sync = o.get("sync", False)
    if not isinstance(sync, bool):
        raise HarnessError(f"{where}.sync must be true or false (a full `swamp datastore sync --pull` after each "
                           f"run), got {sync!r}")
    return SwampOptions(exe, template, dict(env), option_duration(o, "timeout", 120.0, where), nice,
                        option_duration(o, "late_wait", 2.0, where), tuple(methods), sync)




def check(sc: Scenario) -> None:
    parse(sc)
    if sc.checks.safety:
        raise HarnessError(f"{sc.source or sc.name}: [checks] safety reads the datastore's history, which swamp does "
                           "not write: set safety = false for the swamp driver")


def make(ctx: DriverContext) -> SwampDriver:
    opts = parse(ctx.plan.scenario)
    return SwampDriver(ctx, opts, otlp_of(ctx))


def datastore_yaml(backend: str, values: dict[str, str]) -> str:
    """The ``.swamp.yaml`` datastore section (the extensions' READMEs' form): the run's table or bucket, the
    stand-in's endpoint when there is one (none on AWS), the user's namespace."""
    lines = ["datastore:"]
    if backend == "dynamodb":
        lines += ['  type: "@webframp/dynamodb-datastore"', "  config:", f'    tableName: "{values["table"]}"',
                  f'    region: "{values["region"]}"', "    autoCreateTable: true"]
    else:
        lines += ['  type: "@swamp/s3-datastore"', "  config:", f'    bucket: "{values["bucket"]}"',
                  f'    region: "{values["region"]}"', "    forcePathStyle: true"]
        if values.get("prefix"):  # a bucket the run shares with others (--bucket with a prefix)
            lines.append(f'    prefix: "{values["prefix"]}"')
    if values.get("endpoint"):
        lines.append(f'    endpoint: "{values["endpoint"]}"')
    if values.get("namespace"):
        lines.append(f'  namespace: "{values["namespace"]}"')
    return "\n".join(lines) + "\n"


class SwampDriver(CommandDriver):
    """One swamp user: its own repository, its models created before their first run."""

    def __init__(self, ctx: DriverContext, sopts: SwampOptions, otlp: Otlp) -> None:
        super().__init__(ctx, sopts.command_options(), otlp)
        self.sopts = sopts
        self.ready = False
        self.created: set[str] = set()
        # swamp's methods, not the scenario's (written for the model, whose methods are only names)
        self.scenario = replace(self.scenario, workload=replace(self.scenario.workload, methods=sopts.methods))

    def _setup(self, values: dict[str, str], i: int) -> list[Ran]:
        """The user's repository: init, the template's extensions, the datastore, one status (the bundling)."""
        s = self.sopts.swamp
        values = {**values, "prefix": self.plan.resources.prefix or ""}
        out = []
        if not (self.workdir / ".swamp.yaml").exists():
            r = self._command("setup", (s, "init", "--tool", "none", "--json"), values, i)
            out.append(r)
            if r.kind:
                return out
        shutil.copytree(self.sopts.repo / "extensions", self.workdir / "extensions", dirs_exist_ok=True)
        if (self.sopts.repo / "deno.json").is_file():
            shutil.copy2(self.sopts.repo / "deno.json", self.workdir / "deno.json")
        cfg = self.workdir / ".swamp.yaml"
        text = cfg.read_text()
        if "\ndatastore:" not in "\n" + text:
            cfg.write_text(text.rstrip("\n") + "\n" + datastore_yaml(self.scenario.backend, values))
        out.append(self._command("setup", (s, "datastore", "status", "--json"), values, i))
        if self.sopts.sync and not out[-1].kind:  # a user's repository holds what the datastore held: the first
            # full sync (every pre-aged file's content) is the setup's, and each iteration's sync reads what grew
            out.append(self._command("setup", (s, "datastore", "sync", "--pull", "--json"), values, i))
        return out

    def _before_run(self, values: dict[str, str], i: int) -> list[Ran]:
        """``swamp model create`` for a model's first run (so it locks and syncs, and delete finds it)."""
        model = values["instance"]
        if model in self.created:
            return []
        r = self._command("create", (self.sopts.swamp, "model", "create", SYSTEM, "{instance}", "--json"), values, i)
        if r.kind and "already exists" in (r.message or "").lower():  # a repository kept from an earlier test
            r = replace(r, kind="", message="")
        if not r.kind:
            self.created.add(model)
        return [r]

    def _iteration(self, values: dict[str, str], i: int) -> list[Ran]:
        """The story's loop, then (``[driver] sync = true``) a full pull when the run succeeded."""
        ran = super()._iteration(values, i)
        if self.sopts.sync and not ran[0].kind:
            ran.append(self._command("sync", (self.sopts.swamp, "datastore", "sync", "--pull", "--json"), values, i))
        return ran

    def _after_run(self, step: str, values: dict[str, str]) -> None:
        if step == "delete":  # a deleted model is created again before its next run
            self.created.discard(values["instance"])

    def _judge(self, r: Ran) -> Ran:
        """A command that exited 0 with an error span in its trace (swamp downgrades a failed push to a warning)
        fails the row with its own kind and swamp's message."""
        if r.kind or r.step not in ("run", "delete", "prune"):
            return r
        requests = REAL_SWAMP.requests  # a request's error (a 404 for a key not yet written) is no failure
        bad = [s for s in r.trace.spans if s.status == "error" and not any(fnmatchcase(s.name, g) for g in requests)]
        if not bad:
            return r
        push = [s for s in bad if "push" in s.name.lower() or "commit" in s.name.lower()]
        s = (push or bad)[0]
        kind = PUSH_FAILED if push else "other"
        return replace(r, kind=kind, message=f"exit 0 with an error span {s.name!r}: {s.status_message or '?'}")

