"""The requests made under each lock, per backend, profile and run kind, are the ones docs/swamp-today.md tables
beside swamp's: recorded from the harness's code (tests/support/lock_sequences.py), so a change to what a lock covers
fails here until the table says so (``python -m tests.support.lock_sequences`` prints the columns to paste)."""

from __future__ import annotations

import re

import pytest

from tests.support.docs_text import read
from tests.support.lock_sequences import ROWS, compress, record

pytestmark = pytest.mark.xdist_group("lock-sequences")
PAGE = "docs/swamp-today.md"
HEADER = "| backend | profile | run | lock | take (free) | held | give back |"


def documented() -> dict[tuple[str, str, str, str], tuple[str, str, str]]:
    """The page's table: (backend, profile, run, lock) -> (take, held, give back), backticks dropped."""
    lines = read(PAGE).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER))
    out = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        out[tuple(cells[:4])] = tuple(cells[4:7])
    return out


@pytest.fixture(scope="module")
def recorded() -> dict[tuple[str, str, str, str], tuple[str, str, str]]:
    return {(b, p, r, lock): cols for (b, p, r) in ROWS for lock, cols in record(b, p, r).items()}


def test_the_page_tables_every_lock_of_every_row_and_nothing_else(recorded):
    assert set(documented()) == set(recorded)


@pytest.mark.parametrize("row", sorted({(b, p, r) for (b, p, r) in ROWS}))
def test_each_locks_requests_are_what_the_page_says(recorded, row):
    page = documented()
    for key in [k for k in recorded if k[:3] == row]:
        assert page[key] == recorded[key], f"{key}: the page says {page[key]}, the code sends {recorded[key]}"


def test_swamps_own_dynamodb_commit_writes_file_by_file_and_the_watermark_last(recorded):
    """swamp's applyDiff: per file its chunks, its registry ADD (a file of the first wave each), its entry;
    then STATE, then SEQ. Nothing of the harness's own (no lock-item sequence, no harness registry)."""
    held = recorded[("dynamodb", "two-phase", "swamp's own", "global lock")][1]
    assert re.fullmatch(r"commit: \d+ × \(BatchWriteItem chunks, UpdateItem registry, PutItem entry\), "
                        r"BatchWriteItem deletes \(chunks\), PutItem STATE, UpdateItem SEQ", held), held
    assert "harness registry" not in held and "UpdateItem lock" not in held
    fenced = recorded[("dynamodb", "two-phase", "fenced", "global lock")][1]
    assert "UpdateItem lock" in fenced and "harness registry" in fenced  # fencing's seal and registry


def test_swamps_own_locks_cost_swamps_requests(recorded):
    s3 = recorded[("s3", "two-phase", "swamp's own", "global lock")]
    assert s3[0] == "PutObject lock" and s3[2] == "GetObject lock, DeleteObject lock"  # If-None-Match; GET + DELETE
    ddb = recorded[("dynamodb", "two-phase", "swamp's own", "global lock")]
    assert ddb[0] == "PutItem lock" and ddb[2] == "DeleteItem lock"
    assert recorded[("s3", "two-phase", "fenced", "global lock")][2] == "PutObject lock"  # the harness's CAS


def test_repeats_are_written_once_with_their_count():
    assert compress(["a", "b", "c", "a", "b", "c", "d"]) == "2 × (a, b, c), d"
    assert compress(["a", "a", "a", "b"]) == "3 × a, b"
    assert compress([]) == "-"
