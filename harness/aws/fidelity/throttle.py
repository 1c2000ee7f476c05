"""Who gets throttled: DynamoDB partitions and tables, S3 prefixes.

DynamoDB: a table's capacity (provisioned, or on-demand warm throughput with an
optional maximum) is split into partitions of about 3,000 read / 1,000 write
units a second; a partition key value hashes to one of them, and a GSI has
partitions of its own keyed by its partition key. A write also lands in every
GSI it carries keys for, and a GSI partition that cannot take it throttles the
base-table write (``IndexWriteKeyRangeThroughputExceeded``), which is how the
legacy single-value GSI key (``gsi1pk = "FILE"``) becomes a hot partition.
S3: 3,500 writes and 5,500 reads a second per prefix, answered with ``503 SlowDown``.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

from harness.aws.capacity import Charge
from harness.aws.fidelity.buckets import TokenBucket
from harness.core.clock import Clock


@dataclass(frozen=True)
class DynamoCapacity:
    mode: str = "on-demand"  # "on-demand" | "provisioned"
    read: float = 12_000.0  # provisioned RCU, or on-demand warm read throughput
    write: float = 4_000.0
    max_read: float = 0.0  # on-demand maximum (0: none)
    max_write: float = 0.0
    partition_read: float = 3_000.0
    partition_write: float = 1_000.0
    burst_s: float = 300.0
    scale: float = 1.0  # multiplies every limit: scaled-down tables for short local runs

    def table_limit(self, kind: str) -> float | None:
        """Table-wide units/s, or None where DynamoDB would scale instead (on-demand without a maximum)."""
        base = self.read if kind == "read" else self.write
        cap = self.max_read if kind == "read" else self.max_write
        if self.mode == "provisioned":
            return base * self.scale
        return cap * self.scale if cap else None

    def partitions(self) -> int:
        return max(1, math.ceil(self.read / self.partition_read), math.ceil(self.write / self.partition_write))

    def partition_limit(self, kind: str) -> float:
        return (self.partition_read if kind == "read" else self.partition_write) * self.scale


def partition_of(key: str, partitions: int) -> int:
    """The partition a partition key value hashes to, of ``partitions``: the model's one rule (its throttle and
    the report's capacity bound, ``harness/report/forecast/capacity.py``, both read it)."""
    return zlib.crc32(key.encode()) % partitions


@dataclass(frozen=True)
class Throttle:
    code: str  # ProvisionedThroughputExceededException | ThrottlingException | SlowDown
    reason: str  # e.g. TableWriteKeyRangeThroughputExceeded
    resource: str
    status: int = 400


