"""The machine as a resource, from ``processes.csv``'s samples: the harness's own share of the cores, and each
stand-in server's own CPU.

Pure functions of the samples over one stretch (arrays, no files), so the report and the Harness tab build
the same resources for ``harness/metrics/bound.py``'s rule. Only the processes the harness started count
toward the machine's utilization: the machine's total beside them (CI beside CPU hogs) is kept as
``other`` in the evidence, a note, never the bound. A command driver's commands (role ``command``: the
system under test, run by the harness) count toward it too, their share kept as ``commands``.
"""

from __future__ import annotations

import math

import numpy as np

from harness.metrics.bound import Resource

CPU_MARK = 0.9  # a process at 90 % of a core, or the harness at 90 % of the cores, is saturated
MIN_TICKS = 3  # fewer samples than this say nothing about a stretch


def _interval(v: np.ndarray) -> tuple[float, float] | None:
    if len(v) < 2:
        return None
    m, se = float(v.mean()), float(v.std(ddof=1)) / math.sqrt(len(v))
    return (max(m - 1.96 * se, 0.0), m + 1.96 * se)


def _by_tick(ts: np.ndarray, role: np.ndarray, cpu: np.ndarray, ticks: np.ndarray,
             cores: int) -> tuple[np.ndarray, np.ndarray]:
    """Each tick's share of the cores: the harness's own processes between them, and the machine's total."""
    own = np.array([cpu[(role != "machine") & (ts == t)].sum() for t in ticks]) / cores
    total = np.array([cpu[(role == "machine") & (ts == t)].sum() for t in ticks]) / cores
    return own, total


def resources(ts: np.ndarray, process: np.ndarray, role: np.ndarray, cpu: np.ndarray,
              cores: int) -> list[Resource]:
    """The machine (the harness's processes against the cores) and each stand-in by its own CPU, over the
    samples given (one stretch of the run); ``cpu`` in percent of one core, as ``processes.csv`` has it."""
    ts, process, role = np.asarray(ts, dtype=float), np.asarray(process).astype(str), np.asarray(role).astype(str)
    cpu = np.asarray(cpu, dtype=float) / 100
    ticks = np.unique(ts)
    if len(ticks) < MIN_TICKS or cores < 1:
        return []
    own = role != "machine"
    per_tick, total = _by_tick(ts, role, cpu, ticks, cores)
    locust = set(process[role == "locust"].tolist())  # named as generator.csv names them: "Locust worker-1"
    shares = {(f"Locust {n}" if n in locust else str(n)): float(cpu[process == n].sum()) / len(ticks)
              for n in np.unique(process[own])}
    shares = dict(sorted(shares.items(), key=lambda kv: -kv[1]))
    commands = np.array([cpu[(role == "command") & (ts == t)].sum() for t in ticks]) / cores
    util = float(per_tick.mean())
    machine_busy = float(total.mean()) if (role == "machine").any() else None
    out = [Resource("machine", "", util, _interval(per_tick),
                    {"cores": int(cores), "shares": shares, "machine_busy": machine_busy,
                     "other": max(machine_busy - util, 0.0) if machine_busy is not None else None,
                     "samples": int(len(ticks)), "saturated_share": float((per_tick >= CPU_MARK).mean()),
                     "basis": "cpu", "commands": float(commands.mean())}, mark=CPU_MARK)]
    for name in np.unique(process[role == "stand-in"]):
        v = cpu[(role == "stand-in") & (process == name)]
        out.append(Resource("stand-in", str(name), float(v.mean()), _interval(v),
                            {"basis": "cpu", "samples": int(len(v)), "saturated_share": float((v >= CPU_MARK).mean()),
                             "median": float(np.median(v))}, mark=CPU_MARK))
    return out


OTHERS_MARK = 0.25  # work not the run's on a quarter of the cores, with the cores full, takes the run's time


def others_full(ts: np.ndarray, role: np.ndarray, cpu: np.ndarray, cores: int) -> dict[str, float] | None:
    """The machine over the samples given (one stretch) when its cores were full (its total at ``CPU_MARK``)
    and work not the run's took ``OTHERS_MARK`` of them; None otherwise, or from too few samples.

    Such a stretch's rate says as much about the machine as about the code: a baseline comparison does not
    call its fall a regression (``harness/report/run/baseline.py``). The run's own processes filling the
    cores alone do not count: a build that spends more CPU is the code's."""
    ts, role = np.asarray(ts, dtype=float), np.asarray(role).astype(str)
    cpu = np.asarray(cpu, dtype=float) / 100
    ticks = np.unique(ts)
    if len(ticks) < MIN_TICKS or cores < 1 or not (role == "machine").any():
        return None
    own, total = _by_tick(ts, role, cpu, ticks, cores)
    busy, other = float(total.mean()), float(np.clip(total - own, 0, None).mean())
    return {"busy": busy, "other": other, "samples": int(len(ticks))} \
        if busy >= CPU_MARK and other >= OTHERS_MARK else None
