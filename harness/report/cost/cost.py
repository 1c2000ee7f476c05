"""A run's requests and units priced on AWS: per hour at this fleet, per iteration, and at the forecast's horizon.

DynamoDB: the rows' read and write units, counted as the capacity model counts them (1 KB a write unit, 4 KB a
read unit, half for an eventually consistent read; a write again for each GSI it lands in:
``harness/aws/capacity.py``), priced on-demand (per million request units) and provisioned (capacity per hour,
sized to the run's mean units per second: at 100 % utilization, and at the 70 % an auto-scaling target keeps)
side by side. S3: the rows' requests, those that write (``write_requests``) in the PUT/COPY/POST/LIST class and
the rest as GETs (a LIST the rows count as a read is billed with the PUTs, a DELETE is free: so the S3 figure is
an estimate within those two). Storage is in the table but not priced: the rows do not say what the store holds.
Where CloudWatch was read (``harness run`` on AWS, ``harness report --cloudwatch``), the whole run is priced again from
its consumed capacity beside the clients' units (``beside_cloudwatch``): what AWS would bill against what the
harness counted.

The spec's own check: 17,500 WCU/s sustained is 63.0 million write units an hour, $39.375 an hour on-demand at
$0.625 per million (``hourly_on_demand(0, 17_500, prices)``).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core.errors import HarnessError

PRICES = Path(__file__).with_name("prices.toml")
AUTOSCALING_TARGET = 0.7  # DynamoDB auto scaling's default target utilization


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) and "price" not in v \
            else v
    return out


def load(override: str | Path | None = None) -> dict[str, Any]:
    """The shipped price table, with a user's file's keys over it (one-line errors for a bad file)."""
    table = tomllib.loads(PRICES.read_text())
    if override is None:
        return table
    p = Path(override)
    try:
        user = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise HarnessError(f"--prices {p}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"--prices {p}: not valid TOML ({e})") from None
    merged = _merge(table, user)
    for path in PRICE_KEYS:
        v = price(merged, path)
        if not isinstance(v, int | float) or v < 0 or isinstance(v, bool):
            raise HarnessError(f"--prices {p}: {'.'.join(path)} must be a price >= 0 (a number, or "
                               f"{{ price = 0.625, source = \"...\", as_of = \"...\" }})")
    merged["overridden_by"] = str(p)
    return merged


PRICE_KEYS = (("dynamodb", "on_demand", "write_request_units_per_million"),
              ("dynamodb", "on_demand", "read_request_units_per_million"),
              ("dynamodb", "provisioned", "wcu_hour"), ("dynamodb", "provisioned", "rcu_hour"),
              ("dynamodb", "storage", "gb_month"), ("s3", "requests", "put_copy_post_list_per_thousand"),
              ("s3", "requests", "get_and_other_per_thousand"), ("s3", "storage", "gb_month"))


def price(table: dict[str, Any], path: tuple[str, ...]) -> Any:
    """A price by its path; a user's file may give the number alone or ``{price, source, as_of}``."""
    v: Any = table
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    return v["price"] if isinstance(v, dict) else v


def hourly_on_demand(rru_per_s: float, wru_per_s: float, table: dict[str, Any]) -> float:
    """Dollars an hour on-demand for read and write request units per second, sustained."""
    return 3600 / 1e6 * (rru_per_s * price(table, PRICE_KEYS[1]) + wru_per_s * price(table, PRICE_KEYS[0]))


def hourly_provisioned(rcu: float, wcu: float, table: dict[str, Any]) -> float:
    """Dollars an hour for provisioned capacity (read and write capacity units)."""
    return rcu * price(table, PRICE_KEYS[3]) + wcu * price(table, PRICE_KEYS[2])


def hourly_s3(put_per_s: float, get_per_s: float, table: dict[str, Any]) -> float:
    return 3600 / 1e3 * (put_per_s * price(table, PRICE_KEYS[5]) + get_per_s * price(table, PRICE_KEYS[6]))


def _sum(rows: pd.DataFrame, col: str, keep: np.ndarray) -> float:
    if col not in rows.columns:
        return 0.0
    return float(np.nansum(rows[col].to_numpy(dtype=float)[keep]))