class DynamoThrottle:
    def __init__(self, capacity: DynamoCapacity, clock: Clock) -> None:
        self.cap, self.clock = capacity, clock
        self._partitions = capacity.partitions()
        self._buckets: dict[tuple, TokenBucket] = {}
        self.throttles: dict[str, int] = {}

    def _bucket(self, key: tuple, rate: float) -> TokenBucket:
        b = self._buckets.get(key)
        if b is None:
            b = self._buckets[key] = TokenBucket(rate, self.clock, self.cap.burst_s)
        return b

    def _targets(self, table: str, index: str | None, key: str, kind: str) -> list[tuple[TokenBucket, str]]:
        """The buckets a charge spends from, each with what empties it ("partition" or "table")."""
        out = []
        if key:
            part = partition_of(key, self._partitions)
            out.append((self._bucket((table, index, kind, part), self.cap.partition_limit(kind)), "partition"))
        limit = self.cap.table_limit(kind)
        if limit is not None:
            out.append((self._bucket((table, index, kind, "table"), limit), "table"))
        return out

    def _throttle(self, table: str, index: str | None, kind: str, level: str) -> Throttle:
        """Described only when one happens: the error code and ThrottlingReasons DynamoDB would send."""
        side = "Read" if kind == "read" else "Write"
        where = "Index" if index else "Table"
        resource = f"{table}/index/{index}" if index else table
        if level == "partition":
            t = Throttle("ProvisionedThroughputExceededException", f"{where}{side}KeyRangeThroughputExceeded", resource)
        elif self.cap.mode == "provisioned":
            t = Throttle("ProvisionedThroughputExceededException", f"{where}{side}ProvisionedThroughputExceeded",
                         resource)
        else:
            t = Throttle("ThrottlingException", f"{where}{side}MaxOnDemandThroughputExceeded", resource)
        self.throttles[t.reason] = self.throttles.get(t.reason, 0) + 1
        return t

    @staticmethod
    def _grouped(charges: list[Charge]) -> dict[tuple[str, str | None, str, str], float]:
        out: dict[tuple[str, str | None, str, str], float] = {}
        for c in charges:
            k = (c.table, c.index, c.key, c.kind)
            out[k] = out.get(k, 0.0) + c.units
        return out

    def admit_writes(self, charges: list[Charge]) -> Throttle | None:
        """All or nothing: a write that does not fit every bucket it needs is throttled and spends nothing."""
        need: dict[int, list] = {}
        for (table, index, key, kind), units in self._grouped(charges).items():
            for bucket, level in self._targets(table, index, key, kind):
                entry = need.get(id(bucket))
                if entry is None:
                    need[id(bucket)] = [bucket, (table, index, kind, level), units]
                else:
                    entry[2] += units
        for bucket, where, n in need.values():
            if not bucket.fits(n):
                return self._throttle(*where)
        for bucket, _, n in need.values():
            bucket.charge(n)
        return None

    def admit_read(self, probe: Charge) -> Throttle | None:
        """A read is refused while any bucket it draws on is in debt from earlier reads."""
        for bucket, level in self._targets(probe.table, probe.index, probe.key, probe.kind):
            if bucket.level() < 0:
                return self._throttle(probe.table, probe.index, probe.kind, level)
        return None

    def charge_reads(self, charges: list[Charge]) -> None:
        for (table, index, key, kind), units in self._grouped(charges).items():
            for bucket, _ in self._targets(table, index, key, kind):
                bucket.charge(units)


@dataclass(frozen=True)
class S3Rates:
    writes: float = 3_500.0
    reads: float = 5_500.0
    scale: float = 1.0


S3_WRITE_OPS = {"PutObject", "DeleteObject", "DeleteObjects", "CopyObject", "CompleteMultipartUpload",
                "UploadPart", "CreateMultipartUpload", "PutBucketTagging"}


SWEEP_AT = 4_096  # S3 buckets kept before the full ones are dropped (then twice as many as were left)


class S3Throttle:
    """One bucket per prefix and kind, as S3 scales per prefix.

    A prefix bucket holds one second's worth at most, which is also what a
    new one starts with: a full bucket is a new bucket. So full ones are
    dropped once many have piled up, which keeps memory flat while a run
    writes under ever new prefixes (every disposable model has its own) and
    changes nothing a request sees.
    """

    def __init__(self, rates: S3Rates, clock: Clock) -> None:
        self.rates, self.clock = rates, clock
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._sweep_at = SWEEP_AT
        self.throttles = 0

    def _sweep(self) -> None:
        self._buckets = {k: b for k, b in self._buckets.items() if b.level() < b.rate}
        self._sweep_at = max(SWEEP_AT, 2 * len(self._buckets))

    def admit(self, op: str, prefix: str) -> Throttle | None:
        kind = "write" if op in S3_WRITE_OPS else "read"
        rate = (self.rates.writes if kind == "write" else self.rates.reads) * self.rates.scale
        b = self._buckets.get((kind, prefix))
        if b is None:
            if len(self._buckets) >= self._sweep_at:
                self._sweep()
            b = self._buckets[(kind, prefix)] = TokenBucket(rate, self.clock, burst_s=1.0)
        if b.take(1.0):
            return None
        self.throttles += 1
        return Throttle("SlowDown", "Please reduce your request rate.", prefix, status=503)
