"""Agent profiles: how stopbench starts, stops, resumes and reads one agent.

A profile is a TOML file (format in ``docs/profiles.md``). Built-in profiles live in
``harness/profiles/*.toml``; ``--agent`` takes a built-in name or a path. Everything about an
agent that the drivers need is data here, so a new agent needs a profile, not code: command
templates with placeholders, the options spliced in for a timeout, a resume or an adapter,
the stop signal and keys, the log reader, environment, files to write into a fresh HOME,
and an optional in-process factory (loaded by name with importlib — the harness never
imports an agent statically).
"""

from __future__ import annotations

import dataclasses
import math
import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from fake_server.scenario import ScenarioError, parse_finish_action
from fake_server.wire import wires
from harness.agents.catalog import AGENTS, split_version
from harness.contract import EXIT_CODE_FOR_REASON, TURN_END_REASONS
from harness.datafile import DataFileError, read_toml
from harness.profile_model import (
    ACP_CANCELS,
    ACP_PERMISSIONS,
    ACP_READERS,
    ACP_RESUME_METHODS,
    BUDGET_KEYS,
    KEY_NAMES,
    OPTIONS,
    PLACEHOLDERS,
    AcpSpec,
    Budgets,
    CommandSpec,
    Interactive,
    MissingValue,
    Profile,
    SessionSpec,
    agent_binary,
    base_values,
    fill,
    template_names,
)
from harness.readers import reader_names

BUILTIN_DIR = Path(__file__).with_name("profiles")
WIRE_APIS = frozenset(w.NAME for w in wires())  # the wires the fake server serves
MAX_BUDGET_S = 3600.0  # a step budget longer than an hour hides a hang rather than waiting for an agent
# Placeholders that have a value only at some places: the run's timeout T exists only where the
# timeout options are spliced in, a prompt only on a headless command line (the terminal driver
# types it), a session's id only once the session ran. Anywhere else they would fail mid-run.
_ONLY_IN = {
    "timeout": ("the timeout_options (T is given only to a run that has a timeout)",
                lambda item: item.endswith(".timeout_options")),
    "prompt": ("[headless] (the terminal and in-process drivers type or pass the prompt themselves)",
               lambda item: item.startswith("headless.")),
    "session_id": ("the resume_options (a session has an id only once it ran)",
                   lambda item: item.endswith(".resume_options")),
}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Where a template is a command line: a placeholder there is in the process table.
_ARGV_ITEMS = ("command", "timeout_options", "resume_options", "first_options", "adapter_options")


class ProfileError(DataFileError):
    """A profile that cannot be used, naming the file, the item and the problem."""


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


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
        path = BUILTIN_DIR / f"{text}.toml"
        if not path.is_file():
            raise ProfileError(text, "agent",
                               f"no built-in profile of that name (built-in: {', '.join(builtin_names())})")
    if not path.is_file():
        raise ProfileError(path, "agent", "file not found")
    profile = parse_profile(read_toml(path, ProfileError), path)
    if version is None:
        return profile
    if profile.agent is None:
        raise ProfileError(path, "agent", f"{text}@{version}: profile {text!r} drives no agent of the catalog, "
                                          "so it has no versions to choose from")
    return dataclasses.replace(profile, agent_version=version)


_TOP_KEYS = {
    "name", "description", "version_command", "adapters", "wire_api", "model", "log_reader",
    "fresh_home", "env", "files", "headless", "interactive", "stop", "session", "inproc",
    "failpoints", "repair", "timeouts", "watchdog", "streams", "agent", "sequential_tools", "finish_action",
    "shell", "not_run", "adapter_env", "acp",
}
# The keys each section takes; anything else is refused, naming file, section and key.
_SECTION_KEYS = {
    "headless": {"command", "timeout_options", "resume_options", "first_options", "adapter_options", "exit_codes",
                 "stdin", "no_resume"},
    "interactive": {"command", "resume_options", "first_options", "adapter_options", "timeout_options", "prompt_regex",
                    "turn_ended_regex", "queued_regex", "cancel_command", "stop_keys", "quit_keys", "match_on",
                    "busy_regex"},
    "acp": {"command", "adapter_options", "cancel", "resume_method", "permission", "reader", "client_capabilities"},
    "stop": {"signal"},
    "session": {"stderr_regex", "stdout_regex", "path_regex", "log_glob"},
    "inproc": {"factory"},
    "failpoints": {"env", "list_command"},
    "repair": {"outcome_unknown", "not_started"},
    "timeouts": set(BUDGET_KEYS),
    "watchdog": {"signal"},
    "finish_action": {"tool", "arguments", "shell"},
    "shell": {"fence"},
}


