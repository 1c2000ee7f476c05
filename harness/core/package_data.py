"""Data shipped inside the package: scenarios, suites, stories, the dynalite server script, the review notebook.

Found through ``importlib.resources``, never by counting folders up from ``__file__`` to a checkout: installed
from a wheel, that count lands in ``site-packages``, where no checkout's folders are. pyproject.toml's
``[tool.setuptools.package-data]`` ships each of these (``tests/meta/test_wheel.py`` checks the wheel's list).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def path(package: str, *parts: str) -> Path:
    """A file or folder shipped in ``package``, as a filesystem path: a wheel installs unzipped, and what reads
    these (a glob over a folder, ``node``, JupyterLab) needs a real path, not a ``Traversable``."""
    return Path(str(resources.files(package).joinpath(*parts)))
