"""The model's unfenced violating schedules played on the real swamp, through the front (issue 57 item 4).

    HARNESS_SWAMP=/tmp/realswamp/bin/swamp HARNESS_SWAMP_REPO=/tmp/realswamp/template/ddb \
        python bench/swamp_faults.py [--schedules none,lost,throttle,freeze] [--out FILE.json] [--keep]

dynalite on loopback, the front before it (in this process, ``harness.aws.front.schedule``'s ``ScheduledFront``: a
seat per repository, faults aimed at one command's commit), and two swamp repositories, A and B, sharing one
table and namespace; each schedule gets its own model. What each command acknowledged (its ``--json``) is compared
with what a fresh repository reads after ``swamp datastore sync --pull`` (``harness.safety.swamp_check``). Both
repositories are warmed first (a repository's first ``method run`` commits nothing). The schedules, in this order:

- ``none``: the control, no fault: A, then B, then A run the model one after another;
- ``freeze`` (run last: the file it tears breaks every later fresh pull of the namespace): A's ``method run``
  is SIGSTOPped (its process group) when the front sees its first commit write (the first write after its
  write to the global lock item); B runs the same model's method meanwhile (swamp's
  lock TTL is 30 s: B waits for A's locks to go stale, takes them, commits); when B has exited A is SIGCONTed
  and finishes its commit;
- ``lost``: A's commit's first write and its ``ADD seq :one`` (the commit sequence) land and lose their answers;
  the sequence's growth is read straight from the table (one commit should add one); then a run whose global
  lock acquire (the conditional PutItem) lands and loses its answer;
- ``throttle``: every write of A's commit is answered ``ThrottlingException`` (past the SDK's retries and the
  extension's own); then a clean run of A, and a second read.

``--keep`` keeps the repositories' directory (else it and swamp's caches of them, ``~/.swamp/repos/<repoId>``,
are removed).

Without HARNESS_SWAMP / HARNESS_SWAMP_REPO it says why and exits 0 (skipped). Each swamp command costs ~2 s of
CPU: the whole thing is about 25 commands, 3-5 minutes on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import boto3

from harness.aws.fidelity.model import FidelityConfig
from harness.aws.front.schedule import AfterGlobalLock, ScheduledFront, ScheduledModel, Step
from harness.aws.front.thread import FrontThread
from harness.aws.standin.dynalite import EmbeddedDynalite
from harness.safety.swamp_check import Version, acknowledged, compare, read_versions

SCHEDULES = ("none", "lost", "throttle", "freeze")  # freeze last: what it leaves breaks every later pull
TABLE, NAMESPACE, REGION = "swampfaults", "faults", "us-east-1"
CMD_TIMEOUT_S = 240.0
SWAMP_TTL_S = 30.0
ENV = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_REGION": REGION,
       "AWS_DEFAULT_REGION": REGION, "NO_COLOR": "1"}


class Repo:
    """One swamp repository whose datastore is the shared table, reached through its own seat of the front."""

    def __init__(self, swamp: str, template: Path, root: Path, name: str, endpoint: str) -> None:
        self.swamp, self.name, self.dir = swamp, name, root / name
        self.dir.mkdir(parents=True)
        self.log = root / f"{name}.log"
        self.run("init", "--tool", "none", "--json")
        found = re.search(r"^repoId: (\S+)", (self.dir / ".swamp.yaml").read_text(), re.M)
        self.cache = Path.home() / ".swamp" / "repos" / found.group(1) if found else None  # swamp's cache of it
        shutil.copytree(template / "extensions", self.dir / "extensions")
        if (template / "deno.json").is_file():
            shutil.copy(template / "deno.json", self.dir / "deno.json")
        with (self.dir / ".swamp.yaml").open("a") as f:
            f.write(f'datastore:\n  type: "@webframp/dynamodb-datastore"\n  config:\n    tableName: "{TABLE}"\n'
                    f'    region: {REGION}\n    endpoint: "{endpoint}"\n    autoCreateTable: true\n'
                    f'  namespace: "{NAMESPACE}"\n')
        self.run("datastore", "status", "--json")

    def start(self, *args: str) -> subprocess.Popen:
        """A swamp command in a process group of its own (so a freeze stops deno and all it started)."""
        with self.log.open("a") as log:
            log.write(f"\n$ swamp {' '.join(args)}  ({time.strftime('%H:%M:%S')})\n")
        return subprocess.Popen([self.swamp, *args, "--no-telemetry"], cwd=self.dir, env={**os.environ, **ENV},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True)

    def finish(self, proc: subprocess.Popen) -> dict[str, Any]:
        out, err = proc.communicate(timeout=CMD_TIMEOUT_S)
        with self.log.open("a") as log:
            log.write(f"exit {proc.returncode}\n{err.decode(errors='replace')[-3000:]}\n")
        try:
            doc = json.loads(out) if out.strip() else {}
        except ValueError:
            doc = {"unparsed": out.decode(errors="replace")[-500:]}
        return {"exit": proc.returncode, "json": doc, "stderr_tail": err.decode(errors="replace")[-600:]}

    def run(self, *args: str) -> dict[str, Any]:
        return self.finish(self.start(*args))

    def method_run(self, model: str) -> subprocess.Popen:
        return self.start("model", "@webframp/system", "method", "run", "get_uptime", model, "--skip-checks",
                          "--skip-reports", "--json")

    def adopt(self, other: Repo, model: str) -> None:
        """``model``'s definition as ``other`` created it (the same model id in both repositories)."""
        rel = Path("models/@webframp/system") / f"{model}.yaml"
        (self.dir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(other.dir / rel, self.dir / rel)


class Bench:
    def __init__(self, swamp: str, template: Path, root: Path) -> None:
        self.swamp, self.template, self.root = swamp, template, root
        self.dynalite = EmbeddedDynalite(in_memory=True, s3_moto=False, log_path=str(root / "dynalite.log")).start()
        self.model = ScheduledModel(FidelityConfig())
        self.front = FrontThread(ScheduledFront(self.model, {"dynamodb": self.dynalite.dynamodb_url}))
        self.seats = {u: self.front.seat(u) for u in ("A", "B")}
        self.a = Repo(swamp, template, root, "A", self.seats["A"])
        self.b = Repo(swamp, template, root, "B", self.seats["B"])
        self.repos = [self.a, self.b]
        self.readers = 0
        self.warm()
        self.ddb = boto3.client("dynamodb", endpoint_url=self.dynalite.dynamodb_url, region_name=REGION,
                                aws_access_key_id="local", aws_secret_access_key="local")

    def warm(self) -> None:
        """One run in each repository of a model no schedule uses: a repository's first ``method run`` commits
        nothing ("Commit complete, no index changes"; its files go with its next commit), so a schedule's run
        must not be a repository's first."""
        self.a.run("model", "create", "@webframp/system", "mwarm", "--json")
        self.b.adopt(self.a, "mwarm")
        self.warmup = {r.name: r.finish(r.method_run("mwarm"))["stderr_tail"][-200:] for r in (self.a, self.b)}

    def stop(self) -> None:
        self.front.stop()
        self.dynalite.stop()

    def forget(self) -> None:
        """The repositories' caches swamp keeps outside them (``~/.swamp/repos/<repoId>``)."""
        for r in self.repos:
            if r.cache is not None:
                shutil.rmtree(r.cache, ignore_errors=True)

    def seq(self) -> int:
        """The commit sequence (``SYNCSTATE#global`` / ``SEQ``), read straight from the table."""
        item = self.ddb.get_item(TableName=TABLE, Key={"pk": {"S": "SYNCSTATE#global"}, "sk": {"S": "SEQ"}},
                                 ConsistentRead=True).get("Item") or {}
        return int(item.get("seq", {}).get("N", 0))

    def read(self, model: str) -> tuple[list[Version], dict[str, Any]]:
        """A fresh repository's pull, then the versions it lists of ``model``'s ``current``."""
        self.readers += 1
        r = Repo(self.swamp, self.template, self.root, f"R{self.readers}", self.seats.setdefault(
            f"R{self.readers}", self.front.seat(f"R{self.readers}")))
        self.repos.append(r)
        r.adopt(self.a, model)
        pull = r.run("datastore", "sync", "--pull", "--json")
        listing = r.run("data", "versions", model, "current", "--json")
        versions = read_versions(listing["json"]) if listing["exit"] == 0 and listing["json"] else []
        return versions, {"pull": pull["json"], "pull_exit": pull["exit"], "pull_stderr": pull["stderr_tail"][-400:],
                          "versions": listing["json"], "versions_exit": listing["exit"], "items": self.items(model)}

    def items(self, model: str) -> list[dict[str, Any]]:
        """The table's items of a model's ``current`` data (key and scalar attributes), read straight from
        dynalite: the evidence behind a reader's failure."""
        ids = {m.group(1) for p in (self.a.dir / "models").rglob(f"{model}.yaml")
               if (m := re.search(r"^id: (\S+)", p.read_text(), re.M))}
        out = []
        for page in self.ddb.get_paginator("scan").paginate(TableName=TABLE):
            for it in page["Items"]:
                key = it.get("pk", {}).get("S", "") + " " + it.get("sk", {}).get("S", "")
                if any(i in key for i in ids) and "/current/" in key:
                    out.append({k: next(iter(v.values())) for k, v in it.items()
                                if "S" in v or "N" in v})
        return sorted(out, key=lambda d: (d.get("pk", ""), d.get("sk", "")))

    def prepare(self, model: str) -> list[Version]:
        """``model`` created in A and known to B, one clean run of A (version 1)."""
        self.a.run("model", "create", "@webframp/system", model, "--json")
        self.b.adopt(self.a, model)
        first = self.a.finish(self.a.method_run(model))
        return acknowledged(first["json"], "A (clean)")

    # ---- the schedules -------------------------------------------------------------------------------

    def freeze(self) -> dict[str, Any]:
        model = "mfreeze"
        before = self.prepare(model)
        frozen = threading.Event()
        proc_a: dict[str, subprocess.Popen] = {}

        def stop_a() -> None:
            os.killpg(proc_a["a"].pid, signal.SIGSTOP)
            frozen.set()

        step = self.model.add(Step("A", "freeze", AfterGlobalLock(), times=1, on_freeze=stop_a))
        proc_a["a"] = self.a.method_run(model)
        if not frozen.wait(CMD_TIMEOUT_S):
            self.model.clear()
            return {"error": "A's commit never reached the front", "a": self.a.finish(proc_a["a"])}
        t_freeze = time.monotonic()
        res_b = self.b.finish(self.b.method_run(model))
        t_b = time.monotonic() - t_freeze
        time.sleep(max(0.0, SWAMP_TTL_S + 2 - (time.monotonic() - t_freeze)))
        os.killpg(proc_a["a"].pid, signal.SIGCONT)
        frozen_s = time.monotonic() - t_freeze
        res_a = self.a.finish(proc_a["a"])
        self.model.clear()
        acks = acknowledged(res_a["json"], "A (frozen)") + acknowledged(res_b["json"], "B")
        read, raw = self.read(model)
        return self._out("freeze", before, acks, read, raw, {"A": res_a, "B": res_b}, frozen_s=round(frozen_s, 1),
                         b_done_after_freeze_s=round(t_b, 1), acted=step.acted)

    def none(self) -> dict[str, Any]:
        """The control: no fault, A then B then A run the model one after another."""
        model = "mnone"
        before = self.prepare(model)
        results = {}
        acks: list[Version] = []
        for who, repo in (("B", self.b), ("A again", self.a)):
            results[who] = repo.finish(repo.method_run(model))
            acks += acknowledged(results[who]["json"], who)
        read, raw = self.read(model)
        return self._out("none", before, acks, read, raw, results)

    def lost(self) -> dict[str, Any]:
        model = "mlost"
        before = self.prepare(model)
        seq0 = self.seq()
        first = self.model.add(Step("A", "lost", AfterGlobalLock(), times=1))
        seq_step = self.model.add(Step("A", "lost", _seq_add, times=1))
        res_a = self.a.finish(self.a.method_run(model))
        self.model.clear()
        seq1 = self.seq()
        acks = acknowledged(res_a["json"], "A")
        lock_step = self.model.add(Step("A", "lost", _global_lock_acquire, times=1))
        t0 = time.monotonic()
        res_lock = self.a.finish(self.a.method_run(model))
        lock_s = time.monotonic() - t0
        self.model.clear()
        acks += acknowledged(res_lock["json"], "A (lock's answer lost)")
        read, raw = self.read(model)
        return self._out("lost", before, acks, read, raw, {"A": res_a, "A lock": res_lock}, seq_before=seq0,
                         seq_after=seq1, commits=1, acted=first.acted + seq_step.acted,
                         lock_lost=lock_step.acted, lock_run_s=round(lock_s, 1))

    def throttle(self) -> dict[str, Any]:
        model = "mthrottle"
        before = self.prepare(model)
        step = self.model.add(Step("A", "throttle", AfterGlobalLock(), times=None))
        res_a = self.a.finish(self.a.method_run(model))
        self.model.clear()
        acks = acknowledged(res_a["json"], "A (throttled)")
        read, raw = self.read(model)
        out = self._out("throttle", before, acks, read, raw, {"A": res_a}, throttled=len(step.acted))
        again = self.a.finish(self.a.method_run(model))
        acks2 = acks + acknowledged(again["json"], "A (next run)")
        read2, raw2 = self.read(model)
        out["after_next_run"] = self._out("throttle+next", before, acks2, read2, raw2, {"A": again})
        return out

    @staticmethod
    def _out(name: str, before: list[Version], acks: list[Version], read: list[Version], raw: dict[str, Any],
             results: dict[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
        verdict = compare([*before, *acks], read, before)
        findings = verdict.counts() | {"unreadable": int(raw["pull_exit"] != 0)}
        return {"schedule": name, "findings": findings, "lost": verdict.lost, "phantom": verdict.phantom,
                "older": verdict.older, "acknowledged": [vars(v) for v in [*before, *acks]],
                "read": [vars(v) for v in read], "reader": raw,
                "commands": {k: {"exit": r["exit"], "status": r["json"].get("status"),
                                 "stderr_tail": r["stderr_tail"]} for k, r in results.items()}, **extra}


def _global_lock_acquire(op: str, params: dict) -> bool:
    """The global lock's conditional acquire (a PutItem on ``.locks/<ns>.lock``)."""
    return op == "PutItem" and ".locks/" in json.dumps(params.get("Item", {}))


def _seq_add(op: str, params: dict) -> bool:
    """The commit sequence's increment (``ADD seq :one`` on ``SYNCSTATE#global`` / ``SEQ``)."""
    return op == "UpdateItem" and params.get("Key", {}).get("sk", {}).get("S") == "SEQ"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schedules", default=",".join(SCHEDULES))
    ap.add_argument("--out", default="")
    ap.add_argument("--keep", action="store_true", help="keep the repositories' directory")
    args = ap.parse_args(argv)
    swamp, template = os.environ.get("HARNESS_SWAMP", ""), os.environ.get("HARNESS_SWAMP_REPO", "")
    if not swamp or not template:
        print("skipped: set HARNESS_SWAMP (the swamp binary) and HARNESS_SWAMP_REPO (a template with extensions/, "
              "e.g. /tmp/realswamp/template/ddb)")
        return 0
    names = [s for s in args.schedules.split(",") if s]
    unknown = [s for s in names if s not in SCHEDULES]
    if unknown:
        print(f"error: unknown schedule {unknown[0]!r} (one of {', '.join(SCHEDULES)})", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="swamp-faults-"))
    bench = Bench(swamp, Path(template), root)
    results = []
    try:
        for name in names:
            t0 = time.monotonic()
            r = getattr(bench, name)()
            r["wall_s"] = round(time.monotonic() - t0, 1)
            results.append(r)
            print(json.dumps({"schedule": name, "findings": r.get("findings"), "wall_s": r["wall_s"]}), flush=True)
    finally:
        bench.stop()
    doc = {"swamp": swamp, "template": template, "dir": str(root), "warmup": bench.warmup, "schedules": results}
    text = json.dumps(doc, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    if not args.keep:
        bench.forget()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
