"""Before and after in one sitting: the same scenarios run by an older checkout and by this one, back to back.

    git worktree add --detach /tmp/base 4844447 && ln -s "$PWD/node_modules" /tmp/base/node_modules
    python bench/before_after.py --base /tmp/base --out /tmp/ba [--duration 60s] [--only rates|safety|seed]
                                 [--latency aws]    # the rates with AWS's latencies modelled (round trips show)

Each pair runs the older checkout first (its own code and its own scenario file, through ``PYTHONPATH``), then
this one, on the embedded stand-ins, one run at a time:

- rates: ``two-phase-namespaced`` and ``two-phase-shared-lock`` on DynamoDB and S3 (and this checkout's
  ``two-phase-namespaced`` fenced, a copy with ``fencing = true``, so the key's change and fencing's cost show
  apart); then ``bench/global_lock.py``'s table of them all;
- safety: ``lock-safety`` with ``fencing = false`` (a copy) on both backends, before and after, and every
  safety scenario fenced, after; the violations each ``safety.json`` counts;
- seed: ``disposable`` at 100 workers under ``--latency aws`` with ``--processes 2`` (this checkout), then
  ``bench/spec_table.py``'s table.

Run directories go to ``--out`` (``<name>-<backend>-before`` / ``-after``). The machine's load is printed
before each run (``/proc/loadavg``): on a shared machine read the figures as medians and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATES = ("two-phase-namespaced", "two-phase-shared-lock")
SAFETY = ("lock-safety", "lifecycle-safety", "recreate-safety", "two-phase-safety")
BACKENDS = ("dynamodb", "s3")


def variant(tree: Path, name: str, out: Path, fencing: bool) -> Path:
    """A copy of ``tree``'s scenario with its fencing set (written beside the runs)."""
    folder = next((d for d in (tree / "harness" / "config" / "scenarios", tree / "scenarios") if d.is_dir()),
                  tree / "scenarios")  # the package's (since issue 53), or an older tree's top-level folder
    text = (folder / f"{name}.toml").read_text()
    for value in ("true", "false"):
        text = text.replace(f"fencing = {value} ", f"fencing = {str(fencing).lower()} ")
        text = text.replace(f"fencing = {value}\n", f"fencing = {str(fencing).lower()}\n")
    if "fencing =" not in text.split("[datastore]", 1)[1].split("\n[", 1)[0]:
        text = text.replace("[datastore]\n", f"[datastore]\nfencing = {str(fencing).lower()}\n", 1)
    path = out / f"{name}-{'fenced' if fencing else 'unfenced'}-{tree.name}.toml"
    path.write_text(text)
    return path


def run(tree: Path | None, scenario: str | Path, backend: str, run_dir: Path, duration: str,
        extra: list[str] | tuple[str, ...] = ()) -> Path:
    """``harness run`` by ``tree``'s code (None: this checkout)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    print(f"== {run_dir.name}: load {' '.join(load)}", flush=True)
    subprocess.run([sys.executable, "-m", "harness", "run", str(scenario), "--backend", backend, "--duration",
                    duration, "--run-dir", str(run_dir), *extra], env=env, check=False, stdout=subprocess.DEVNULL,
                   cwd=tree or ROOT)
    return run_dir


def violations(run_dir: Path) -> str:
    path = run_dir / "safety.json"
    if not path.is_file():
        return "no safety.json"
    s = json.loads(path.read_text())
    kinds = ("acknowledged", "lost", "phantom", "corrupt", "sequence_anomalies", "unsafe_overlaps", "lease_overlaps",
             "torn_reads")
    return f"{s.get('violations', '?')} violations (" + ", ".join(f"{k} {s.get(k, 0)}" for k in kinds) + ")"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", required=True, type=Path, help="a checkout of the older commit")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--duration", default="60s")
    p.add_argument("--only", choices=("rates", "safety", "seed"))
    p.add_argument("--latency", help="the rates' latency profile (harness run --latency), e.g. aws")
    a = p.parse_args(argv)
    if not (a.base / "harness").is_dir():
        print(f"--base {a.base}: not a checkout of the harness (no harness/ there)", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    if a.only in (None, "rates"):
        dirs = []
        lat, tag = (["--latency", a.latency], f"-{a.latency}") if a.latency else ([], "")
        for name in RATES:
            for b in BACKENDS:
                dirs.append(run(a.base, name, b, a.out / f"{name}-{b}{tag}-before", a.duration, lat))
                dirs.append(run(None, name, b, a.out / f"{name}-{b}{tag}-after", a.duration, lat))
                if name == "two-phase-namespaced":
                    fenced = variant(ROOT, name, a.out, fencing=True)
                    dirs.append(run(None, fenced, b, a.out / f"{name}-{b}{tag}-after-fenced", a.duration, lat))
        subprocess.run([sys.executable, str(ROOT / "bench" / "global_lock.py"), *map(str, dirs)], check=False)
    if a.only in (None, "safety"):
        for b in BACKENDS:
            for tree, when in ((a.base, "before"), (None, "after")):
                scen = variant(tree or ROOT, "lock-safety", a.out, fencing=False)
                d = run(tree, scen, b, a.out / f"lock-safety-unfenced-{b}-{when}", a.duration, ["--no-report"])
                print(f"{d.name}: {violations(d)}", flush=True)
            for name in SAFETY:
                d = run(None, name, b, a.out / f"{name}-{b}-fenced-after", a.duration, ["--no-report"])
                print(f"{d.name}: {violations(d)}", flush=True)
    if a.only in (None, "seed"):
        d = run(None, "disposable", "dynamodb", a.out / "disposable-100-aws", a.duration,
                ["--users", "100", "--spawn-rate", "5", "--latency", "aws", "--processes", "2"])
        subprocess.run([sys.executable, str(ROOT / "bench" / "spec_table.py"), str(d)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
