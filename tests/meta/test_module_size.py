"""No module under harness/ is over 550 lines (the project's standard: small modules with one job each)."""

from __future__ import annotations

from pathlib import Path

LIMIT = 550
HARNESS = Path(__file__).resolve().parents[2] / "harness"


def too_long(root: Path, limit: int = LIMIT) -> dict[str, int]:
    """Every ``.py`` file under ``root`` longer than ``limit`` lines, with its length."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit:
            out[str(path.relative_to(root.parent))] = n
    return out


def test_no_module_under_harness_is_over_550_lines():
    assert too_long(HARNESS) == {}, f"split these modules (more than {LIMIT} lines each)"


def test_a_module_over_the_limit_is_named_with_its_length(tmp_path):
    pkg = tmp_path / "harness"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "big.py").write_text("x = 1\n" * (LIMIT + 1))
    (pkg / "small.py").write_text("x = 1\n" * LIMIT)
    assert too_long(pkg) == {"harness/sub/big.py": LIMIT + 1}
