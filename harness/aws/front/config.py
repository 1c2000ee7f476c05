"""The front's configuration as JSON: the fidelity model's settings and the upstreams, handed to its process."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.aws.fidelity.faults import FaultRates
from harness.aws.fidelity.model import FidelityConfig
from harness.aws.fidelity.throttle import DynamoCapacity, S3Rates


def fidelity_from_dict(d: dict[str, Any]) -> FidelityConfig:
    """``asdict(FidelityConfig)``'s inverse."""
    return FidelityConfig(
        enabled=bool(d.get("enabled", True)),
        dynamodb=DynamoCapacity(**d["dynamodb"]) if d.get("dynamodb") else None,
        s3=S3Rates(**d["s3"]) if d.get("s3") else None,
        latency=d.get("latency") or "local",
        faults={op: FaultRates(**r) for op, r in (d.get("faults") or {}).items()},
        timeout_after_s=float(d.get("timeout_after_s", 1.0)),
        probe_every_s=float(d.get("probe_every_s", 0.0)),
        gsi_lag=d.get("gsi_lag") or "",
        spike_s=float(d.get("spike_s", 1.0)),
    )


@dataclass(frozen=True)
class FrontConfig:
    fidelity: FidelityConfig
    upstreams: dict[str, str]  # service -> http:// URL
    control_port: int = 0
    seed: int | None = None  # the model's random draws (None: fresh)
    users: tuple[str, ...] = field(default=())  # seats opened at start

    def to_json(self) -> str:
        return json.dumps({"fidelity": asdict(self.fidelity), "upstreams": self.upstreams,
                           "control_port": self.control_port, "seed": self.seed, "users": list(self.users)})

    @classmethod
    def from_json(cls, text: str) -> FrontConfig:
        d = json.loads(text)
        return cls(fidelity_from_dict(d["fidelity"]), dict(d["upstreams"]), int(d.get("control_port") or 0),
                   d.get("seed"), tuple(d.get("users") or ()))

    @classmethod
    def read(cls, path: str | Path) -> FrontConfig:
        return cls.from_json(Path(path).read_text())