def parse_profile(data: Mapping[str, Any], path: str | Path = "<profile>") -> Profile:
    """Validate a parsed profile table; every problem names its item."""
    v = _Validator(path)
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        v.fail(unknown[0], f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})")
    for section, known in _SECTION_KEYS.items():
        table = data.get(section)
        if isinstance(table, dict):
            strange = sorted(set(table) - known)
            if strange:
                v.fail(f"{section}.{strange[0]}", f"unknown key in [{section}] (known: {', '.join(sorted(known))})")
    name = v.string(data, "name", required=True)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        v.fail("name", f"{name!r} is not a plain identifier (letters, digits, . _ -)")
    log_reader = v.string(data, "log_reader", default="none")
    if log_reader not in reader_names():
        v.fail("log_reader", f"{log_reader!r} is not one of {', '.join(reader_names())}")
    wire_api = v.string(data, "wire_api", default="chat")
    if wire_api not in WIRE_APIS:
        v.fail("wire_api", f"{wire_api!r} is not one of {', '.join(sorted(WIRE_APIS))}")
    adapters = v.strings(data, "adapters", default=["http"])
    if not adapters:
        v.fail("adapters", "at least one adapter is needed")
    for adapter in adapters:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", adapter):
            v.fail("adapters", f"{adapter!r} is not a plain name (letters, digits, . _ -)")
    if len(set(adapters)) != len(adapters):
        v.fail("adapters", "an adapter is listed twice (each would be run twice under one name)")
    stop_signal = v.signal(v.table(data, "stop"), "stop.signal", default="SIGINT")
    watchdog_signal = v.signal(v.table(data, "watchdog"), "watchdog.signal", default="SIGTERM")
    repair = v.table(data, "repair")
    timeouts = v.table(data, "timeouts")
    budgets = {}
    for key in BUDGET_KEYS:
        if key in timeouts:
            value = timeouts[key]
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or not 0 < value <= MAX_BUDGET_S):
                v.fail(f"timeouts.{key}", f"must be a number of seconds above 0 and at most {MAX_BUDGET_S:g}, "
                                          f"not {value!r}")
            budgets[key] = float(value)
    session = v.table(data, "session")
    regexes = {}
    for key in ("stderr_regex", "stdout_regex", "path_regex"):
        regexes[key] = v.string(session, key, item=f"session.{key}")
        if regexes[key]:
            v.regex(f"session.{key}", regexes[key], groups={"id"})
    headless = None
    exit_codes: dict[str, int] = {}
    if "headless" in data:
        h = v.table(data, "headless")
        headless = v.command_spec(h, "headless", CommandSpec)
        for reason, code in v.table(h, "exit_codes", item="headless.exit_codes").items():
            if reason not in EXIT_CODE_FOR_REASON:
                v.fail(f"headless.exit_codes.{reason}",
                       f"{reason!r} is not a settlement reason ({', '.join(EXIT_CODE_FOR_REASON)})")
            if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
                v.fail(f"headless.exit_codes.{reason}", f"must be an exit code from 0 to 255, not {code!r}")
            exit_codes[reason] = code
    interactive = None
    if "interactive" in data:
        i = v.table(data, "interactive")
        extra: dict[str, Any] = {
            "prompt_regex": v.string(i, "prompt_regex", required=True, item="interactive.prompt_regex"),
            "turn_ended_regex": v.string(i, "turn_ended_regex", default="", item="interactive.turn_ended_regex"),
            "match_on": v.string(i, "match_on", default="stream", item="interactive.match_on"),
            "busy_regex": v.string(i, "busy_regex", default="", item="interactive.busy_regex"),
            "queued_regex": v.string(i, "queued_regex", default="", item="interactive.queued_regex"),
            "cancel_command": v.string(i, "cancel_command", default="", item="interactive.cancel_command"),
            "stop_keys": tuple(v.strings(i, "stop_keys", default=["esc"], item="interactive.stop_keys")),
            "quit_keys": tuple(v.strings(i, "quit_keys", default=["ctrl-d"], item="interactive.quit_keys")),
        }
        if extra["match_on"] not in ("stream", "screen"):
            v.fail("interactive.match_on", "one of stream, screen")
        if not (extra["turn_ended_regex"] or extra["busy_regex"]):
            v.fail("interactive.turn_ended_regex",
                   "required (or busy_regex, for a UI that shows nothing when a turn ends)")
        for key in ("prompt_regex", "turn_ended_regex", "queued_regex", "busy_regex"):
            if extra[key]:
                v.regex(f"interactive.{key}", extra[key], groups=set())
        unknown_groups = sorted(set(re.compile(extra["turn_ended_regex"]).groupindex)
                                - {"reason", "source", *TURN_END_REASONS})
        if unknown_groups:
            v.fail("interactive.turn_ended_regex", f"unknown group {unknown_groups[0]!r} (reason, source, or a "
                   f"group named after the reason it tells: {', '.join(TURN_END_REASONS)})")
        for key in extra["stop_keys"] + extra["quit_keys"]:
            if key not in KEY_NAMES:
                v.fail("interactive.stop_keys", f"{key!r} is not a known key ({', '.join(sorted(KEY_NAMES))})")
        interactive = v.command_spec(i, "interactive", Interactive, extra)
    acp = _acp(v, v.table(data, "acp")) if "acp" in data else None
    if not (headless or interactive or acp or "inproc" in data):
        v.fail("headless", "a profile needs at least one of [headless], [interactive], [acp], [inproc]")
    files = v.files(data.get("files", []), fresh_home=v.boolean(data, "fresh_home", default=True))
    env = v.environment(v.table(data, "env"), "env")
    adapter_env: dict[str, dict[str, str]] = {}
    for adapter in v.table(data, "adapter_env"):
        if adapter not in adapters:
            v.fail(f"adapter_env.{adapter}", f"not one of the profile's adapters ({', '.join(adapters)})")
        adapter_env[adapter] = v.environment(v.table(data["adapter_env"], adapter, item=f"adapter_env.{adapter}"),
                                             f"adapter_env.{adapter}")
    inproc = v.table(data, "inproc")
    factory = v.string(inproc, "factory", item="inproc.factory")
    if factory and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", factory):
        v.fail("inproc.factory", f"{factory!r} is not 'module.path:function'")
    failpoints = v.table(data, "failpoints")
    finish_action = None
    if "finish_action" in data:
        try:
            finish_action = parse_finish_action(v.table(data, "finish_action"), str(path))
        except ScenarioError as exc:
            v.fail(exc.item, exc.problem)
    session_glob = v.string(session, "log_glob", item="session.log_glob")
    if session_glob:
        v.placeholders("session.log_glob", session_glob)
    shell_fence = v.string(v.table(data, "shell"), "fence", item="shell.fence")
    if shell_fence is not None and not shell_fence.isalnum():
        v.fail("shell.fence", f"must be a fence language such as 'bash', not {shell_fence!r}")
    agent = v.string(data, "agent", item="agent")
    if agent is not None and agent not in AGENTS:
        v.fail("agent", f"{agent!r} is not an agent of the catalog (known: {', '.join(sorted(AGENTS))})")
    if v.uses_agent and not agent:
        v.fail(v.uses_agent, "{agent_bin}, {agent_dir} and {agent_version} need agent = NAME (the catalog's agent "
                             "they are of)")
    not_run = v.table(data, "not_run")
    for task, why in not_run.items():
        if not isinstance(why, str) or not why.strip():
            v.fail(f"not_run.{task}", "must say why the task cannot apply to this agent")
    return Profile(
        name=name,
        path=str(path),
        description=v.string(data, "description", default=""),
        adapters=tuple(adapters),
        wire_api=wire_api,
        model=v.model(data),
        log_reader=log_reader,
        fresh_home=v.boolean(data, "fresh_home", default=True),
        warnings=tuple(v.warnings),
        env=env,
        adapter_env=adapter_env,
        files=tuple(files),
        version_command=tuple(v.strings(data, "version_command", default=[])),
        headless=headless,
        exit_codes=exit_codes,
        interactive=interactive,
        acp=acp,
        stop_signal=stop_signal,
        session=SessionSpec(**regexes, log_glob=session_glob,
                            chosen=_uses(data, "session_uuid")),
        streams=v.boolean(data, "streams", default=True),
        agent=agent,
        sequential_tools=v.boolean(data, "sequential_tools", default=False),
        inproc_factory=factory,
        failpoints_env=v.env_name(failpoints, "env", item="failpoints.env"),
        failpoints_list_command=tuple(v.strings(failpoints, "list_command", default=[],
                                                item="failpoints.list_command")),
        repair_outcome_unknown=v.string(repair, "outcome_unknown", item="repair.outcome_unknown"),
        repair_not_started=v.string(repair, "not_started", item="repair.not_started"),
        budgets=Budgets(**budgets),
        watchdog_signal=watchdog_signal,
        finish_action=finish_action,
        shell_fence=shell_fence,
        not_run=dict(not_run),
    )


