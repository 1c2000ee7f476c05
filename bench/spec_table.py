"""The spec's own table for `disposable` at 100 workers, beside what a run of the harness measured.

    python bench/spec_table.py RUN_DIR
    python bench/spec_table.py --quick       # a 5-second, 10-worker run made here (seconds), then its table

The run to read is ``harness run disposable --users 100 --latency aws --duration 60s --processes N
--run-dir RUN_DIR`` (docs/swamp-today.md has the commands and the machine the figures came from). For each of
the spec's figures (the-migrating-bottleneck: ~17 iterations a second at 100 workers, 17,500 write capacity
units a second, PutItem 3.7 ms average, write throttling under 0.2 %, 560 write operations a second, six files
committed per sync) the run's own: iterations a second and an iteration's median; write requests and write
units a second and an iteration (``write_requests``, ``write_units``); files pushed per sync; throttles per
write request (``keys.csv``); in the PutItem row the mean time inside a request of any kind (PutItem's own is
the latency model's input, a mean of about 3.7 ms: not a measurement); and what bound the fleet, as the
run's report names it (``report/summary.json``), with the Locust
processes' CPU, so a figure bound by the generator reads as such. Pure on the run directory (``figures``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

# the spec's figures (FACTS.md, "Seed figures at 100 workers"; the seed text's disposable chapter)
SEED = {"iterations/s": 17.0, "iteration s": 100 / 17.0, "write ops/s": 560.0, "write ops/it": 560 / 17.0,
        "WCU/s": 17_500.0, "WCU/it": 17_500 / 17.0, "files/sync": 6.0, "throttled %": 0.2,
        "PutItem ms": 3.7}


def figures(run_dir: str | Path) -> dict:
    """The run's value of each of the spec's figures, and what bound it."""
    d = Path(run_dir)
    df = pd.read_parquet(d / "iterations")
    ok = df[df["ok"]]
    span = max(1e-9, (df["ts_end"].max() - df["ts_start"].min()).total_seconds()) if len(df) else 1e-9
    writes = float(df["write_requests"].sum()) if "write_requests" in df else float("nan")
    keys = d / "keys.csv"
    throttles = float(pd.read_csv(keys)["throttles"].sum()) if keys.is_file() else 0.0
    gen = pd.read_csv(d / "generator.csv") if (d / "generator.csv").is_file() else pd.DataFrame()
    summary = d / "report" / "summary.json"
    bound = None
    if summary.is_file():
        runs = json.loads(summary.read_text()).get("runs") or [{}]
        bound = ((runs[0].get("findings") or {}).get("verdict") or {}).get("bound")
    info = json.loads((d / "run.json").read_text())
    return {
        "iterations/s": len(ok) / span, "iteration s": float(ok["total_ms"].median()) / 1000,
        "write ops/s": writes / span, "write ops/it": float(ok["write_requests"].median()),
        "WCU/s": float(df["write_units"].sum()) / span, "WCU/it": float(ok["write_units"].median()),
        "files/sync": float(ok["files_pushed"].median()),
        "throttled %": 100 * throttles / writes if writes else float("nan"),
        "PutItem ms": float(sum(df[c].sum() for c in df if c.endswith("_request_ms"))
                            / max(1, df["requests"].sum())),
        "_requests/it": float(ok["requests"].median()), "_workers": info.get("fleet", {}).get("workers"),
        "_processes": info.get("fleet", {}).get("processes"), "_generator cpu p50": float(
            gen["cpu_percent"].median()) if len(gen) else float("nan"), "_bound": bound,
        "_failed": int((~df["ok"]).sum()), "_ok": len(ok),
    }


def side_by_side(run: dict) -> pd.DataFrame:
    rows = [{"figure": k, "seed": SEED[k], "run": run[k], "run / seed": run[k] / SEED[k]} for k in SEED]
    return pd.DataFrame(rows).set_index("figure")


def quick() -> str:
    d = Path(tempfile.mkdtemp(prefix="seed-table-")) / "run"
    subprocess.run([sys.executable, "-m", "harness", "run", "disposable", "--users", "10", "--latency", "aws",
                    "--duration", "5s", "--run-dir", str(d)], check=True, stdout=subprocess.DEVNULL)
    return str(d)


def main(argv: list[str]) -> int:
    if argv == ["--quick"]:
        argv = [quick()]
    if len(argv) != 1 or argv[0].startswith("-") or not (Path(argv[0]) / "run.json").is_file():
        print("usage: python bench/spec_table.py RUN_DIR | --quick  (RUN_DIR: a run directory, with run.json)",
              file=sys.stderr)
        return 2
    run = figures(argv[0])
    print(side_by_side(run).round(2).to_string())
    print("\n" + "\n".join(f"{k[1:]}: {v}" for k, v in run.items() if k.startswith("_")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
