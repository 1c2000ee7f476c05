"""Helpers for the web UI's end-to-end tests: a real `harness run --web` on a free port, driven over HTTP.

Every wait is bounded (the machine may be a busy 2-core box shared with other test runs).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest

from tests.e2e.conftest import ROOT, clean_env

CHROMIUM = "/usr/bin/chromium"
# Headless Debian Chromium as root, with nothing reaching out to the (closed) network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, check: Callable[[], Any], timeout: float, every: float = 0.5) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as e:  # noqa: BLE001 - the server may not be up yet
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last: {last!r})")


class WebRun:
    """`harness run SCENARIO --web` as a child process (its own process group), with its HTTP API."""

    def __init__(self, run_dir: Path, *args: str, scenario: str = "namespaced") -> None:
        self.run_dir = run_dir
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = run_dir.parent / f"{run_dir.name}-harness.out"
        self.out = self.log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "run", scenario, "--web", "--web-port", str(self.port),
             "--run-dir", str(run_dir), *args],
            stdout=self.out, stderr=subprocess.STDOUT, env=clean_env(), cwd=ROOT, start_new_session=True)
        self.pids: set[tuple[int, float]] = set()

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=15) as r:
            body = r.read()
        return json.loads(body) if path != "/" else body

    def post(self, path: str, form: dict | None = None) -> Any:
        data = urllib.parse.urlencode(form or {}).encode()
        with urllib.request.urlopen(urllib.request.Request(self.base + path, data=data), timeout=90) as r:
            return json.loads(r.read())

    def wait_ready(self, workers: int = 0, timeout: float = 90) -> None:
        wait_for("the web UI", lambda: self.proc.poll() is None and self.get("/"), timeout)
        if workers:
            wait_for(f"{workers} workers", lambda: self.get("/stats/requests").get("worker_count", 0) >= workers,
                     timeout)
        self.remember_processes()

    def remember_processes(self) -> None:
        """Every process under `harness run` (Locust, its workers, moto), by pid and start time."""
        for p in [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(recursive=True)]:
            try:
                self.pids.add((p.pid, p.create_time()))
            except psutil.NoSuchProcess:
                pass

    def alive(self) -> list[int]:
        """The remembered processes still running (same pid and start time: not a reused pid)."""
        out = []
        for pid, created in self.pids:
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(pid)
            except psutil.NoSuchProcess:
                continue
        return out

    def status(self) -> dict:
        return self.get("/harness/status")

    def test_entry(self, number: int) -> dict | None:
        return next((t for t in self.status()["tests"] if t["number"] == number), None)

    def locust_iterations(self) -> int:
        """Locust's own count of iterations in the current (or last) test, once it stopped moving."""
        def count() -> int:
            stats = self.get("/stats/requests")["stats"]
            return next((s["num_requests"] for s in stats if s["name"].endswith("iteration")), 0)

        last = [-1]

        def settled() -> int | None:
            n = count()
            same = n == last[0]
            last[0] = n
            return n if same and n > 0 else None

        return wait_for("Locust's iteration count to settle", settled, 30, every=3.5)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 120) -> int:
        self.remember_processes()
        os.kill(self.proc.pid, sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self.out.close()

    def kill(self) -> None:
        """Test cleanup: whatever is left of the run's process tree."""
        for pid in self.alive():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not self.out.closed:
            self.out.close()

    def output(self) -> str:
        return self.log.read_text()


def rows_of(test_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(test_dir / "iterations")


def assert_contiguous(rows: pd.DataFrame) -> dict[str, int]:
    """Per seed worker (user), iteration numbers 0..n-1 with no gap or repeat; returns n per user."""
    out = {}
    for user, its in rows.groupby("user")["iteration"]:
        got = sorted(its)
        assert got == list(range(len(got))), f"{user}: iterations {got[:5]}... are not 0..{len(got) - 1}"
        out[user] = len(got)
    return out


def require_chromium():
    """Playwright's ``sync_playwright`` for a browser test module, called at its top: in CI a missing Debian
    Chromium is an error (.ci/run installs it), elsewhere the module is skipped with the reason."""
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{CHROMIUM} is missing: .ci/run should have installed Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
    return sync_playwright