class _Validator:
    def __init__(self, path: str | Path):
        self.path = path
        self.warnings: list[str] = []  # what is allowed but unwise, said at load and by doctor
        self.uses_agent: str | None = None  # the first item naming {agent_bin}, {agent_dir} or {agent_version}

    def fail(self, item: str, problem: str) -> NoReturn:
        raise ProfileError(self.path, item, problem)

    def signal(self, table: Mapping[str, Any], item: str, *, default: str) -> int:
        name = self.string(table, "signal", default=default, item=item)
        try:
            return int(signal.Signals[name])
        except KeyError:
            self.fail(item, f"{name!r} is not a signal name (e.g. SIGINT, SIGTERM)")

    def string(self, table, key, *, required=False, default=None, item=None) -> Any:
        item = item or key
        if key not in table:
            if required:
                self.fail(item, "required")
            return default
        if not isinstance(table[key], str):
            self.fail(item, f"must be a string, got {type(table[key]).__name__}")
        return table[key]

    def boolean(self, table, key, *, default: bool) -> bool:
        value = table.get(key, default)
        if not isinstance(value, bool):
            self.fail(key, "must be true or false")
        return value

    def strings(self, table, key, *, default, item=None) -> list[str]:
        item = item or key
        value = table.get(key, default)
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            self.fail(item, "must be a list of strings")
        for s in value:
            self.placeholders(item, s)
        return value

    def model(self, data: Mapping[str, Any]) -> str:
        model: str = self.string(data, "model", default="stopbench-1")
        if not model.strip() or "\x00" in model:
            self.fail("model", f"{model!r} is not a model name the agent can be handed")
        return model

    def env_name(self, table: Mapping[str, Any], key: str, *, item: str) -> str | None:
        name: str | None = self.string(table, key, item=item)
        if name is not None and not _ENV_NAME.fullmatch(name):
            self.fail(item, f"{name!r} is not an environment variable name (letters, digits, _)")
        return name

    def environment(self, table: Mapping[str, Any], item: str) -> dict[str, str]:
        """Environment variables whose values are templates."""
        for key, value in table.items():
            if not _ENV_NAME.fullmatch(key):
                self.fail(f"{item}.{key}", f"{key!r} is not an environment variable name (letters, digits, _)")
            if not isinstance(value, str):
                self.fail(f"{item}.{key}", "must be a string")
            self.placeholders(f"{item}.{key}", value)
        return dict(table)

    def table(self, data, key, *, item=None) -> dict:
        value = data.get(key, {})
        if not isinstance(value, dict):
            self.fail(item or key, "must be a table")
        return value

    def regex(self, item: str, pattern: str, groups: set[str]):
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            self.fail(item, f"bad regular expression: {exc}")
        missing = groups - set(compiled.groupindex)
        if missing:
            self.fail(item, f"needs the named group(s) {', '.join(sorted(missing))}")

    def placeholders(self, item: str, template: str):
        if "\x00" in template:
            self.fail(item, "holds a NUL character, which no command line, environment or file name can carry")
        try:
            names = template_names(template)
        except ValueError as exc:
            self.fail(item, f"bad template {template!r}: {exc} (write {{{{ and }}}} for literal braces)")
        unknown = names - PLACEHOLDERS - {"options"}
        if unknown:
            self.fail(item, f"unknown placeholder {{{sorted(unknown)[0]}}} (known: {', '.join(sorted(PLACEHOLDERS))})")
        if "options" in names and not (item.endswith(".command") and template == OPTIONS):
            self.fail(item, f"{OPTIONS} stands alone as an element of a command list, and nowhere else")
        for name in sorted(names & set(_ONLY_IN)):
            where, allowed = _ONLY_IN[name]
            if not allowed(item):
                self.fail(item, f"{{{name}}} has a value only in {where}")
        if names & {"agent_bin", "agent_dir", "agent_version"} and self.uses_agent is None:
            self.uses_agent = item
        if "api_key" in names and set(item.split(".")) & {*_ARGV_ITEMS, "list_command", "version_command"}:
            warning = (f"{item}: {{api_key}} puts the key on the command line, where every user of this machine "
                       "can read it (ps, /proc/PID/cmdline); give it in [env] instead")
            if warning not in self.warnings:
                self.warnings.append(warning)

    def files(self, raw: Any, *, fresh_home: bool) -> list[dict[str, str]]:
        """``[[files]]``: written into the run's fresh HOME only. With ``fresh_home = false``
        ``{home}`` is the user's own HOME, where a profile's file would overwrite theirs
        (``.bashrc``) and leave the run's key behind: refused."""
        if not isinstance(raw, list):
            self.fail("files", "must be an array of [[files]] tables")
        files: list[dict[str, str]] = []
        for n, f in enumerate(raw, 1):
            item = f"files[{n}]"
            if not isinstance(f, dict) or not isinstance(f.get("path"), str) or not isinstance(f.get("content"), str):
                self.fail(item, "each file needs string 'path' and 'content'")
            strange = sorted(set(f) - {"path", "content"})
            if strange:
                self.fail(f"{item}.{strange[0]}", "unknown key (known: content, path)")
            if not fresh_home:
                self.fail(item, f"{f['path']!r} would be written into your own HOME (fresh_home = false) and "
                                "overwrite your file; files are written only into a fresh HOME")
            if not f["path"].startswith("{home}/"):
                self.fail(f"{item}.path", "must start with {home}/ (files are written into the run's fresh HOME)")
            if ".." in Path(f["path"]).parts:
                self.fail(f"{item}.path", "may not climb out of the fresh HOME with '..'")
            if any(f["path"] == g["path"] for g in files):
                self.fail(f"{item}.path", f"{f['path']!r} is written by an earlier [[files]] entry already")
            self.placeholders(f"{item}.path", f["path"])
            self.placeholders(f"{item}.content", f["content"])
            files.append({"path": f["path"], "content": f["content"]})
        return files

    def command_spec(self, table, section: str, cls, extra=None):
        command = self.strings(table, "command", default=[], item=f"{section}.command")
        if not command:
            self.fail(f"{section}.command", "required: the command as a list of strings")
        if not command[0].strip():
            self.fail(f"{section}.command", "its first element, the program, is empty")
        if "/" in command[0] and not command[0].startswith(("/", "{")):
            self.fail(f"{section}.command", f"the program {command[0]!r} is a relative path, which would be looked "
                      "up from the run's fresh working folder: give an absolute path, a name on PATH, or "
                      "{profile_dir}/… for a program beside the profile")
        if section == "headless" and not any("{prompt}" in c for c in command):
            self.fail(f"{section}.command", "must pass {prompt}")
        adapter_options = {}
        for adapter, opts in self.table(table, "adapter_options", item=f"{section}.adapter_options").items():
            item = f"{section}.adapter_options.{adapter}"
            adapter_options[adapter] = tuple(self.strings({"o": opts}, "o", default=[], item=item))
        return cls(
            command=tuple(command),
            timeout_options=tuple(self.strings(table, "timeout_options", default=[],
                                               item=f"{section}.timeout_options")),
            resume_options=tuple(self.strings(table, "resume_options", default=[], item=f"{section}.resume_options")),
            first_options=tuple(self.strings(table, "first_options", default=[], item=f"{section}.first_options")),
            adapter_options=adapter_options,
            stdin=self._stdin(table, section),
            no_resume=self._no_resume(table, section),
            **(extra or {}),
        )


    def _stdin(self, table, section: str) -> str | None:
        text = self.string(table, "stdin", item=f"{section}.stdin")
        if text is not None:
            self.placeholders(f"{section}.stdin", text)
        return text

    def _no_resume(self, table, section: str) -> str | None:
        why = self.string(table, "no_resume", item=f"{section}.no_resume")
        if why is not None and (not why.strip() or table.get("resume_options")):
            self.fail(f"{section}.no_resume", "a reason, and only for a command without resume_options")
        return why


