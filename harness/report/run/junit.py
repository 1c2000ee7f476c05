"""``--junit FILE``: a run's checks as JUnit XML, one test case per check, so CI servers show them natively.

The format is Apache Ant's (``tests/fixtures/junit/JUnit.xsd``, the schema Jenkins, GitLab and GitHub
reporters read; ``test_gates_outputs.py`` validates against it): a ``testsuites`` root with one ``testsuite``
per test of the run (a headless run is one), each check a ``testcase`` whose ``failure`` carries the check's
line as its message; the baseline's items, when ``--baseline`` compared, are cases of their own
(``classname`` ``...baseline``). Pure: cases in, XML text out.
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Case:
    name: str
    classname: str
    passed: bool
    line: str
    kind: str = "check"  # the failure's type: check, threshold, safety, baseline, aborted


@dataclass
class Suite:
    name: str
    cases: list[Case]
    timestamp: datetime
    seconds: float = 0.0
    properties: dict[str, Any] = field(default_factory=dict)
    hostname: str = field(default_factory=socket.gethostname)


def cases_of(scenario: str, checks: list[dict[str, Any]], safety: list[str] | None = None,
             baseline: dict[str, Any] | None = None) -> list[Case]:
    """A test's cases: each check (``CheckResult.as_dict``), the safety check's, the baseline's items."""
    cls = f"harness.{scenario}"
    out = [Case(c["name"], cls, bool(c["passed"]), c["line"],
                "aborted" if c["name"] == "aborted" else "threshold" if c.get("side") else "check") for c in checks]
    if safety is not None:
        out.append(Case("safety", cls, not safety, "; ".join(safety) or "no violation", "safety"))
    for x in (baseline or {}).get("items", []):
        out.append(Case(f"baseline {x['name']}", f"{cls}.baseline", not x["regression"], x["line"], "baseline"))
    return out


def xml(suites: list[Suite]) -> str:
    """The JUnit document: ``testsuites`` with an ``id`` and ``package`` per suite, as Ant's aggregate writes."""
    root = ET.Element("testsuites")
    for i, s in enumerate(suites):
        failures = sum(1 for c in s.cases if not c.passed)
        suite = ET.SubElement(root, "testsuite", {
            "name": s.name, "package": s.name, "id": str(i), "tests": str(len(s.cases)), "failures": str(failures),
            "errors": "0", "skipped": "0", "time": f"{s.seconds:.3f}", "hostname": s.hostname or "localhost",
            "timestamp": s.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")})
        props = ET.SubElement(suite, "properties")
        for k, v in s.properties.items():
            ET.SubElement(props, "property", {"name": str(k), "value": "" if v is None else str(v)})
        for c in s.cases:
            case = ET.SubElement(suite, "testcase", {"name": c.name, "classname": c.classname, "time": "0"})
            if not c.passed:
                failure = ET.SubElement(case, "failure", {"message": c.line, "type": c.kind})
                failure.text = c.line
        ET.SubElement(suite, "system-out").text = "\n".join(f"{'ok' if c.passed else 'FAILED'}: {c.name}: {c.line}"
                                                             for c in s.cases)
        ET.SubElement(suite, "system-err").text = "\n".join(c.line for c in s.cases if not c.passed)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(path: str | Path, suites: list[Suite]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(xml(suites))
    return p
