"""The harness's side of the front's control port: a user's seat, its counts, the keys' rows.

Plain ``urllib`` (cooperative under Locust's patched sockets). ``of_run`` finds the run's front from
``RUN_DIR/front.json`` (None when the run has none).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from harness.aws.front.counts import WireCounts

FRONT_JSON = "front.json"
TIMEOUT_S = 10.0


class FrontClient:
    def __init__(self, control_url: str) -> None:
        self.url = control_url.rstrip("/")

    @classmethod
    def of_run(cls, run_dir: str | Path) -> FrontClient | None:
        path = Path(run_dir) / FRONT_JSON
        try:
            return cls(json.loads(path.read_text())["control"])
        except (OSError, ValueError, KeyError):
            return None

    def _call(self, path: str, method: str = "GET") -> Any:
        req = urllib.request.Request(self.url + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
            return json.loads(r.read())

    def seat(self, user: str) -> str:
        """The URL ``user``'s requests go to (both services)."""
        port = self._call(f"/seat?user={urllib.request.quote(user)}", "POST")["port"]
        return f"http://127.0.0.1:{port}"

    def counts(self, user: str) -> WireCounts:
        return WireCounts.from_dict(self._call(f"/counts?user={urllib.request.quote(user)}"))

    def all_counts(self) -> dict[str, WireCounts]:
        return {u: WireCounts.from_dict(d) for u, d in self._call("/counts").items()}

    def keys(self) -> list[dict[str, Any]]:
        """The per-key rows since the last call (``KeyLoad.drain``: the rows of ``keys.csv``)."""
        return self._call("/keys")

    def model(self) -> dict[str, Any]:
        return self._call("/model")
