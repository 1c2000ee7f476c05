"""File-system faults and a run directory's owner (issue 54, items 2, 3 and 7).

- an unwritable run directory (a read-only mount, an immutable directory) is one line and exit 2, before
  anything starts;
- two runs claiming one directory at the same instant: one claims it, the other is refused with one line and
  writes nothing (20 races of two processes each, through the seam `harness run` uses);
- a refused start takes back what it made, keeps what its line names, and a rerun may take that over;
- `harness report` on a run with truncated shards reports the intact rows and names what it skipped, and
  `harness runs` recommends `harness report` only for a run it can report;
- an unreachable endpoint is reported as the variable that named it; every duration option says a negative
  value must be positive.

How the unwritable directory is made (root ignores chmod): a read-only tmpfs mounted here when the machine
allows it, else `chattr +i` (an immutable directory), else (not root) chmod 0555; skipped when none works.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cli.main import main
from harness.config import endpoints as ep
from harness.config.plan import Connection
from harness.config.preflight import check_reachable
from harness.core.errors import HarnessError
from harness.supervisor.run import _prepare_run_dir
from tests.support.synthetic import make_run

ROOT = Path(__file__).resolve().parents[3]
MARKER = ".harness-run"  # harness/record/claim.py's (named here too: the race test runs on the code before it)
RACES = 20


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HARNESS_"))}
    env.update(AWS_EC2_METADATA_DISABLED="true", PYTHONPATH=str(ROOT), **extra)
    return env


def _harness(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=_env(**env))


# ---- an unwritable run directory -----------------------------------------------------------------------------

@contextlib.contextmanager
def _read_only_mount(d: Path) -> Iterator[str]:
    d.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(d)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        yield "Read-only file system"
    finally:
        subprocess.run(["umount", str(d)], capture_output=True)


@contextlib.contextmanager
def _immutable(d: Path) -> Iterator[str]:
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        try:
            yield "Permission denied"
        finally:
            d.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        yield "Operation not permitted"
    finally:
        subprocess.run(["chattr", "-i", str(d)], capture_output=True)


@pytest.mark.parametrize("make", [_read_only_mount, _immutable], ids=["read-only-mount", "immutable-dir"])
@pytest.mark.parametrize("inside", [False, True], ids=["the-dir-itself", "a-dir-inside"])
def test_an_unwritable_run_directory_is_one_line_exit_2(tmp_path, make, inside):
    d = tmp_path / "ro"
    with make(d) as reason:
        run_dir = d / "run" if inside else d
        p = _harness("run", "namespaced", "--duration", "5s", "--no-report", "--run-dir", str(run_dir),
                     cwd=tmp_path)
        assert p.returncode == 2, p.stderr
        assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
        assert p.stderr == f"harness: cannot write the run directory {run_dir}: {reason}: choose another --run-dir\n"
        assert not run_dir.exists() or not any(run_dir.iterdir())


def test_a_write_refused_by_the_file_system_elsewhere_is_one_line(tmp_path, capsys, monkeypatch):
    """The backstop: a write the file system refuses past the claim (a report's --out on a read-only disk)."""
    import errno

    import harness.products.runs.command as runs

    def refused(args):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "out" / "index.html"))

    monkeypatch.setattr(runs, "cmd_runs", refused)
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"harness: cannot write {tmp_path / 'out' / 'index.html'}: "
                                       "Read-only file system\n")


# ---- two runs, one directory ---------------------------------------------------------------------------------

def _claim(path: str, barrier, results) -> None:
    barrier.wait()
    try:
        _prepare_run_dir(Path(path))
    except HarnessError as e:
        results.put((os.getpid(), "refused", str(e)))
        return
    (Path(path) / f"mine-{os.getpid()}").write_text("the winner's")  # what the winner writes after its claim
    results.put((os.getpid(), "claimed", ""))


def test_two_runs_claiming_one_directory_at_the_same_instant_one_wins(tmp_path):
    """20 times: two processes released by one barrier claim one directory; one claims it, the other is refused
    with one line and touches nothing. (Before: both passed the emptiness check and both went on.)"""
    ctx = multiprocessing.get_context("fork")
    for i in range(RACES):
        d = tmp_path / f"race-{i:02d}" / "run"
        barrier, results = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_claim, args=(str(d), barrier, results)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        got = sorted((results.get(timeout=5) for _ in procs), key=lambda r: r[1])
        assert [r[1] for r in got] == ["claimed", "refused"], (i, got)
        winner, (_, _, line) = got[0][0], got[1]
        assert "\n" not in line and line.endswith(": choose another --run-dir"), line
        assert "in use by another run" in line or "not empty" in line, line
        assert sorted(p.name for p in d.iterdir()) == sorted([MARKER, f"mine-{winner}"])  # the loser wrote nothing
        assert json.loads((d / MARKER).read_text())["pid"] == winner


