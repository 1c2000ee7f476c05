"""A command run (the real swamp) and its model twin side by side by work done, not by clock time.

Over the same minutes the model runs many times more iterations than swamp (each swamp command spends 1-2.5 s
starting before any datastore work), so "commit x4.45" in one and "x2.43" in the other measure different
amounts of work. Lined up by the nth run of a model (a model's runs counted in the order each user made them),
the two answer the same question: what does the datastore cost at a model's 1st, 10th, 20th sync?

``python -m harness.report.compare.by_model_run REAL_RUN TWIN_RUN [--at 1,10,20]`` prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from harness.record.reader import read_rows

STEPS = ("lock_wait_ms", "pull_ms", "push_ms", "commit_lock_ms", "commit_ms", "delete_ms", "prune_ms")
MEASURES = ("requests", "files_pushed", "lock_attempts", *STEPS)


def with_model_run(rows: pd.DataFrame) -> pd.DataFrame:
    """The successful rows with ``model_run``: 1 for a model's first iteration by its user, 2 for the next..."""
    ok = rows[rows["ok"].astype(bool)].sort_values(["user", "iteration"]).copy()
    ok["model_run"] = ok.groupby(["user", "model_id"]).cumcount() + 1
    return ok


def at_runs(rows: pd.DataFrame, at: tuple[int, ...]) -> pd.DataFrame:
    """Each measure's median at each nth model run (rows: measures; columns: the runs asked; NaN: none that far,
    or a column no row filled)."""
    d = with_model_run(rows)
    out = {}
    for n in at:
        sel = d[d["model_run"] == n]
        out[n] = {m: (float(sel[m].median()) if m in sel and sel[m].notna().any() else float("nan"))
                  for m in MEASURES}
        out[n]["rows"] = float(len(sel))
    return pd.DataFrame(out)


def side_by_side(real: pd.DataFrame, twin: pd.DataFrame, at: tuple[int, ...] = (1, 10, 20)) -> pd.DataFrame:
    """``real`` and ``twin`` at each nth model run, column pairs ``<n> real`` / ``<n> twin``."""
    a, b = at_runs(real, at), at_runs(twin, at)
    cols = {}
    for n in at:
        cols[f"{n} real"] = a[n]
        cols[f"{n} twin"] = b[n]
    return pd.DataFrame(cols)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("real")
    p.add_argument("twin")
    p.add_argument("--at", default="1,10,20", help="the model runs to compare (default 1,10,20)")
    a = p.parse_args(argv)
    at = tuple(int(x) for x in a.at.split(","))
    for d in (a.real, a.twin):
        if not Path(d).is_dir():
            print(f"not a run directory: {d}", file=sys.stderr)
            return 2
    table = side_by_side(read_rows(a.real), read_rows(a.twin), at)
    print(table.round(1).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
