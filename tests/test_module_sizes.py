"""Every module of the harness, the fake server and the reference agent holds one concern, and
one concern fits in 400 lines: a module past that holds two, and is split along their seam."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "fake_server", "reference_agent")
MAX_LINES = 400


def line_count(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def test_no_module_is_over_400_lines():
    over = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if (lines := line_count(path)) > MAX_LINES:
                over[path.relative_to(ROOT).as_posix()] = lines
    assert not over, "modules over {} lines (split each by concern): {}".format(
        MAX_LINES, ", ".join(f"{name} ({lines} lines)" for name, lines in over.items()))