def test_a_claimed_directory_refuses_another_run_and_names_the_owner(tmp_path):
    from harness.record.claim import RunDirClaim

    claim = RunDirClaim.take(tmp_path / "run", "first")
    with pytest.raises(HarnessError, match=rf"^run directory {tmp_path / 'run'} is in use by another run "
                                           rf"\(pid {os.getpid()} on .*, since .*\): choose another --run-dir$"):
        RunDirClaim.take(tmp_path / "run", "second")
    claim.release()
    assert not (tmp_path / "run" / MARKER).exists()


def test_a_refused_start_takes_back_what_it_made(tmp_path):
    from harness.record.claim import RunDirClaim

    made = RunDirClaim.take(tmp_path / "new")  # the run made the directory: it goes
    (made.path / "plan.json").write_text("{}")
    (made.path / "dynalite-db").mkdir()
    made.refused("cannot reach dynamodb at http://127.0.0.1:9: is the server running? check AWS_ENDPOINT_URL")
    assert not made.path.exists()
    (tmp_path / "given").mkdir()
    given = RunDirClaim.take(tmp_path / "given")  # the user made it: it stays, empty, for a rerun
    (given.path / "plan.json").write_text("{}")
    given.refused("the run directory has 1 MiB free")
    assert given.path.is_dir() and not any(given.path.iterdir())


def test_a_refused_start_keeps_the_log_it_names_and_a_rerun_takes_the_directory_over(tmp_path):
    from harness.record.claim import RunDirClaim

    first = RunDirClaim.take(tmp_path / "run")
    for name in ("plan.json", "dynalite.log", "processes.csv"):
        (first.path / name).write_text(name)
    first.refused("dynalite did not start; see dynalite.log in the run directory")
    assert sorted(p.name for p in first.path.iterdir()) == [MARKER, "dynalite.log"]
    second = RunDirClaim.take(tmp_path / "run")  # a rerun: the refused start's leftovers go, the claim is new
    assert sorted(p.name for p in second.path.iterdir()) == [MARKER]
    assert json.loads((second.path / MARKER).read_text())["state"] == "running"
    second.release()


def test_a_refused_start_beside_files_of_the_user_is_not_taken_over(tmp_path):
    from harness.record.claim import RunDirClaim

    first = RunDirClaim.take(tmp_path / "run")
    (first.path / "dynalite.log").write_text("x")
    first.refused("see dynalite.log")
    (first.path / "notes.txt").write_text("the user's")
    with pytest.raises(HarnessError, match="holds a refused start's files and more"):
        RunDirClaim.take(tmp_path / "run")
    assert (first.path / "notes.txt").read_text() == "the user's" and (first.path / "dynalite.log").exists()


# ---- damaged shards ------------------------------------------------------------------------------------------

def _run_with_shards(path: Path) -> tuple[Path, list[int]]:
    run = make_run(path, workers=2, duration_s=120, rate=lambda t: np.full_like(t, 1.0), shard_rows=60)
    shards = sorted((run / "iterations").glob("*.parquet"))
    return run, [pq.ParquetFile(p).metadata.num_rows for p in shards]


