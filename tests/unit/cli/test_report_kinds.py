"""What ``harness report DIR`` builds is told from the directory's record file, without importing the products:
loading a story's module to ask whether a run directory is a story cost every report 0.7 s of CPU."""

from __future__ import annotations

import subprocess
import sys

from harness.cli.report import KINDS

# a product's page builder and what it draws with (the suite's record reader is stdlib only: it may load)
HEAVY = ("harness.products.story.story", "harness.products.sweep.sweep", "harness.report.run.build", "matplotlib")


def test_each_kind_is_told_by_its_record_file(tmp_path):
    run, story, sweep, suite = (tmp_path / n for n in ("run", "story", "sweep", "suite"))
    for d, record in ((run, "run.json"), (story, "story.json"), (sweep, "sweep.json"), (suite, "suite-run.json")):
        d.mkdir()
        (d / record).write_text("{}")
    told = {d.name: [k.name for k in KINDS if k.holds(str(d))] for d in (run, story, sweep, suite)}
    assert told == {"run": ["run"], "story": ["story"], "sweep": ["sweep"], "suite": ["suite"]}


def test_telling_a_run_directory_loads_no_product(tmp_path):
    code = ("import sys\nfrom harness.cli.report import KINDS\n"
            f"assert [k.name for k in KINDS if k.holds({str(tmp_path)!r})] == ['run']\n"
            "print(sorted(m for m in HEAVY if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n" + code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout

