"""Two-phase runs side by side: what a push holds under the global lock, and the rate and ceiling that follow.

    python bench/two_phase_s3.py RUN_DIR [RUN_DIR ...]

For each run directory (``harness run ... --run-dir``), from its iterations:
the successful iterations a second; per push the median requests in the
commit step (held under the global lock: ``commit_requests``; apart, a
model's first run, which reads no shard, and its later runs) and its median
time; the median wait for the global lock (``commit_lock_ms``) and for the
model lock (``lock_wait_ms``); the prepare's and the pull's requests; and the
ceiling one global lock allows, 1,000 / the median commit time (commits a
second through one lock: the namespaced scenario has one per namespace).
Medians, because the machine is shared.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd


def figures(run_dir: str) -> dict:
    """One run's figures (pure on its iterations table)."""
    df = pd.read_parquet(Path(run_dir) / "iterations")
    ok = df[df["ok"]]
    span_s = max(1e-9, (df["ts_end"].max() - df["ts_start"].min()).total_seconds()) if len(df) else 1e-9
    commit_ms = float(ok["commit_ms"].median()) if len(ok) else float("nan")
    ok = ok.sort_values("ts_start")
    again = ok[ok.duplicated("model_id")]  # a model's later runs (its first creates its shards: no GETs)
    return {
        "run": Path(run_dir).name,
        "ok": len(ok), "failed": int((~df["ok"]).sum()),
        "ok/s": len(ok) / span_s,
        "held requests": float(ok["commit_requests"].median()),
        "held (first run)": float(ok.drop_duplicates("model_id")["commit_requests"].median()),
        "held (again)": float(again["commit_requests"].median()) if len(again) else float("nan"),
        "again runs": len(again),
        "commit ms": commit_ms,
        "commit_lock ms": float(ok["commit_lock_ms"].median()),
        "lock_wait ms": float(ok["lock_wait_ms"].median()),
        "push requests": float(ok["push_requests"].median()),
        "pull requests": float(ok["pull_requests"].median()),
        "ceiling/s": 1000 / commit_ms if commit_ms > 0 else float("nan"),
    }


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python bench/two_phase_s3.py RUN_DIR [RUN_DIR ...]", file=sys.stderr)
        return 2
    table = pd.DataFrame([figures(d) for d in argv]).set_index("run")
    print(table.round(2).to_string())
    if len(table) > 1:
        base = table.iloc[0]
        print("\nratios to the first run:")
        print((table[["ok/s", "held requests", "commit ms", "ceiling/s"]] / base[
            ["ok/s", "held requests", "commit ms", "ceiling/s"]]).round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
