"""Two-phase runs side by side: the rate, how long the global lock is held and what is sent under it.

    python bench/global_lock.py RUN_DIR [RUN_DIR ...]
    python bench/global_lock.py --quick          # two short runs made here (seconds), then their figures

For each run directory (``harness run ... --run-dir``): successful iterations a second; the global lock's
hold, per grant from its history (``grant`` to its ``release``: every lock that is not a model's
``.../data/<type>/<id>/.lock``), median and p99 in ms, and the grants a second; per push (median of the
successful iterations) the requests sent while the global lock was held (the commit step's, and the export
step's when the export is written under it), the wait for it (``commit_lock_ms``) and for the model lock
(``lock_wait_ms``), the writes an iteration makes (``write_requests``) and what of its requests only the
harness's fencing made (``fencing_requests``; 0 in a run that is swamp's own). Medians, because the machine
is shared; ratios to the first run below the table. Pure on the run directories (``figures``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd


def is_model_lock(key: str) -> bool:
    return "data/" in key and key.endswith("/.lock")


def holds(run_dir: Path) -> pd.DataFrame:
    """One row per global-lock grant: its key and how long it was held (ms), from the run's history."""
    grants: dict[str, dict] = {}
    released: dict[str, int] = {}
    for path in sorted((run_dir / "history").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            e = json.loads(line)
            if e.get("type") == "grant" and not is_model_lock(e["key"]):
                grants[e["nonce"]] = e
            elif e.get("type") == "release" and e.get("nonce"):
                released.setdefault(e["nonce"], e["invoke_ms"])
    rows = [{"key": g["key"], "granted_ms": g["granted_ms"], "held_ms": released[n] - g["granted_ms"]}
            for n, g in grants.items() if n in released]
    return pd.DataFrame(rows, columns=["key", "granted_ms", "held_ms"])


def figures(run_dir: str | Path) -> dict:
    """One run's figures."""
    run_dir = Path(run_dir)
    info = json.loads((run_dir / "run.json").read_text())
    ds = info["scenario"]["datastore"]
    df = pd.read_parquet(run_dir / "iterations")
    ok = df[df["ok"]]
    span_s = max(1e-9, (df["ts_end"].max() - df["ts_start"].min()).total_seconds()) if len(df) else 1e-9
    exported_under = info["backend"] == "dynamodb" and ds.get("export_at") == "swamp" and (
        ds.get("fencing", True) or ds.get("bookkeeping") != "swamp")
    under = ok["commit_requests"] + (ok["export_requests"] if exported_under else 0)
    h = holds(run_dir)

    def med(s: pd.Series) -> float:
        return float(s.median()) if len(s) else float("nan")

    def col(name: str) -> float:
        return med(ok[name]) if name in ok else float("nan")

    return {
        "run": run_dir.name, "backend": info["backend"], "fencing": ds.get("fencing", True),
        "ok": len(ok), "failed": int((~df["ok"]).sum()), "ok/s": len(ok) / span_s,
        "hold ms p50": med(h["held_ms"]), "hold ms p99": float(np.percentile(h["held_ms"], 99)) if len(h) else
        float("nan"), "holds/s": len(h) / span_s, "global locks": int(h["key"].nunique()) if len(h) else 0,
        "held requests": med(under), "commit_lock ms": col("commit_lock_ms"), "lock_wait ms": col("lock_wait_ms"),
        "writes/it": col("write_requests"), "fencing req/it": col("fencing_requests"),
    }


def table(run_dirs: list[str]) -> pd.DataFrame:
    return pd.DataFrame([figures(d) for d in run_dirs]).set_index("run")


def show(t: pd.DataFrame) -> None:
    print(t.round(2).to_string())
    if len(t) > 1:
        cols = ["ok/s", "hold ms p50", "hold ms p99", "held requests"]
        print("\nratios to the first run:")
        print((t[cols] / t.iloc[0][cols]).round(2).to_string())


def quick() -> list[str]:
    """Two 6-second two-phase-namespaced runs (swamp's own, then the same fenced) on the embedded stand-in."""
    out = Path(tempfile.mkdtemp(prefix="global-lock-"))
    scenario = Path(__file__).resolve().parents[1] / "harness" / "config" / "scenarios" / "two-phase-namespaced.toml"
    fenced = out / "two-phase-namespaced-fenced.toml"
    fenced.write_text(scenario.read_text().replace("fencing = false", "fencing = true"))
    dirs = []
    for name, path in (("own", scenario), ("fenced", fenced)):
        d = out / name
        subprocess.run([sys.executable, "-m", "harness", "run", str(path), "--duration", "6s", "--users", "2",
                        "--run-dir", str(d), "--no-report"], check=True, stdout=subprocess.DEVNULL)
        dirs.append(str(d))
    return dirs


def main(argv: list[str]) -> int:
    if argv == ["--quick"]:
        argv = quick()
    if not argv or any(a.startswith("-") for a in argv):
        print("usage: python bench/global_lock.py RUN_DIR [RUN_DIR ...] | --quick", file=sys.stderr)
        return 2
    missing = [d for d in argv if not (Path(d) / "run.json").is_file()]
    if missing:
        print(f"not a run directory (no run.json): {', '.join(missing)}", file=sys.stderr)
        return 2
    show(table(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
