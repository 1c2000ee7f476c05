"""The wheel holds every file of the package: the modules and the data read at run time (scenarios, suites,
stories, the dynalite server script, the review notebook, the web UI's script, the price table).

Installed from a wheel, the harness finds its data through importlib.resources in site-packages, where no
checkout is; a data file left out of pyproject.toml's package-data is missing there only (``harness scenarios``
printed nothing, ``harness run`` could not start dynalite). So the test builds the wheel as a user's ``pip``
does (``pip wheel --no-deps``: the build backend pyproject.toml names, in pip's isolated build environment; ~10 s,
nothing installed here), in a copy of the sources so the checkout gets no build/ folder, and compares its file
list with the package's files on disk.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def package_files(root: Path = ROOT) -> set[str]:
    """Every file under harness/ as the wheel names it (``harness/...``), bytecode and caches left out."""
    return {p.relative_to(root).as_posix() for p in (root / "harness").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> set[str]:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "harness", src / "harness", ignore=JUNK)
    out = src / "dist"
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q",
                        "-w", str(out)], cwd=src, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    (built,) = out.glob("harness-*.whl")
    with zipfile.ZipFile(built) as z:
        return set(z.namelist())


def test_the_wheel_holds_every_file_of_the_package(wheel):
    missing = sorted(package_files() - wheel)
    assert missing == [], "files of harness/ not in the wheel: add them to [tool.setuptools.package-data]"


def test_the_data_read_at_run_time_is_in_it(wheel):
    """Named one by one, so a data file moved out of the package (where package_files no longer sees it) fails
    here too."""
    data = {n for n in wheel if n.startswith("harness/") and not n.endswith(".py")}
    scenarios = {n for n in data if n.startswith("harness/config/scenarios/") and n.endswith(".toml")}
    assert len(scenarios) >= 20 and "harness/config/scenarios/namespaced.toml" in scenarios
    assert {"harness/products/suite/suites/swamp-datastore.toml",
            "harness/products/story/stories/migrating-bottleneck.toml", "harness/aws/standin/dynalite_server.js",
            "harness/products/notebook/review.ipynb", "harness/load/web/harness.js",
            "harness/report/cost/prices.toml", "harness/config/scenarios/README.md"} <= data


def test_the_entry_points_are_in_it(wheel):
    (entry_points,) = [n for n in wheel if n.endswith(".dist-info/entry_points.txt")]
    assert entry_points.startswith("harness-")
