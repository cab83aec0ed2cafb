"""The parts of the docs and the Makefile that restate the profiles, the task files and the
readers, generated from them: the table of installable agents, the Makefile's ``AGENTS`` list,
the table of tasks and the list of readers. One fact, one place: edit the TOML (or register
the reader), then ``make docs``.

    python -m harness.agents.docs           # rewrite every generated part
    python -m harness.agents.docs --check   # exit 1 naming each file whose part differs

A generated part sits between two marker lines naming it (``<!-- begin generated: NAME … -->`` …
``<!-- end generated: NAME -->``; in the Makefile ``# begin generated: NAME …`` …
``# end generated: NAME``); the rest of the file is left as it is.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Part:
    path: str  # relative to the repository
    name: str  # the markers' name
    source: str  # what it is generated from, said in the begin marker
    render: Callable[[], str]


def _own_agents() -> dict:
    """The installable agents of this repository's profiles (a plug-in's are its own docs')."""
    from harness.profiles import BUILTIN_DIR, load_profile

    profiles = [load_profile(path) for path in sorted(BUILTIN_DIR.glob("*.toml"))]
    return {p.name: p.install for p in profiles if p.install is not None}


def agents_table() -> str:
    rows = ["| name | registry | package | pinned | program run | Python | what | store |",
            "|---|---|---|---|---|---|---|---|"]
    for name, agent in _own_agents().items():
        others = len(agent.program) - 1
        program = f"`{agent.program[0]}`" + (f" (or {others} other layout{'s' * (others > 1)})" if others else "")
        if agent.warm_up:
            program += f"; warm-up `{' '.join(agent.warm_up)}` at install"
        rows.append(f"| {name} | {agent.registry} | `{agent.package}` | {agent.version} | {program} | "
                    f"{agent.python or '—'} | {_cell(agent.description)} | {_code(agent.store)} |")
    return "\n".join(rows)


def agents_list() -> str:
    names = list(_own_agents())
    lines = [" ".join(names[i:i + 8]) for i in range(0, len(names), 8)]
    return "AGENTS ?= " + " \\\n          ".join(lines)


def tasks_table() -> str:
    from harness.model.results import Tier
    from harness.tasks import load_all

    rows = ["| task | drivers | adapters | what it does | mandatory checks | advisory |", "|---|---|---|---|---|---|"]
    for task in load_all():
        tiers = {tier: " ".join(c for c, t in task.checks.items() if t is tier) or "—" for tier in Tier}
        rows.append(f"| `{task.name}` | {', '.join(task.drivers)} | {', '.join(task.adapters) or 'all'} | "
                    f"{_cell(task.description)} | {tiers[Tier.MANDATORY]} | {tiers[Tier.ADVISORY]} |")
    return "\n".join(rows)


def readers_list() -> str:
    from harness.readers import READERS

    own = [name for name in READERS if name not in READERS.plugins]
    return ", ".join(f"`{name}`" for name in own) + f" ({len(own)} readers)."


PARTS = (
    Part("docs/agents.md", "agents", "the [install] tables of harness/agents/profiles/*.toml", agents_table),
    Part("Makefile", "agents", "the [install] tables of harness/agents/profiles/*.toml", agents_list),
    Part("docs/tasks.md", "tasks", "harness/tasks/*/task.toml", tasks_table),
    Part("docs/readers.md", "readers", "harness.readers.READERS", readers_list),
)


def _cell(text: str) -> str:
    """Text fit for one Markdown table cell: one line, no bare ``|``."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{_cell(text)}`" if text else "—"


def _markers(part: Part) -> tuple[str, str]:
    comment = ("# {} generated: {}", "{}") if part.path == "Makefile" else ("<!-- {} generated: {}", "{} -->")
    begin = comment[0].format("begin", part.name) + f" (make docs, from {part.source})"
    end = comment[0].format("end", part.name)
    return comment[1].format(begin), comment[1].format(end)


class MarkersMissing(Exception):
    pass


def splice(text: str, part: Part) -> str:
    """``text`` with ``part``'s generated lines between its markers rendered anew."""
    begin, end = _markers(part)
    lines = text.split("\n")
    starts = [n for n, line in enumerate(lines) if line.startswith(begin.split(" (make docs")[0])]
    ends = [n for n, line in enumerate(lines) if line == end]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise MarkersMissing(f"{part.path}: needs one line starting {begin!r} and, after it, one line {end!r}")
    return "\n".join([*lines[:starts[0]], begin, part.render(), *lines[ends[0]:]])


def stale() -> list[str]:
    """The files whose generated parts differ from what the sources give."""
    return sorted({p.path for p in PARTS if splice(_read(p.path), p) != _read(p.path)})


def write() -> list[str]:
    """Rewrite every generated part; the files that changed."""
    changed = []
    for part in PARTS:
        old = _read(part.path)
        new = splice(old, part)
        if new != old:
            (ROOT / part.path).write_text(new, encoding="utf-8")
            changed.append(part.path)
    return changed


def _read(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.agents.docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a generated part is stale")
    args = parser.parse_args(argv)
    try:
        if args.check:
            differ = stale()
            for path in differ:
                print(f"{path}: generated part out of date (run: make docs)", file=sys.stderr)
            return 1 if differ else 0
        for path in write():
            print(f"rewrote {path}")
    except MarkersMissing as exc:
        print(f"python -m harness.agents.docs: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
