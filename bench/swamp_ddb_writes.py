"""DynamoDB writes per push as a data name's versions accumulate, run against run (issue 32's table).

    python bench/swamp_ddb_writes.py RUN_DIR [RUN_DIR ...]

For each run: the rate (successful iterations a second over the run's span), the
requests each push made under the global lock (``commit_requests``: content,
index, registry, and with ``export_at = "swamp"`` the export is its own step,
``export_requests``) and the files it pushed, by each worker's iteration
ordinal (a data name's versions grow with it), as medians per band of
iterations; and the last band over the first. Runs on a shared machine are
noisy: compare medians and ratios, not single figures.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from harness.report.load import open_run

BANDS = 4


def table(path: str) -> dict:
    run = open_run(path)
    rows = run.rows.sort_values("ts_start")
    ok = rows[rows["ok"]].copy()
    ok["n"] = ok.groupby("user").cumcount()
    span = pd.Timedelta(rows["ts_end"].max() - rows["ts_start"].min()).total_seconds() or 1.0
    edges = np.quantile(ok["n"], np.linspace(0, 1, BANDS + 1)) if len(ok) else np.zeros(BANDS + 1)
    bands = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        b = ok[(ok["n"] >= lo) & (ok["n"] <= hi)]
        bands.append((int(lo), int(hi), float(b["commit_requests"].median()),
                      float(b.get("export_requests", pd.Series([0.0])).median()),
                      float(b["files_pushed"].median()), float(b["write_units"].median())))
    lock = {k: int(v) for k, v in rows["error_kind"].value_counts().items() if k}
    return {"run": path, "scenario": run.info.get("scenario_name"), "rate": len(ok) / span, "bands": bands,
            "failures": lock, "iterations": len(rows)}


def main(paths: list[str]) -> None:
    for t in map(table, paths):
        print(f"{t['run']}: {t['scenario']}  {t['rate']:.2f} it/s ({t['iterations']} iterations, "
              f"failures {t['failures'] or 'none'})")
        print("  iteration n (per worker)  commit requests  export requests  files pushed  write units")
        for lo, hi, c, e, f, w in t["bands"]:
            print(f"  {lo:>5}..{hi:<5}               {c:>8.0f}         {e:>8.0f}        {f:>6.0f}      {w:>8.1f}")
        first, last = t["bands"][0][2], t["bands"][-1][2]
        print(f"  last band / first: x{last / first:.2f} commit requests" if first else "")


if __name__ == "__main__":
    main(sys.argv[1:])
