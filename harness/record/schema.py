"""The iteration row: one per iteration of every worker (contract in DESIGN.md)."""

from __future__ import annotations

import pyarrow as pa

STEP_COLUMNS = {  # step name -> column
    "lock": "lock_wait_ms", "pull": "pull_ms", "method": "method_ms", "push": "push_ms",
    "commit_lock": "commit_lock_ms",  # two-phase: the wait for the global lock before the commit
    "commit": "commit_ms", "export": "export_ms", "delete": "delete_ms", "prune": "prune_ms",
    "release": "release_ms",
}
# What the report, the web tab and the notebook call each step's column (one place for all three).
STEP_LABELS = {"lock_wait_ms": "lock wait", "pull_ms": "pull", "method_ms": "method", "push_ms": "push",
               "commit_lock_ms": "commit lock wait", "commit_ms": "commit", "export_ms": "export",
               "delete_ms": "delete", "prune_ms": "prune"}
COUNT_COLUMNS = ("files_pushed", "files_pulled", "items_read", "pull_items_read", "index_entries_written",
                 "catalog_rows", "requests", "lock_attempts", "bytes_sent", "bytes_received")
UNIT_COLUMNS = ("read_units", "write_units")
# Per step: the calls it made and the time spent inside them (summed over concurrent calls), so a step's growth
# splits into "more requests" (the design) and "slower requests" (the backend).
STEP_REQUEST_COLUMNS = {step: (f"{step}_requests", f"{step}_request_ms") for step in STEP_COLUMNS}
QUERY_COLUMNS = ("pull_queries",)  # index reads a pull made (DynamoDB Queries, S3 index objects)
# Items that grow, by the column that carries their size as the iteration saw it (0: not seen): the datastore's
# partition registry (swamp's, and the harness's own when there is no namespace)
SIZE_ITEMS = {"registry_bytes": "PARTITIONS#registry/LIST"}
SIZE_COLUMNS = tuple(SIZE_ITEMS)
# Requests that write, and what of the requests and write units only the harness's fencing made (beyond swamp's
# own: harness/core/work.py's for_fencing); appended last, so rows written before them read as nulls
FENCING_COLUMNS = ("write_requests", "fencing_requests")
FENCING_UNIT_COLUMNS = ("fencing_write_units",)
# push_failed: a command that exited 0 with its push failed (swamp downgrades the push's error to a warning)
ERROR_KINDS = ("lock_timeout", "throttled", "conflict", "fenced", "timeout", "connection", "push_failed", "other")

SCHEMA = pa.schema(
    [
        ("ts_start", pa.timestamp("us", tz="UTC")),
        ("ts_end", pa.timestamp("us", tz="UTC")),
        ("worker", pa.string()),
        ("user", pa.string()),
        ("scenario", pa.string()),
        ("backend", pa.string()),
        ("iteration", pa.int64()),
        ("model_id", pa.string()),
        ("ok", pa.bool_()),
        ("error_kind", pa.string()),
        ("error", pa.string()),
    ]
    + [(c, pa.float64()) for c in STEP_COLUMNS.values()]
    + [("total_ms", pa.float64())]
    + [(c, pa.int64()) for c in COUNT_COLUMNS]
    + [(c, pa.float64()) for c in UNIT_COLUMNS]
    + [col for n, ms in STEP_REQUEST_COLUMNS.values() for col in ((n, pa.int64()), (ms, pa.float64()))]
    + [(c, pa.int64()) for c in QUERY_COLUMNS]
    + [(c, pa.int64()) for c in SIZE_COLUMNS]
    # The open fleet's (harness.load.arrivals): when the sync was meant to start, and its wait from then to its
    # end. A closed fleet's rows carry intended = actual start and wait = total_ms; rows written before these
    # columns read as nulls.
    + [("ts_intended", pa.timestamp("us", tz="UTC")), ("wait_ms", pa.float64())]
    # The command driver's (harness.load.drivers.command): spans joined to the iteration, OTLP bodies its commands
    # posted that could not be read, and its processes' wall time (spawn to exit); null under the model driver
    + [("spans", pa.int64()), ("spans_rejected", pa.int64()), ("command_ms", pa.float64())]
    + [(c, pa.int64()) for c in FENCING_COLUMNS] + [(c, pa.float64()) for c in FENCING_UNIT_COLUMNS]
    # The command driver's own time after its commands exited (waiting for their spans: never the command's),
    # and the datastore's own lock TTL and wait as its spans say (swamp's, which the scenario's [lock] does not
    # set); appended last, so older rows read as nulls
    + [("after_exit_ms", pa.float64()), ("lock_ttl_ms", pa.float64()), ("lock_timeout_ms", pa.float64())]
    # The loopback front's (harness.aws.front): throttled attempts of the iteration's commands, counted on the wire;
    # null without a front
    + [("throttles", pa.int64())]
)
COLUMNS = tuple(SCHEMA.names)