def _truncate(p: Path) -> None:
    b = p.read_bytes()
    p.write_bytes(b[: len(b) // 2])


def test_a_report_of_a_run_with_a_truncated_shard_reports_the_intact_rows_and_names_it(tmp_path, capsys):
    run, counts = _run_with_shards(tmp_path / "runs" / "damaged")
    assert len(counts) >= 3
    damaged = sorted((run / "iterations").glob("*.parquet"))[1]
    _truncate(damaged)
    assert main(["report", str(run)]) == 0  # before: ArrowInvalid, a traceback, no report
    err = capsys.readouterr().err
    assert (f"harness: note: {run}: skipped 1 damaged shard: iterations/{damaged.name} (Parquet magic bytes not "
            "found in footer") in err
    summary = json.loads((run / "report" / "summary.json").read_text())["runs"][0]
    assert summary["findings"]["rows"] == sum(counts) - counts[1]
    assert summary["skipped_shards"][0].startswith(f"iterations/{damaged.name} (")
    page = (run / "report" / "index.html").read_text()
    assert f"1 damaged shard skipped (their rows are not in this report): iterations/{damaged.name}" in page


def test_a_truncated_spans_shard_is_skipped_and_named(tmp_path):
    """A command-driver run's spans table: the same fault, the same answer (the counts of the intact shards)."""
    from harness.record.reader import skipped_shards
    from harness.record.spans import SCHEMA, SPANS_DIR, read_spans

    d = tmp_path / SPANS_DIR
    d.mkdir()
    for i in range(3):
        pq.write_table(pa.Table.from_pylist([{}] * (i + 1), schema=SCHEMA), d / f"part-{i}.parquet")
    _truncate(d / "part-1.parquet")
    t = read_spans(tmp_path, ["late", "iteration"])
    assert len(t) == 1 + 3
    assert [x.split(" (")[0] for x in skipped_shards(t)] == [f"{SPANS_DIR}/part-1.parquet"]


def test_harness_runs_recommends_the_report_only_when_it_works(tmp_path, capsys):
    runs = tmp_path / "runs"
    one, _ = _run_with_shards(runs / "one-damaged")
    _truncate(sorted((one / "iterations").glob("*.parquet"))[0])
    every, _ = _run_with_shards(runs / "all-damaged")
    for p in (every / "iterations").glob("*.parquet"):
        _truncate(p)
    assert main(["runs", "--runs-dir", str(runs), "--json"]) == 0
    verdict = {Path(e["path"]).name: e["verdict"] for e in map(json.loads, capsys.readouterr().out.splitlines())}
    assert verdict["one-damaged"] == f"no report: `harness report {one}`"
    assert verdict["all-damaged"] == "no report: no intact iteration rows to report"
    assert main(["report", str(one)]) == 0  # what it recommends works
    assert main(["report", str(every)]) == 2  # and what it does not recommend is one line, not a traceback
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"harness: {every} has no intact iteration rows")


# ---- errors that name the culprit ----------------------------------------------------------------------------

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("variable,service", [("AWS_ENDPOINT_URL_DYNAMODB", "dynamodb"),
                                              ("AWS_ENDPOINT_URL_S3", "s3"), ("AWS_ENDPOINT_URL", "dynamodb")])
def test_an_unreachable_endpoint_names_the_variable_that_named_it(variable, service):
    url = f"http://127.0.0.1:{_closed_port()}"
    found = ep.with_credentials(ep.resolve({variable: url}, aws=False, needed=[service]), False)
    connection = Connection(found["dynamodb"], found["s3"], "us-east-1", "", found["cloudwatch"])
    with pytest.raises(HarnessError) as e:
        check_reachable(connection, service)
    assert str(e.value) == f"cannot reach {service} at {url}: is the server running? check {variable}"


@pytest.mark.parametrize("argv,line", [
    (["run", "namespaced", "--duration", "-5s"], "harness run: argument --duration: must be positive, got '-5s'"),
    (["run", "namespaced", "--duration=-5s"], "harness run: argument --duration: must be positive, got '-5s'"),
    (["run", "namespaced", "--duration", "0"], "harness run: argument --duration: must be positive, got '0'"),
    (["run", "namespaced", "--max-p99-wait", "-1s"], "harness run: argument --max-p99-wait: must be positive"),
    (["run", "namespaced", "--master", "--expect-workers-max-wait", "-2m"],
     "harness run: argument --expect-workers-max-wait: must be positive, got '-2m'"),
    (["run", "namespaced", "--cloudwatch-wait", "-1s"],
     "harness run: argument --cloudwatch-wait: must be 0 or more, got '-1s'"),
    (["sweep", "namespaced", "--duration", "-5s"], "harness sweep: argument --duration: must be positive"),
])
def test_a_negative_duration_says_it_must_be_positive(capsys, argv, line):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith(line), err
    assert "expected one argument" not in err


def test_a_zero_cloudwatch_wait_still_skips_it():
    from harness.cli.main import build_parser

    args = build_parser().parse_args(["run", "namespaced", "--cloudwatch-wait", "0"])
    assert args.cloudwatch_wait == 0.0