def run_cost(rows: pd.DataFrame, t: np.ndarray, info: dict[str, Any], f: dict[str, Any],
             table: dict[str, Any]) -> dict[str, Any] | None:
    """The run's units (after the warm-up) priced: per hour at this fleet, per successful iteration, and at the
    forecast's rate (units per iteration as in the run). None for a run with no load after its warm-up."""
    a, b = float(f["fleet"]["warmup_s"]), float(f["duration_s"])
    if b <= a:
        return None
    keep = (t >= a) & (t <= b)
    secs = b - a
    ok = int((rows["ok"].to_numpy(dtype=bool) & keep).sum())
    backend = info.get("backend") or "dynamodb"
    fc = f.get("forecast") or {}
    fc_rate = (fc.get("rate") or {}).get("point")
    out: dict[str, Any] = {"backend": backend, "region": table.get("region"), "currency": table.get("currency"),
                           "seconds": secs, "successes": ok, "prices": _sources(table, backend),
                           "overridden_by": table.get("overridden_by")}
    if backend == "s3":
        req, put = _sum(rows, "requests", keep), _sum(rows, "write_requests", keep)
        get = max(req - put, 0.0)
        hour = hourly_s3(put / secs, get / secs, table)
        out.update(requests={"put_copy_post_list": put, "get_and_other": get},
                   modes={"requests": _mode(hour, ok, secs, fc_rate, f)},
                   note="S3: requests that write priced as PUTs, the rest as GETs (LISTs are billed as PUTs, "
                        "DELETEs are free); storage not priced")
        return out
    rru, wru = _sum(rows, "read_units", keep), _sum(rows, "write_units", keep)
    r_s, w_s = rru / secs, wru / secs
    out["units"] = {"read_request_units": rru, "write_request_units": wru, "rru_per_s": r_s, "wru_per_s": w_s}
    out["modes"] = {"on-demand": _mode(hourly_on_demand(r_s, w_s, table), ok, secs, fc_rate, f),
                    "provisioned (100 % used)": _mode(hourly_provisioned(math.ceil(r_s), math.ceil(w_s), table), ok,
                                                      secs, fc_rate, f, fixed=True),
                    f"provisioned ({AUTOSCALING_TARGET * 100:.0f} % target)": _mode(hourly_provisioned(
                        math.ceil(r_s / AUTOSCALING_TARGET), math.ceil(w_s / AUTOSCALING_TARGET), table), ok, secs,
                        fc_rate, f, fixed=True)}
    out["note"] = ("units as the capacity model counts them (1 KB a write unit, 4 KB a read unit, GSI writes per "
                   "index); provisioned sized to the run's mean units per second; storage not priced")
    return out


def beside_cloudwatch(rows: pd.DataFrame, cloudwatch: dict[str, Any] | None,
                      table: dict[str, Any]) -> dict[str, Any] | None:
    """The whole run on-demand, by the clients' units and by CloudWatch's consumed units, side by side (None when
    CloudWatch gave no consumed capacity: a run it was not read for, or S3).

    The clients count units by DynamoDB's rules as the capacity model applies them; AWS bills what it measured.
    Only the kinds CloudWatch reported are priced, on both sides, over every row (its window covers the whole
    run, warm-up included), so the two dollar figures answer the same question."""
    units = (cloudwatch or {}).get("units") or {}
    if not units:
        return None
    prices = {"read": price(table, PRICE_KEYS[1]), "write": price(table, PRICE_KEYS[0])}
    every = np.ones(len(rows), dtype=bool)
    mine = {kind: _sum(rows, f"{kind}_units", every) for kind in units}
    dollars = {"clients": sum(mine[k] * prices[k] for k in units) / 1e6,
               "cloudwatch": sum(float(units[k]) * prices[k] for k in units) / 1e6}
    ratio = dollars["clients"] / dollars["cloudwatch"] if dollars["cloudwatch"] > 0 else None
    kinds = " and ".join(sorted(units))
    said = (f"On-demand, the run's {kinds} units cost ${dollars['clients']:.3g} by the clients' count and "
            f"${dollars['cloudwatch']:.3g} by CloudWatch's consumed capacity"
            + (f" (the clients' figure x{ratio:.3g} AWS's)." if ratio is not None else "."))
    return {"kinds": sorted(units), "clients_units": mine, "cloudwatch_units": {k: float(v) for k, v in units.items()},
            "clients_usd": dollars["clients"], "cloudwatch_usd": dollars["cloudwatch"], "ratio": ratio,
            "sentence": said}


def _mode(per_hour: float, ok: int, secs: float, fc_rate: float | None, f: dict[str, Any],
          fixed: bool = False) -> dict[str, Any]:
    """Per hour at this fleet; per successful iteration; an hour at the forecast's rate (per-request pricing:
    the iterations the forecast's rate makes, at this run's units each; provisioned capacity: the same hour)."""
    rate = ok / secs if secs > 0 else 0.0
    per_it = per_hour / (rate * 3600) if rate > 0 else None
    at_horizon = None
    if fc_rate is not None and per_it is not None:
        at_horizon = per_hour if fixed else per_it * fc_rate * 3600
    return {"per_hour": per_hour, "per_iteration": per_it, "per_hour_at_horizon": at_horizon,
            "horizon_s": (f.get("forecast") or {}).get("horizon_s")}


def _sources(table: dict[str, Any], backend: str) -> list[dict[str, Any]]:
    out = []
    for path in PRICE_KEYS:
        if path[0] != ("s3" if backend == "s3" else "dynamodb"):
            continue
        v: Any = table
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        entry = v if isinstance(v, dict) else {"price": v}
        out.append({"price": ".".join(path), "usd": entry.get("price"), "source": entry.get("source"),
                    "as_of": entry.get("as_of")})
    return out


def sentence(c: dict[str, Any] | None) -> str | None:
    """``On AWS (us-east-1): $0.0158 an hour on-demand at this fleet ($1.2e-06 an iteration), $0.0046 provisioned``."""
    if not c:
        return None
    modes = c["modes"]
    if c["backend"] == "s3":
        m = modes["requests"]
        return f"On AWS ({c['region']}): S3 requests ${m['per_hour']:.3g} an hour at this fleet (estimate)."
    od, pv = modes["on-demand"], modes["provisioned (100 % used)"]
    s = f"On AWS ({c['region']}): ${od['per_hour']:.3g} an hour on-demand at this fleet"
    if od["per_iteration"] is not None:
        s += f" (${od['per_iteration']:.3g} an iteration)"
    s += f", ${pv['per_hour']:.3g} an hour provisioned at its mean units"
    if od["per_hour_at_horizon"] is not None:
        s += f"; ${od['per_hour_at_horizon']:.3g} an hour on-demand at the forecast's rate"
    return s + "."
