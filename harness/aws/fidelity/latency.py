"""Latency profiles: time added per operation, as real waiting before the request goes out.

A distribution is lognormal, given by its median and its p99 (the way latencies
are usually quoted), or fixed. Shipped profiles:
- ``local``: nothing added;
- ``aws-dynamodb``: PutItem median 3.2 ms, p99 12 ms (mean ~3.7 ms, the spec's figure);
- ``aws-s3-vpce``: PutObject median 280 ms, p99 700 ms (mean ~300 ms, S3 through a VPC endpoint);
- ``aws``: both.
A user profile is a TOML file: ``[dynamodb.PutItem] median_ms = 3 p99_ms = 12``, ``[s3."*"] fixed_ms = 50``.

A profile's ``dynamodb.gsi_lag`` (not an operation) is how long after its write an
item shows in a GSI (``harness.aws.fidelity.gsilag``): the AWS profiles have one,
``local`` has none. In a scenario a distribution is written ``"lognormal(50ms, 200ms)"``
(median, p99) or ``"fixed(20ms)"`` (``parse_dist``).
"""

from __future__ import annotations

import math
import random
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.core.durations import parse_duration
from harness.core.errors import HarnessError

Z99 = 2.3263478740408408
GSI_LAG = "gsi_lag"  # a profile's pseudo-operation under "dynamodb": when an item shows in a GSI


@dataclass(frozen=True)
class Dist:
    median_ms: float
    p99_ms: float | None = None  # None: fixed at the median

    def sample_ms(self, rng: random.Random) -> float:
        if not self.p99_ms or self.p99_ms <= self.median_ms:
            return self.median_ms
        sigma = math.log(self.p99_ms / self.median_ms) / Z99
        return rng.lognormvariate(math.log(self.median_ms), sigma)

    @property
    def mean_ms(self) -> float:
        if not self.p99_ms or self.p99_ms <= self.median_ms:
            return self.median_ms
        sigma = math.log(self.p99_ms / self.median_ms) / Z99
        return self.median_ms * math.exp(sigma * sigma / 2)

    def __str__(self) -> str:
        """As a scenario writes it (``parse_dist``)."""
        if not self.p99_ms or self.p99_ms <= self.median_ms:
            return f"fixed({self.median_ms:g}ms)"
        return f"lognormal({self.median_ms:g}ms, {self.p99_ms:g}ms)"

    def quantile_ms(self, z: float) -> float:
        """The value ``z`` standard deviations up the distribution (3.09: its p99.9)."""
        if not self.p99_ms or self.p99_ms <= self.median_ms:
            return self.median_ms
        return self.median_ms * (self.p99_ms / self.median_ms) ** (z / Z99)


_DIST = re.compile(r"^\s*(lognormal|fixed)\s*\(\s*([^,()]+?)\s*(?:,\s*([^,()]+?)\s*)?\)\s*$")
DIST_SYNTAX = '"lognormal(<median>, <p99>)" like "lognormal(50ms, 200ms)" or "fixed(<duration>)"'


def parse_dist(text: str, *, off: bool = False) -> Dist | None:
    """A distribution written in a scenario: ``lognormal(50ms, 200ms)`` (median, p99) or ``fixed(20ms)``;
    with ``off``, also ``"off"`` (None). Raises ValueError with a one-line reason.
    """
    if off and text == "off":
        return None
    m = _DIST.match(text) if isinstance(text, str) else None
    if m is None or (m.group(1) == "fixed") != (m.group(3) is None):
        either = '"off", ' if off else ""
        raise ValueError(f"must be {either}{DIST_SYNTAX}, got {text!r}")
    try:
        values = [parse_duration(g) * 1000 for g in m.groups()[1:] if g is not None]
    except ValueError as e:
        raise ValueError(f"must be {DIST_SYNTAX}: {e}") from None
    if len(values) == 1:
        return Dist(values[0])
    median, p99 = values
    if median <= 0 or p99 < median:
        raise ValueError(f"needs 0 < median <= p99, got {text!r}")
    return Dist(median, p99)


Profile = dict[str, dict[str, Dist]]  # service -> operation (or "*") -> distribution

_DDB: dict[str, Dist] = {
    "PutItem": Dist(3.2, 12), "GetItem": Dist(2.8, 10), "UpdateItem": Dist(3.5, 13), "DeleteItem": Dist(3.3, 12),
    "Query": Dist(5.0, 25), "Scan": Dist(20.0, 120), "BatchWriteItem": Dist(8.0, 35), "BatchGetItem": Dist(6.0, 25),
    "TransactWriteItems": Dist(12.0, 45), "*": Dist(4.0, 15),
    # AWS: a GSI is updated asynchronously, "within a fraction of a second" normally; the figures are assumed
    GSI_LAG: Dist(50.0, 200.0),
}
_S3: dict[str, Dist] = {
    "PutObject": Dist(280, 700), "GetObject": Dist(60, 250), "HeadObject": Dist(40, 150),
    "DeleteObject": Dist(80, 250), "DeleteObjects": Dist(120, 400), "ListObjectsV2": Dist(70, 250),
    "*": Dist(80, 300),
}
PROFILES: dict[str, Profile] = {
    "local": {}, "aws-dynamodb": {"dynamodb": _DDB}, "aws-s3-vpce": {"s3": _S3}, "aws": {"dynamodb": _DDB, "s3": _S3},
}


def load_profile(name_or_path: str) -> Profile:
    if name_or_path in PROFILES:
        return PROFILES[name_or_path]
    path = Path(name_or_path)
    if not path.is_file():
        raise HarnessError(f"unknown latency profile {name_or_path!r}: choose one of {', '.join(PROFILES)} "
                           "or give a .toml file")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{path}: malformed TOML: {e}") from None
    out: Profile = {}
    for service, ops in data.items():
        if service not in ("dynamodb", "s3") or not isinstance(ops, dict):
            raise HarnessError(f"{path}: [{service}] must be [dynamodb.<Operation>] or [s3.<Operation>]")
        for op, spec in ops.items():
            try:
                if "fixed_ms" in spec:
                    d = Dist(float(spec["fixed_ms"]))
                else:
                    d = Dist(float(spec["median_ms"]), float(spec["p99_ms"]))
            except (KeyError, TypeError, ValueError):
                raise HarnessError(f"{path}: {service}.{op} needs fixed_ms, or median_ms and p99_ms") from None
            if d.median_ms < 0:
                raise HarnessError(f"{path}: {service}.{op} latency must not be negative")
            out.setdefault(service, {})[op] = d
    return out


def gsi_lag_of(profile: Profile) -> Dist | None:
    """The profile's GSI lag (None: items show in a GSI at once)."""
    return profile.get("dynamodb", {}).get(GSI_LAG)


def pick(profile: Profile, service: str, op: str) -> Dist | None:
    ops = profile.get(service)
    if not ops:
        return None
    return ops.get(op) or ops.get("*")
