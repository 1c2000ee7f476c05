"""``harness forecast RUN_DIR --at DURATION|Nit|Nx [--json]``: the report's rate forecast at any horizon.

The run's findings are computed as the report computes them (no page, no figures), with the forecast looking
where ``--at`` says; ``--json`` prints the forecast as ``summary.json`` carries it.
"""

from __future__ import annotations

import json
from pathlib import Path


def cmd_forecast(run_dir: str, at: str, as_json: bool) -> int:
    """Exit 0 with a forecast (a flat one included); 2 for bad input (not a run directory, a malformed ``--at``);
    3 when none can be made (too few successful iterations, or a step grew that no count explains)."""
    from harness.report.forecast.forecast import sentence
    from harness.report.forecast.horizon import parse
    from harness.report.load import open_run
    from harness.report.run.build import findings_of, take_lock_intervals
    from harness.report.show import json_safe

    horizon = parse(at)
    run = open_run(Path(run_dir))
    f = findings_of(run, take_lock_intervals(run), horizon=horizon)
    fc = f.get("forecast")
    if as_json:
        print(json.dumps(json_safe({k: v for k, v in (fc or {}).items() if k != "curve"}) if fc else None,
                         indent=2, allow_nan=False))
    else:
        print(sentence(fc) or "No forecast: the run has too few successful iterations to forecast from.")
    return 0 if fc and fc.get("rate") else 3
