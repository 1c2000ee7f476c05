"""The same report from two checkouts: one generated run through both, their summary.json compared.

A change that makes the report faster or smaller must not change its numbers. This generates the
nine-hour bench run (bench/report_bench.py, any size) once, builds its report with this checkout and
with another (``--base``: e.g. ``git worktree add /tmp/base main``), and compares the two summary.json
files key by key (the run directory aside). Exit 1, with the first differences, when they differ.

Usage: python bench/report_same.py --base /tmp/base [--rows 1000000]
       python bench/report_same.py --quick   # 20,000 rows, this checkout against itself: the report is
                                              # reproducible and the comparison runs (CI)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _report(checkout: Path, run: Path, out: Path) -> dict:
    subprocess.run([sys.executable, "-m", "harness", "report", str(run), "--out", str(out)], cwd=checkout,
                   check=True, stdout=subprocess.DEVNULL)
    summary = json.loads((out / "summary.json").read_text())
    for r in summary["runs"]:
        r.pop("run_dir", None)
    return summary


def differences(a, b, where: str = "") -> list[str]:
    """Paths where two JSON documents differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", help="another checkout of the project (the code before)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="20,000 rows; without --base, this checkout twice")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.base = 20_000, args.base or str(ROOT)
    if not args.base:
        sys.exit("harness: pass --base DIR, another checkout to compare with (git worktree add DIR main)")
    base = Path(args.base).resolve()
    if not (base / "harness" / "__main__.py").exists():
        sys.exit(f"harness: {base} is not a checkout of this project: pass --base a worktree (git worktree add)")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        subprocess.run([sys.executable, str(ROOT / "bench" / "report_bench.py"), "--make", str(run), "--rows",
                        str(args.rows)], check=True)
        diff = differences(_report(base, run, Path(tmp) / "base"), _report(ROOT, run, Path(tmp) / "this"))
    if diff:
        print(f"summary.json differs in {len(diff)} place(s):\n" + "\n".join(diff[:20]))
        sys.exit(1)
    print(f"summary.json identical ({args.rows:,} rows requested): {base} and {ROOT}")


if __name__ == "__main__":
    main()