def _acp(v: _Validator, table: Mapping[str, Any]) -> AcpSpec:
    """``[acp]``: the command, and each choice from its closed set."""
    extra: dict[str, Any] = {}
    for key, choices in (("cancel", ACP_CANCELS), ("resume_method", ACP_RESUME_METHODS),
                         ("permission", ACP_PERMISSIONS), ("reader", ACP_READERS)):
        extra[key] = v.string(table, key, default=choices[0], item=f"acp.{key}")
        if extra[key] not in choices:
            v.fail(f"acp.{key}", f"{extra[key]!r} is not one of {', '.join(choices)}")
    if "client_capabilities" in table:
        extra["client_capabilities"] = v.table(table, "client_capabilities", item="acp.client_capabilities")
    spec: AcpSpec = v.command_spec(table, "acp", AcpSpec, extra)
    return spec


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

    for section in ("headless", "interactive"):
        walk(data.get(section, {}))
    return found


__all__ = ["BUDGET_KEYS", "BUILTIN_DIR", "KEY_NAMES", "OPTIONS", "PLACEHOLDERS", "WIRE_APIS", "Budgets", "CommandSpec",
           "Interactive", "MissingValue", "Profile", "ProfileError", "SessionSpec", "agent_binary", "base_values",
           "builtin_names", "fill", "load_profile", "parse_profile", "template_names"]
