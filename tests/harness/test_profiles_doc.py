"""docs/profiles.md stays right for a profile author: each of its TOML examples loads, every key
an example uses is in the reference, the reference names every key the loader takes, and the
page links nowhere outside the repository."""

import re
import tomllib
from pathlib import Path

import pytest

from harness import profiles
from harness.profiles import parse_profile

DOC = Path(__file__).parents[2] / "docs" / "profiles.md"
# Whole profiles for agents with no built-in one, which the page points to.
EXAMPLE_PROFILES = sorted((Path(__file__).parents[2] / "examples" / "profiles").glob("*/*.toml"))
TEXT = DOC.read_text(encoding="utf-8")
EXAMPLES = re.findall(r"^```toml\n(.*?)^```$", TEXT, flags=re.S | re.M)
REFERENCE = TEXT[TEXT.index("## Reference"):TEXT.index("\n## ", TEXT.index("## Reference") + 1)]
# Tables whose keys are the author's own names (variables, adapters, tasks, reasons), not the reference's.
FREE_FORM = {"env", "adapter_env", "not_run", "headless.exit_codes", "headless.adapter_options",
             "interactive.adapter_options", "finish_action.arguments", "acp.adapter_options",
             "acp.client_capabilities"}


def reference_keys() -> set[str]:
    return set(re.findall(r"^\| `([a-z_.]+)` \|", REFERENCE, flags=re.M))


def keys_used(table: dict, prefix: str = "") -> set[str]:
    """Every key of a profile, dotted (``headless.command``), not looking inside free-form tables."""
    used = set()
    for key, value in table.items():
        name = prefix + key
        if isinstance(value, dict) and name not in FREE_FORM:  # a section: its keys are the reference's
            used |= keys_used(value, name + ".")
            continue
        used.add(name)
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):  # [[files]]
            for entry in value:
                used |= keys_used(entry, name + ".")
    return used


def test_the_page_has_examples_and_a_minimal_profile_comes_first():
    assert len(EXAMPLES) >= 2
    assert TEXT.index("## A minimal profile") < TEXT.index("```toml") < TEXT.index("## Reference")
    minimal = tomllib.loads(EXAMPLES[0])
    assert set(minimal) == {"name", "env", "headless"}


@pytest.mark.parametrize("n", range(len(EXAMPLES)))
def test_each_example_loads(n):
    parse_profile(tomllib.loads(EXAMPLES[n]), f"{DOC.name} example {n + 1}")


@pytest.mark.parametrize("n", range(len(EXAMPLES)))
def test_every_key_an_example_uses_is_in_the_reference(n):
    missing = keys_used(tomllib.loads(EXAMPLES[n])) - reference_keys()
    assert not missing, f"example {n + 1} uses keys the reference does not list: {sorted(missing)}"


def test_the_reference_lists_every_key_the_loader_takes_and_no_other():
    taken = {k for k in profiles._TOP_KEYS if k not in profiles._SECTION_KEYS}
    taken |= {f"{section}.{key}" for section, keys in profiles._SECTION_KEYS.items() for key in keys}
    taken |= {"files.path", "files.content"}
    assert reference_keys() == taken


def test_the_page_links_nowhere_outside_the_repository():
    assert not re.findall(r"\]\((?:https?:|\.\./)", TEXT)
    assert "../" not in TEXT


@pytest.mark.parametrize("path", EXAMPLE_PROFILES, ids=lambda p: p.name)
def test_each_example_profile_loads_uses_reference_keys_and_is_named_on_the_page(path):
    profile = tomllib.loads(path.read_text(encoding="utf-8"))
    parse_profile(profile, str(path))
    assert not keys_used(profile) - reference_keys()
    assert str(path.relative_to(DOC.parents[1])) in TEXT


def test_there_is_an_example_profile():
    assert EXAMPLE_PROFILES
