"""Agent profiles: how stopbench starts, stops, resumes and reads one agent.

A profile is a TOML file (format in ``docs/profiles.md``). Built-in profiles live in
``harness/agents/profiles/*.toml``; ``--agent`` takes a built-in name or a path. Everything about an
agent that the drivers need is data here, so a new agent needs a profile, not code: command
templates with placeholders, the options spliced in for a timeout, a resume or an adapter,
the stop signal and keys, the log reader, environment, files to write into a fresh HOME,
and an optional in-process factory (loaded by name with importlib — the harness never
imports an agent statically).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import msgspec

from fake_server.wire import wires
from harness.agents.install import split_version
from harness.datafile import read_toml
from harness.profiles import schema
from harness.profiles.checker import ProfileChecker, ProfileError
from harness.profiles.model import (
    BUDGET_KEYS,
    KEY_NAMES,
    OPTIONS,
    PLACEHOLDERS,
    Budgets,
    CommandSpec,
    Install,
    Interactive,
    MissingValue,
    Profile,
    SessionSpec,
    agent_binary,
    base_values,
    fill,
    template_names,
)

BUILTIN_DIR = Path(__file__).resolve().parents[1] / "agents" / "profiles"  # the built-in profiles: data
WIRE_APIS = frozenset(w.NAME for w in wires())  # the wires the fake server serves
PROFILES_GROUP = "stopbench.profiles"


@functools.cache
def _profile_folders() -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """Where built-in profiles are read from: ``harness/profiles``, then the folder of each
    package installed packages offer under the entry-point group ``stopbench.profiles``
    (``NAME = "package.profiles"``, a package holding TOMLs); and the plug-ins that could not
    be loaded, said when a name is not found (never raised: other profiles load as before)."""
    folders, problems = [BUILTIN_DIR], []
    for point in entry_points(group=PROFILES_GROUP):
        dist = point.dist.name if point.dist is not None else "an unnamed distribution"
        try:
            module = point.load()
            folder = Path(next(iter(getattr(module, "__path__", ())), None) or Path(module.__file__).parent)
        except Exception as exc:  # a plug-in's own fault, whatever it is: said, never raised here
            problems.append(f"profile plug-in {point.name!r} of {dist} ({PROFILES_GROUP}: {point.name} = "
                            f"{point.value!r}) cannot be loaded: {type(exc).__name__}: {exc}")
            continue
        folders.append(folder)
    return tuple(folders), tuple(problems)


def _builtin_paths() -> dict[str, Path]:
    """Each built-in profile's file by name; a plug-in's profile never shadows one before it."""
    paths: dict[str, Path] = {}
    for folder in _profile_folders()[0]:
        for path in sorted(folder.glob("*.toml")):
            paths.setdefault(path.stem, path)
    return paths


def builtin_names() -> list[str]:
    return sorted(_builtin_paths())


@functools.cache
def builtin_installs() -> dict[str, Install]:
    """The installable agents: every built-in profile's ``[install]`` table, by profile name."""
    found = {}
    for name in builtin_names():
        install = load_profile(name).install
        if install is not None:
            found[name] = install
    return found


@functools.cache
def _installable_names() -> frozenset[str]:
    """The built-in profiles with an ``[install]`` table, read without validating them, so that
    validating one profile (its ``agent = NAME``) never loads another."""
    return frozenset(name for name, path in _builtin_paths().items()
                     if isinstance(read_toml(path, ProfileError).get("install"), dict))


def load_profile(name_or_path: str | Path) -> Profile:
    """A built-in profile by name, or a profile file by path. ``NAME@VERSION`` is the built-in
    profile driving that installed version of its real agent instead of the pinned one."""
    text = str(name_or_path)
    path = Path(text)
    version = None
    if not (text.endswith(".toml") or "/" in text):
        try:
            text, version = split_version(text)
        except ValueError as exc:
            raise ProfileError(text, "agent", str(exc)) from None
        found = _builtin_paths().get(text)
        if found is None:
            broken = "".join(f"; {problem}" for problem in _profile_folders()[1])
            raise ProfileError(text, "agent",
                               f"no built-in profile of that name (built-in: {', '.join(builtin_names())}){broken}")
        path = found
    if not path.is_file():
        raise ProfileError(path, "agent", "file not found")
    profile = parse_profile(read_toml(path, ProfileError), path)
    if version is None:
        return profile
    if profile.agent is None:
        raise ProfileError(path, "agent", f"{text}@{version}: profile {text!r} drives no installable agent "
                                          "(it has no [install] table), so it has no versions to choose from")
    return dataclasses.replace(profile, agent_version=version)


