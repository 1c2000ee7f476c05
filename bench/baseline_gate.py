"""The baseline gate on both backends: the same code twice passes, a slower commit fails (exit 3, named).

For each backend: two runs of `shared-lock` side by side (the same code, the same machine load), then
`harness report SAME --baseline BASE` (expected exit 0: unchanged or cannot tell, never a regression), then a
run whose every commit waits 200 ms more (`[fidelity.pauses]` probability 1, the scenario's name kept) with
`harness run ... --baseline BASE` (expected exit 3 naming the commit). Prints each exit code and the
comparison's sentence and commit line, side by side.

    python bench/baseline_gate.py                  # 20 s runs, both backends
    python bench/baseline_gate.py --duration 10s --backends dynamodb
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOWER = '\n[fidelity.pauses]\nprobability = 1.0\nduration = "200ms"\n'


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HARNESS_"))}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    return env


def _harness(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=ROOT,
                          env=_env(), timeout=900)


def _said(out: str) -> tuple[str, str]:
    sentence = next((x for x in out.splitlines() if "Against the baseline" in x), "?")
    commit = next((x for x in out.splitlines() if re.search(r"\bcommit: ", x)), "?")
    return sentence.split(": ", 2)[-1], commit.replace("harness: ", "").strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", default="20s")
    ap.add_argument("--workers", default="4")
    ap.add_argument("--backends", default="dynamodb,s3")
    ap.add_argument("--quick", action="store_true", help="8 s runs, DynamoDB only")
    a = ap.parse_args()
    duration, backends = ("8s", ["dynamodb"]) if a.quick else (a.duration, a.backends.split(","))
    with tempfile.TemporaryDirectory(prefix="baseline-gate-") as tmp:
        t = Path(tmp)
        slower = t / "shared-lock-slower.toml"
        slower.write_text((ROOT / "harness" / "config" / "scenarios" / "shared-lock.toml").read_text() + SLOWER)
        for backend in backends:
            common = ["--backend", backend, "--duration", duration, "--users", a.workers]
            base, same, slow = t / f"{backend}-base", t / f"{backend}-same", t / f"{backend}-slow"
            procs = [subprocess.Popen([sys.executable, "-m", "harness", "run", "shared-lock", *common, "--run-dir",
                                       str(d), "--no-report"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True, cwd=ROOT, env=_env()) for d in (base, same)]
            for p in procs:
                _, err = p.communicate(timeout=900)
                if p.returncode != 0:
                    print(f"{backend}: a run failed (exit {p.returncode}): {err.strip()[-300:]}")
                    return 1
            same_cmp = _harness("report", str(same), "--baseline", str(base))
            slow_run = _harness("run", str(slower), *common, "--run-dir", str(slow), "--no-report", "--baseline",
                                str(base))
            s1, c1 = _said(same_cmp.stdout)
            s2, c2 = _said(slow_run.stdout)
            print(f"{backend}: same code twice: exit {same_cmp.returncode}: {s1}")
            print(f"{backend}:   {c1}")
            print(f"{backend}: commit 200 ms slower: exit {slow_run.returncode}: {s2}")
            print(f"{backend}:   {c2}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
