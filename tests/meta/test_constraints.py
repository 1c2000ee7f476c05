"""constraints.txt pins every dependency, inside pyproject's ranges, and is what this environment runs."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "regenerate it with `bash .ci/update-constraints`"


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, ver = line.partition("==")
            assert ver, f"constraints.txt: {line!r} is not an exact pin (name==version)"
            pins[canonicalize_name(name)] = ver
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [r for extra in project.get("optional-dependencies", {}).values()
                                            for r in extra]
    # an extra naming the project's own other extras (test = ["harness[notebook,docs]", ...]): those are listed
    own = canonicalize_name(project["name"])
    return [Requirement(r) for r in reqs if canonicalize_name(Requirement(r).name) != own]


def test_every_dependency_is_pinned_within_its_range():
    pins = _pins()
    for req in _requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} (pyproject.toml) is not in constraints.txt: {REGENERATE}"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject's {req.specifier}: {REGENERATE}"


def test_this_environment_runs_the_pinned_versions():
    """What CI installs (`pip install -c constraints.txt`) is what the tests ran with."""
    pins = _pins()
    for req in _requirements():
        name = canonicalize_name(req.name)
        try:
            installed = version(req.name)
        except PackageNotFoundError:
            raise AssertionError(f"{req.name} is not installed: pip install -c constraints.txt -e '.[test]'") \
                from None
        assert installed == pins[name], (f"{req.name} {installed} is installed but constraints.txt pins "
                                         f"{pins[name]}: pip install -c constraints.txt -e '.[test]'")


def test_ci_and_the_demo_install_the_pins_through_one_script():
    """.ci/run and demo.sh both install through .ci/install, whose every install command is constrained."""
    script = (ROOT / ".ci" / "install").read_text()
    installs = [ln for ln in script.splitlines() if " install " in ln and not ln.lstrip().startswith("#")
                and "npm" not in ln and "echo" not in ln]
    assert len(installs) >= 3 and all("-c constraints.txt" in ln for ln in installs), installs
    assert "uv" in _pins()  # the installer itself is pinned too
    # pip compiles .pyc at install, uv only when asked: without it every process recompiles its imports
    assert all("--compile-bytecode" in ln for ln in installs if "uv pip install" in ln), installs
    assert "bash .ci/install test" in (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/install" in (ROOT / "demo.sh").read_text()
