"""The spec's five scenarios on each local stand-in, side by side: does the stand-in change the story?

Runs ``harness run SCENARIO --dynamodb-stand-in NAME --duration D`` for legacy-gsi,
shared-lock, namespaced, disposable and pruning on each stand-in, then prints
one table read from each run's ``report/summary.json`` (iterations, rate start
-> floor, shape, dominant step first -> last, what grew, probe) and, from the
rows themselves, the per-step milliseconds and work counts of the first and the
last tenth of each run (so a reader can check what the report says).

Usage:
  python bench/standin_scenarios.py --duration 60s --out /tmp/scen           # dynalite and moto, 10 runs
  python bench/standin_scenarios.py --stand-ins dynalite --scenarios namespaced --duration 20s
  python bench/standin_scenarios.py --backend s3 --stand-ins seaweedfs,moto --scenarios disposable,pruning
  python bench/standin_scenarios.py --from /tmp/scen                         # print finished runs again
  python bench/standin_scenarios.py --quick                                  # namespaced, 12 s, both
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("legacy-gsi", "shared-lock", "namespaced", "disposable", "pruning")
STEPS = ("lock_wait_ms", "pull_ms", "push_ms", "commit_ms", "export_ms", "delete_ms", "prune_ms")
COUNTS = ("pull_items_read", "index_entries_written", "catalog_rows", "files_pushed")


def run_one(scenario: str, stand_in: str, duration: str, out: Path, backend: str | None = None) -> Path:
    """One run; with ``backend`` s3, ``stand_in`` names S3's stand-in (seaweedfs, moto), else DynamoDB's."""
    run_dir = out / f"{scenario}--{stand_in}"
    if run_dir.exists():
        return run_dir
    choice = ["--backend", "s3", "--s3-stand-in", stand_in] if backend == "s3" else ["--dynamodb-stand-in", stand_in]
    if backend == "dynamodb":
        choice = ["--backend", "dynamodb", *choice]
    proc = subprocess.run([sys.executable, "-m", "harness", "run", scenario, *choice,
                           "--duration", duration, "--run-dir", str(run_dir)],
                          cwd=ROOT, capture_output=True, text=True)
    (out / f"{scenario}--{stand_in}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode not in (0, 3):  # 3: the run finished and a scenario check failed (still a result)
        print(f"  {scenario} on {stand_in}: harness exited {proc.returncode} (see its .log)", file=sys.stderr)
    return run_dir


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def summary_row(run_dir: Path) -> dict[str, str]:
    """The table's cells from summary.json (tolerant of fields a report version lacks)."""
    try:
        s = json.loads((run_dir / "report" / "summary.json").read_text())
    except (OSError, ValueError):
        return {"iterations": "no report"}
    f = (s.get("runs") or [{}])[0].get("findings") or {}
    fleet = f.get("fleet") or {}
    grew = f.get("explained_by")
    if isinstance(grew, dict):
        grew = grew.get("label") or grew.get("count") or json.dumps(grew)
    if not grew:
        counts = f.get("work_counts") or {}
        best = max(counts.items(), key=lambda kv: kv[1].get("growth") or 0, default=None)
        grew = f"({best[1].get('label', best[0])} x{best[1]['growth']:.1f})" if best and best[1].get("growth") else "-"
    probe = f.get("probe") or {}
    if probe and probe.get("first_ms") is not None and probe.get("last_ms") is not None:
        slowed = probe.get("backend_slowed", probe.get("slowed"))
        probe_txt = (f"{probe['first_ms']:.1f} -> {probe['last_ms']:.1f} ms"
                     + (" slowed" if slowed else " flat" if slowed is not None else ""))
    elif probe:
        probe_txt = "too few samples"  # a short run: the report did not compare the probe's ends
    else:
        probe_txt = "-"
    start, floor = fleet.get("start_rate"), fleet.get("floor_rate")
    return {
        "iterations": str(f.get("rows", "?")),
        "rate": f"{start:.2f} -> {floor:.2f}/s" if start is not None and floor is not None else "-",
        "shape": str(fleet.get("shape", "-")),
        "dominant": str(_get(f, "dominant_step", "migration") or "-"),
        "grew": str(grew),
        "probe": probe_txt,
    }


def tenths(run_dir: Path) -> dict[str, tuple[float, float]]:
    """Mean per-step ms and work counts in the first and last tenth of the run (by start time)."""
    try:
        rows = pd.read_parquet(run_dir / "iterations").sort_values("ts_start")
    except Exception:
        return {}
    rows = rows[rows["ok"]] if "ok" in rows else rows
    if len(rows) < 10:
        return {}
    t = pd.to_datetime(rows["ts_start"])
    span = (t.iloc[-1] - t.iloc[0]) / 10
    first, last = rows[t <= t.iloc[0] + span], rows[t >= t.iloc[-1] - span]
    return {c: (float(first[c].mean()), float(last[c].mean())) for c in (*STEPS, *COUNTS) if c in rows}


def print_table(results: dict[tuple[str, str], Path], stand_ins: list[str], scenarios: list[str]) -> None:
    cols = ("iterations", "rate", "shape", "dominant", "grew", "probe")
    heads = ("iterations", "rate start -> floor", "shape", "dominant step first -> last", "what grew", "probe")
    table = []
    for sc in scenarios:
        for si in stand_ins:
            row = summary_row(results[(sc, si)])
            table.append([sc, si, *[row.get(c, "-") for c in cols]])
    widths = [max(len(str(x[i])) for x in [["scenario", "stand-in", *heads], *table]) for i in range(len(cols) + 2)]
    line = lambda cells: " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
    print(line(["scenario", "stand-in", *heads]))
    print("-+-".join("-" * w for w in widths))
    for r in table:
        print(line(r))
    print("\nfrom the rows: mean of the first tenth -> last tenth")
    for sc in scenarios:
        for si in stand_ins:
            t = tenths(results[(sc, si)])
            if not t:
                continue
            steps = ", ".join(f"{k[:-3]} {a:.0f}->{b:.0f} ms" for k, (a, b) in t.items()
                              if k in STEPS and max(a, b) >= 1)
            counts = ", ".join(f"{k} {a:.1f}->{b:.1f}" for k, (a, b) in t.items() if k in COUNTS)
            print(f"  {sc} / {si}: {steps}; {counts}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stand-ins", default="dynalite,moto",
                    help="DynamoDB's stand-ins; with --backend s3, S3's (seaweedfs, moto)")
    ap.add_argument("--backend", choices=["dynamodb", "s3"], help="default: each scenario's own")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--duration", default="60s")
    ap.add_argument("--out", help="directory for the runs (default: a new temporary one)")
    ap.add_argument("--from", dest="from_dir", help="print the table of runs already in this directory")
    ap.add_argument("--quick", action="store_true", help="namespaced only, 12 s per stand-in (a smoke check)")
    args = ap.parse_args()
    if args.quick:
        args.scenarios, args.duration = "namespaced", "12s"
    stand_ins = [s for s in args.stand_ins.split(",") if s]
    scenarios = [s for s in args.scenarios.split(",") if s]
    out = Path(args.from_dir or args.out or tempfile.mkdtemp(prefix="standin-scenarios-"))
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for sc in scenarios:
        for si in stand_ins:
            if not args.from_dir:
                print(f"running {sc} on {si} for {args.duration} ...", flush=True)
            results[(sc, si)] = (run_one(sc, si, args.duration, out, args.backend) if not args.from_dir
                                 else out / f"{sc}--{si}")
    print(f"\nruns in {out}\n")
    print_table(results, stand_ins, scenarios)
    return 0


if __name__ == "__main__":
    sys.exit(main())
