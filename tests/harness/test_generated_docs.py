"""The docs' tables of agents and tasks, their list of readers and the Makefile's AGENTS list
are what ``make docs`` (``python -m harness.agents.docs``) generates from the profiles, the task
files and the registered readers: a profile, task or reader changed without ``make docs`` fails here."""

from __future__ import annotations

import dataclasses

import pytest

from harness.agents import docs


@pytest.mark.parametrize("part", docs.PARTS, ids=lambda p: f"{p.path}:{p.name}")
def test_the_committed_part_is_what_the_sources_generate(part):
    text = (docs.ROOT / part.path).read_text(encoding="utf-8")
    assert docs.splice(text, part) == text, f"{part.path}: run `make docs`"


def test_every_source_shows_in_its_part():
    from harness.readers import READERS
    from harness.tasks import load_all

    rendered = {p.name + p.path: p.render() for p in docs.PARTS}
    for name, agent in docs._own_agents().items():
        assert f"| {name} | {agent.registry} | `{agent.package}` | {agent.version} |" in rendered["agentsdocs/agents.md"]
        assert name in rendered["agentsMakefile"].split()
    for task in load_all():
        assert f"| `{task.name}` | {', '.join(task.drivers)} |" in rendered["tasksdocs/tasks.md"]
    assert all(f"`{name}`" in rendered["readersdocs/readers.md"] for name in READERS if name not in READERS.plugins)


def test_a_stale_part_is_found_and_rewritten_between_its_markers_only():
    part = dataclasses.replace(docs.PARTS[0], render=lambda: "new table")
    begin, end = docs._markers(part)
    text = f"before\n{begin}\nold table\n{end}\nafter"
    assert docs.splice(text, part) == f"before\n{begin}\nnew table\n{end}\nafter"
    with pytest.raises(docs.MarkersMissing, match="docs/agents.md"):
        docs.splice("no markers here", part)
