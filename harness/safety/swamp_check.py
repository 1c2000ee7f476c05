"""What swamp said it wrote against what a fresh repository reads: lost, phantom and older data, with no help from
swamp beyond its ``--json`` output.

A ``method run --json`` result names each data artifact it wrote: its name, its version (the last segment of its
``path``) and its ``attributes``; the content swamp stores is those attributes as compact JSON, and the checksum
it keeps is that content's SHA-256 (``metadata.yaml``'s ``checksum``, what ``swamp data versions --json``
lists), so an acknowledgement is (model, data name, version, checksum). At the end a fresh repository pulls
(``swamp datastore sync --pull``) and lists the versions it reads (``swamp data versions MODEL NAME --json``):

- **lost**: an acknowledged version the read does not have with that checksum (missing, or another writer's
  content under its number);
- **phantom**: a version read that no command acknowledged and that was not there before (content whose writer
  said it failed, or never said);
- **older**: the read's latest version is below the newest acknowledged one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Version:
    """One version of one data artifact, as acknowledged or as read."""

    model_id: str
    name: str
    version: int
    checksum: str
    by: str = ""  # who acknowledged it ("" for a read)


def content_checksum(attributes: dict[str, Any]) -> str:
    """swamp's checksum of an artifact's content: SHA-256 of its attributes as compact JSON, in their order."""
    text = json.dumps(attributes, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def acknowledged(result: dict[str, Any], by: str) -> list[Version]:
    """The versions a ``method run --json`` result says were written ([] for a result that is not a success)."""
    if result.get("status") != "succeeded":
        return []
    out = []
    for a in result.get("dataArtifacts") or []:
        version = int(str(a["path"]).rstrip("/").rsplit("/", 1)[-1])
        out.append(Version(result["modelId"], a["name"], version, content_checksum(a.get("attributes") or {}), by))
    return out


def read_versions(listing: dict[str, Any]) -> list[Version]:
    """``swamp data versions MODEL NAME --json``'s versions."""
    return [Version(listing["modelId"], listing["dataName"], int(v["version"]), v["checksum"])
            for v in listing.get("versions") or []]


@dataclass
class Verdict:
    """The comparison's findings, each a list of readable lines."""

    lost: list[str] = field(default_factory=list)
    phantom: list[str] = field(default_factory=list)
    older: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.phantom or self.older)

    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in asdict(self).items()}


def compare(acks: Iterable[Version], read: Iterable[Version], before: Iterable[Version] = ()) -> Verdict:
    """``acks`` (what the commands acknowledged) against ``read`` (what the fresh pull lists); ``before``: what
    was read before the schedule started (not phantom)."""
    acks, read = list(acks), list(read)
    known = {(v.model_id, v.name, v.version, v.checksum) for v in [*acks, *before]}
    got = {(v.model_id, v.name, v.version): v.checksum for v in read}
    out = Verdict()
    for a in acks:
        have = got.get((a.model_id, a.name, a.version))
        if have is None:
            out.lost.append(f"{a.by}'s {a.name} v{a.version} ({a.checksum[:12]}) is not read")
        elif have != a.checksum:
            out.lost.append(f"{a.by}'s {a.name} v{a.version} ({a.checksum[:12]}) reads as other content "
                            f"({have[:12]})")
    for r in read:
        if (r.model_id, r.name, r.version, r.checksum) not in known:
            out.phantom.append(f"{r.name} v{r.version} ({r.checksum[:12]}) was acknowledged by no command")
    latest: dict[tuple[str, str], int] = {}
    for r in read:
        latest[(r.model_id, r.name)] = max(latest.get((r.model_id, r.name), 0), r.version)
    newest: dict[tuple[str, str], Version] = {}
    for a in acks:
        k = (a.model_id, a.name)
        if k not in newest or a.version > newest[k].version:
            newest[k] = a
    for k, a in newest.items():
        if latest.get(k, 0) < a.version:
            out.older.append(f"{a.name}: latest read v{latest.get(k, 0)} < v{a.version} acknowledged by {a.by}")
    return out
