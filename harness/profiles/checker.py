"""What a profile's schema cannot say, checked item by item (``ProfileChecker``).

The schema (``harness.profiles.schema``) refuses unknown keys and wrong types; this checks the
rest — a placeholder where it can have no value, a regex that does not compile, a relative
program, a key on the command line, an [install] table that cannot be installed — and raises
the first problem as a ``ProfileError`` naming the file and the item.
"""

from __future__ import annotations

import dataclasses
import re
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

import msgspec

from fake_server.scenario import FinishAction, ScenarioError
from fake_server.scenario_loader import parse_finish_action
from harness.agents.pythons import parse_python_spec
from harness.contract import EXIT_CODE_FOR_REASON, TURN_END_REASONS
from harness.datafile import DataFileError
from harness.profiles import schema
from harness.profiles.model import (
    ACP_CANCELS,
    ACP_PERMISSIONS,
    ACP_READERS,
    ACP_RESUME_METHODS,
    KEY_NAMES,
    OPTIONS,
    PLACEHOLDERS,
    REGISTRIES,
    AcpSpec,
    CommandSpec,
    Install,
    Interactive,
    SessionSpec,
    template_names,
)
from harness.readers import READERS, reader_names

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



_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class ProfileChecker:
    """What the schema's types cannot say, one method per item; the first problem is raised,
    naming the file and the item."""

    def __init__(self, path: str | Path, installable: Callable[[], frozenset[str]]):
        self.path = path
        self.installable = installable  # the names of the agents a built-in profile can install
        self.warnings: list[str] = []  # what is allowed but unwise, said at load and by doctor
        self.uses_agent: str | None = None  # the first item naming {agent_bin}, {agent_dir} or {agent_version}

    def fail(self, item: str, problem: str) -> NoReturn:
        raise ProfileError(self.path, item, problem)

    def one_of(self, item: str, value: str, known: list[str]) -> str:
        if value not in known:
            self.fail(item, f"{value!r} is not one of {', '.join(known)}")
        return value

    def reader(self, name: str) -> str:
        if name in READERS.problems:  # a plug-in that failed to load: its own words
            self.fail("log_reader", READERS.problems[name])
        return self.one_of("log_reader", name, reader_names())

    def adapters(self, raw: schema.ProfileFile) -> tuple[str, ...]:
        if not _PLAIN.fullmatch(raw.name):
            self.fail("name", f"{raw.name!r} is not a plain identifier (letters, digits, . _ -)")
        if not raw.adapters:
            self.fail("adapters", "at least one adapter is needed")
        for adapter in raw.adapters:
            if not _PLAIN.fullmatch(adapter):
                self.fail("adapters", f"{adapter!r} is not a plain name (letters, digits, . _ -)")
        if len(set(raw.adapters)) != len(raw.adapters):
            self.fail("adapters", "an adapter is listed twice (each would be run twice under one name)")
        return tuple(raw.adapters)

    def signal(self, item: str, name: str) -> int:
        try:
            return int(signal.Signals[name])
        except KeyError:
            self.fail(item, f"{name!r} is not a signal name (e.g. SIGINT, SIGTERM)")

    def model(self, model: str) -> str:
        if not model.strip() or "\x00" in model:
            self.fail("model", f"{model!r} is not a model name the agent can be handed")
        return model

    def env_name(self, item: str, name: str | None) -> str | None:
        if name is not None and not _ENV_NAME.fullmatch(name):
            self.fail(item, f"{name!r} is not an environment variable name (letters, digits, _)")
        return name

    def regex(self, item: str, pattern: str, groups: set[str]) -> None:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            self.fail(item, f"bad regular expression: {exc}")
        missing = groups - set(compiled.groupindex)
        if missing:
            self.fail(item, f"needs the named group(s) {', '.join(sorted(missing))}")

    def templates(self, item: str, values: list[str]) -> tuple[str, ...]:
        for value in values:
            self.placeholders(item, value)
        return tuple(values)

    def placeholders(self, item: str, template: str) -> None:
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

    def environment(self, table: Mapping[str, Any], item: str) -> dict[str, str]:
        """Environment variables whose values are templates."""
        for key, value in table.items():
            if not _ENV_NAME.fullmatch(key):
                self.fail(f"{item}.{key}", f"{key!r} is not an environment variable name (letters, digits, _)")
            if not isinstance(value, str):
                self.fail(f"{item}.{key}", "must be a string")
            self.placeholders(f"{item}.{key}", value)
        return dict(table)

    def adapter_env(self, table: Mapping[str, Any], adapters: tuple[str, ...]) -> dict[str, dict[str, str]]:
        """Further environment for one adapter only (an agent whose wire is chosen by environment)."""
        out = {}
        for adapter, env in table.items():
            if adapter not in adapters:
                self.fail(f"adapter_env.{adapter}", f"not one of the profile's adapters ({', '.join(adapters)})")
            if not isinstance(env, dict):
                self.fail(f"adapter_env.{adapter}", "must be a table")
            out[adapter] = self.environment(env, f"adapter_env.{adapter}")
        return out

    def command(self, table: schema.CommandTable, section: str) -> dict[str, Any]:
        """What a headless and an interactive command have alike, checked."""
        command = self.templates(f"{section}.command", table.command)
        if not command:
            self.fail(f"{section}.command", "required: the command as a list of strings")
        if not command[0].strip():
            self.fail(f"{section}.command", "its first element, the program, is empty")
        if "/" in command[0] and not command[0].startswith(("/", "{")):
            self.fail(f"{section}.command", f"the program {command[0]!r} is a relative path, which would be looked "
                      "up from the run's fresh working folder: give an absolute path, a name on PATH, or "
                      "{profile_dir}/… for a program beside the profile")
        adapter_options = {}
        for adapter, options in table.adapter_options.items():
            item = f"{section}.adapter_options.{adapter}"
            if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
                self.fail(item, "must be a list of strings")
            adapter_options[adapter] = self.templates(item, options)
        return {"command": command, "adapter_options": adapter_options,
                **{key: self.templates(f"{section}.{key}", getattr(table, key))
                   for key in ("timeout_options", "resume_options", "first_options")}}

    def headless(self, table: schema.HeadlessTable | None) -> tuple[CommandSpec | None, dict[str, int]]:
        if table is None:
            return None, {}
        spec = self.command(table, "headless")
        if not any("{prompt}" in c for c in spec["command"]):
            self.fail("headless.command", "must pass {prompt}")
        if table.stdin is not None:
            self.placeholders("headless.stdin", table.stdin)
        if table.no_resume is not None and (not table.no_resume.strip() or table.resume_options):
            self.fail("headless.no_resume", "a reason, and only for a command without resume_options")
        exit_codes: dict[str, int] = {}
        for reason, code in table.exit_codes.items():
            item = f"headless.exit_codes.{reason}"
            if reason not in EXIT_CODE_FOR_REASON:
                self.fail(item, f"{reason!r} is not a settlement reason ({', '.join(EXIT_CODE_FOR_REASON)})")
            if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
                self.fail(item, f"must be an exit code from 0 to 255, not {code!r}")
            exit_codes[reason] = code
        return CommandSpec(**spec, stdin=table.stdin, no_resume=table.no_resume), exit_codes

    def acp(self, table: schema.AcpTable | None) -> AcpSpec | None:
        """``[acp]``: the command, and each choice from its closed set."""
        if table is None:
            return None
        spec = AcpSpec(**self.command(schema.CommandTable(command=table.command,
                                                          adapter_options=table.adapter_options), "acp"),
                       cancel=self.one_of("acp.cancel", table.cancel, list(ACP_CANCELS)),
                       resume_method=self.one_of("acp.resume_method", table.resume_method, list(ACP_RESUME_METHODS)),
                       permission=self.one_of("acp.permission", table.permission, list(ACP_PERMISSIONS)),
                       reader=self.one_of("acp.reader", table.reader, list(ACP_READERS)),
                       call_id_regex=table.call_id_regex)
        if table.call_id_regex:
            self.regex("acp.call_id_regex", table.call_id_regex, groups={"id"})
        if table.client_capabilities is not None:
            spec = dataclasses.replace(spec, client_capabilities=table.client_capabilities)
        return spec

    def interactive(self, table: schema.InteractiveTable | None) -> Interactive | None:
        if table is None:
            return None
        if table.prompt_regex is None:
            self.fail("interactive.prompt_regex", "required")
        if table.match_on not in ("stream", "screen"):
            self.fail("interactive.match_on", "one of stream, screen")
        if not (table.turn_ended_regex or table.busy_regex):
            self.fail("interactive.turn_ended_regex",
                      "required (or busy_regex, for a UI that shows nothing when a turn ends)")
        for key in ("prompt_regex", "turn_ended_regex", "queued_regex", "busy_regex"):
            if getattr(table, key):
                self.regex(f"interactive.{key}", getattr(table, key), groups=set())
        unknown_groups = sorted(set(re.compile(table.turn_ended_regex).groupindex)
                                - {"reason", "source", *TURN_END_REASONS})
        if unknown_groups:
            self.fail("interactive.turn_ended_regex", f"unknown group {unknown_groups[0]!r} (reason, source, or a "
                      f"group named after the reason it tells: {', '.join(TURN_END_REASONS)})")
        for key in table.stop_keys + table.quit_keys:
            if key not in KEY_NAMES:
                self.fail("interactive.stop_keys", f"{key!r} is not a known key ({', '.join(sorted(KEY_NAMES))})")
        return Interactive(**self.command(table, "interactive"), prompt_regex=table.prompt_regex,
                           turn_ended_regex=table.turn_ended_regex, match_on=table.match_on,
                           busy_regex=table.busy_regex, queued_regex=table.queued_regex,
                           cancel_command=table.cancel_command, stop_keys=tuple(table.stop_keys),
                           quit_keys=tuple(table.quit_keys))

    def session(self, table: schema.SessionTable, *, chosen: bool) -> SessionSpec:
        for key in ("stderr_regex", "stdout_regex", "path_regex"):
            if getattr(table, key):
                self.regex(f"session.{key}", getattr(table, key), groups={"id"})
        if table.log_glob:
            self.placeholders("session.log_glob", table.log_glob)
        return SessionSpec(stderr_regex=table.stderr_regex, stdout_regex=table.stdout_regex,
                           path_regex=table.path_regex, log_glob=table.log_glob, chosen=chosen)

    def files(self, raw: list[schema.FileTable], *, fresh_home: bool) -> tuple[dict[str, str], ...]:
        """``[[files]]``: written into the run's fresh HOME only. With ``fresh_home = false``
        ``{home}`` is the user's own HOME, where a profile's file would overwrite theirs
        (``.bashrc``) and leave the run's key behind: refused."""
        files: list[dict[str, str]] = []
        for n, f in enumerate(raw, 1):
            item = f"files[{n}]"
            if f.path is None or f.content is None:
                self.fail(item, "each file needs string 'path' and 'content'")
            if not fresh_home:
                self.fail(item, f"{f.path!r} would be written into your own HOME (fresh_home = false) and "
                                "overwrite your file; files are written only into a fresh HOME")
            if not f.path.startswith("{home}/"):
                self.fail(f"{item}.path", "must start with {home}/ (files are written into the run's fresh HOME)")
            if ".." in Path(f.path).parts:
                self.fail(f"{item}.path", "may not climb out of the fresh HOME with '..'")
            if any(f.path == g["path"] for g in files):
                self.fail(f"{item}.path", f"{f.path!r} is written by an earlier [[files]] entry already")
            self.placeholders(f"{item}.path", f.path)
            self.placeholders(f"{item}.content", f.content)
            files.append({"path": f.path, "content": f.content})
        return tuple(files)

    def factory(self, factory: str | None) -> str | None:
        if factory and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", factory):
            self.fail("inproc.factory", f"{factory!r} is not 'module.path:function'")
        return factory

    def finish_action(self, table: schema.FinishActionTable | None) -> FinishAction | None:
        if table is None:
            return None
        given = {k: v for k, v in msgspec.structs.asdict(table).items() if v is not None}
        try:
            return parse_finish_action(given, str(self.path))
        except ScenarioError as exc:
            self.fail(exc.item, exc.problem)

    def side_requests(self, texts: tuple[str, ...]) -> tuple[str, ...]:
        """Texts that mark the agent's side requests: each long enough to mark nothing else."""
        for n, text in enumerate(texts, start=1):
            if len(text.strip()) < 8:
                self.fail(f"side_requests[{n}]", f"{text!r} is too short to mark only a side request (8 characters "
                                                 "at least)")
        return texts

    def fence(self, fence: str | None) -> str | None:
        if fence is not None and not fence.isalnum():
            self.fail("shell.fence", f"must be a fence language such as 'bash', not {fence!r}")
        return fence

    def not_run(self, table: Mapping[str, Any]) -> dict[str, str]:
        for task, why in table.items():
            if not isinstance(why, str) or not why.strip():
                self.fail(f"not_run.{task}", "must say why the task cannot apply to this agent")
        return dict(table)

    def install(self, install: Install | None, name: str) -> Install | None:
        """``[install]``: the registry, package, pin and program of the agent this profile is."""
        if install is None:
            return None
        if install.registry not in REGISTRIES:
            self.fail("install.registry", f"{install.registry!r} is not one of {', '.join(REGISTRIES)}")
        if not install.program or any(p.startswith("/") or ".." in Path(p).parts for p in install.program):
            self.fail("install.program", "glob patterns relative to the install folder, at least one")
        if install.python is not None:
            if install.registry != "pypi":
                self.fail("install.python", "only a pip agent (registry = \"pypi\") has a Python range")
            try:
                parse_python_spec(install.python)
            except ValueError as exc:
                self.fail("install.python", str(exc))
        if install.name:
            self.fail("install.name", "not a key: the agent is named after its profile")
        return msgspec.structs.replace(install, name=name)

    def agent(self, agent: str | None, install: Install | None, name: str) -> str | None:
        """The installable agent the profile drives: its own with ``[install]``, else ``agent``."""
        if install is not None and agent not in (None, name):
            self.fail("agent", f"a profile with [install] drives its own agent, {name!r}, not {agent!r}")
        if install is not None:
            agent = name
        elif agent is not None and agent not in self.installable():
            self.fail("agent", f"{agent!r} is not an agent of the catalog: no built-in profile of that name has an "
                               f"[install] table (installable: {', '.join(sorted(self.installable()))})")
        if self.uses_agent and not agent:
            self.fail(self.uses_agent, "{agent_bin}, {agent_dir} and {agent_version} need agent = NAME (the "
                                       "installable agent they are of) or an [install] table")
        return agent
