"""The record layer: files never replace each other; sessions list their tests; the worker outbox counts."""

from __future__ import annotations

import json
import time

import pandas as pd

from harness.load.drivers.base import IterationOutcome
from harness.load.process import Outbox
from harness.record import runinfo
from harness.record.generator import GeneratorLog
from harness.record.writer import HistoryWriter, ShardWriter


def _row(user: str, i: int) -> dict:
    t = time.time()
    return {"ts_start": t, "ts_end": t + 0.01, "worker": "local", "user": user, "scenario": "s", "backend": "dynamodb",
            "iteration": i, "model_id": "m", "ok": True, "error_kind": "", "error": "", "total_ms": 10.0}


def test_two_writers_in_one_directory_never_replace_each_others_files(tmp_path):
    # the old names (part-<tag>-<pid>-000001) made a second writer in the same process overwrite the first's
    a, b = ShardWriter(tmp_path, tag="local"), ShardWriter(tmp_path, tag="local")
    a.add([_row("u", 0), _row("u", 1)])
    b.add([_row("v", 0)])
    pa_, pb = a.flush(), b.flush()
    assert pa_ != pb and len(list((tmp_path / "iterations").glob("*.parquet"))) == 2
    assert len(pd.read_parquet(tmp_path / "iterations")) == 3


def test_history_is_one_json_object_a_line(tmp_path):
    h = HistoryWriter(tmp_path, tag="master")
    h.add([{"kind": "lock_grant", "holder": "w0-0", "at": 1.5}, {"kind": "commit", "seq": 3}])
    path = h.flush()
    assert path.parent.name == "history" and path.suffix == ".jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[1] == {"kind": "commit", "seq": 3} and h.written == 2
    assert h.flush() is None  # nothing new: no empty file


def test_generator_csv_has_one_row_per_process_per_sample(tmp_path):
    g = GeneratorLog(tmp_path)
    g.add(10.0, {"master": 1.5, "worker-0": 97.0})
    g.add(13.0, {"master": 1.0, "worker-0": 95.5})
    df = pd.read_csv(tmp_path / "generator.csv")
    assert list(df.columns) == ["ts", "process", "cpu_percent"] and len(df) == 4
    assert df.loc[df["process"] == "worker-0", "cpu_percent"].tolist() == [97.0, 95.5]


def test_test_directories_are_numbered_and_never_shared(tmp_path):
    assert runinfo.new_test_dir(tmp_path) == (1, tmp_path / "tests" / "001")
    (tmp_path / "tests" / "007").mkdir()  # a restarted session keeps counting after the last test
    n, d = runinfo.new_test_dir(tmp_path)
    assert n == 8 and d.is_dir()


def test_a_session_expands_to_its_tests(tmp_path):
    runinfo.write(tmp_path, {"session": True, "tests": []})
    for _ in (1, 2):
        _, d = runinfo.new_test_dir(tmp_path)
        runinfo.write(d, {"status": "finished"})
    plain = tmp_path / "plain"
    plain.mkdir()
    runinfo.write(plain, {"status": "finished"})
    assert runinfo.expand_runs([tmp_path, plain]) == [tmp_path / "tests" / "001", tmp_path / "tests" / "002", plain]


def test_stand_in_from_the_server_object():
    class Server:
        name, version = "dynalite", "3.2.2"

    assert runinfo.stand_in(Server()) == {"name": "dynalite", "version": "3.2.2"}
    assert runinfo.stand_in(object())["name"] == "moto" and runinfo.stand_in(None) is None


def test_the_outbox_says_how_many_rows_it_sent_in_all():
    box = Outbox(process="worker-1")
    assert box.drain(0) is None  # no test open: nothing rides the report
    box.open(3)
    for i in range(3):
        box.add(IterationOutcome(_row("w1-0", i), [], None, events=[{"kind": "commit", "i": i}]))
    first = box.drain(throttles=2)
    box.add(IterationOutcome(_row("w1-0", 3), [], None))
    last = box.close(throttles=5)
    assert (first["test"], len(first["rows"]), len(first["events"]), first["throttles"]) == (3, 3, 3, 2)
    assert last["final"] and last["sent"] == 4 and len(last["rows"]) == 1 and last["iterations"] == {"w1-0": 4}
    assert box.test is None and box.drain(0) is None