# The keys the file takes, from its schema: the top level's, and each table's.
_TOP_KEYS = set(schema.fields(schema.ProfileFile))
_SECTION_KEYS = {name: set(schema.fields(struct)) for name, struct in schema.TABLES.items() if name != "files"}


def parse_profile(data: Mapping[str, Any], path: str | Path = "<profile>") -> Profile:
    """Validate a parsed profile table; every problem names its item. The schema
    (``harness.profiles.schema``) refuses unknown keys and wrong types; the checks below what
    types cannot say, table by table."""
    try:
        raw = schema.decode(data)
    except schema.SchemaError as exc:
        raise ProfileError(path, exc.item, exc.problem) from None
    c = ProfileChecker(path, _installable_names)
    adapters = c.adapters(raw)
    headless, exit_codes = c.headless(raw.headless)
    interactive = c.interactive(raw.interactive)
    acp = c.acp(raw.acp)
    if not (headless or interactive or acp or raw.inproc is not None):
        c.fail("headless", "a profile needs at least one of [headless], [interactive], [acp], [inproc]")
    files = c.files(raw.files, fresh_home=raw.fresh_home)
    env = c.environment(raw.env, "env")
    adapter_env = c.adapter_env(raw.adapter_env, adapters)
    finish_action = c.finish_action(raw.finish_action)
    install = c.install(raw.install, raw.name)
    agent = c.agent(raw.agent, install, raw.name)
    return Profile(
        name=raw.name,
        path=str(path),
        description=raw.description,
        adapters=adapters,
        wire_api=c.one_of("wire_api", raw.wire_api, sorted(WIRE_APIS)),
        model=c.model(raw.model),
        log_reader=c.reader(raw.log_reader),
        fresh_home=raw.fresh_home,
        warnings=tuple(c.warnings),
        env=env,
        adapter_env=adapter_env,
        files=files,
        version_command=c.templates("version_command", raw.version_command),
        headless=headless,
        exit_codes=exit_codes,
        interactive=interactive,
        acp=acp,
        stop_signal=c.signal("stop.signal", raw.stop.signal),
        session=c.session(raw.session, chosen=_uses(data, "session_uuid")),
        streams=raw.streams,
        agent=agent,
        install=install,
        sequential_tools=raw.sequential_tools,
        inproc_factory=c.factory(raw.inproc.factory if raw.inproc else None),
        failpoints_env=c.env_name("failpoints.env", raw.failpoints.env),
        failpoints_list_command=c.templates("failpoints.list_command", raw.failpoints.list_command),
        repair_outcome_unknown=raw.repair.outcome_unknown,
        repair_not_started=raw.repair.not_started,
        budgets=Budgets(**{k: v for k, v in msgspec.structs.asdict(raw.timeouts).items() if v is not None}),
        watchdog_signal=c.signal("watchdog.signal", raw.watchdog.signal),
        finish_action=finish_action,
        shell_fence=c.fence(raw.shell.fence),
        side_requests=c.side_requests(raw.side_requests),
        not_run=c.not_run(raw.not_run),
    )


def _uses(data: Mapping[str, Any], placeholder: str) -> bool:
    """Whether any command template of the profile names ``{placeholder}``."""
    found = False

    def walk(value: Any) -> None:
        nonlocal found
        if isinstance(value, str):
            found = found or placeholder in template_names(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    for section in ("headless", "interactive", "acp"):
        walk(data.get(section, {}))
    return found


__all__ = ["BUDGET_KEYS", "BUILTIN_DIR", "KEY_NAMES", "OPTIONS", "PLACEHOLDERS", "WIRE_APIS", "Budgets", "CommandSpec",
           "Interactive", "MissingValue", "Profile", "ProfileError", "SessionSpec", "agent_binary", "base_values",
           "builtin_names", "fill", "load_profile", "parse_profile", "template_names"]
