"""The values a profile describes: commands with their option lists, the interactive
mode, session discovery, budgets, and the templates' placeholders. ``harness.profiles``
reads and validates profile files into these; drivers and the runner use them."""

from __future__ import annotations

import dataclasses
import signal
import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from fake_server.scenario import FinishAction, Scenario
from harness.agents.install import NotInstalled, agent_pin, binary, installed_path
from harness.model.drivers import DRIVERS

PLACEHOLDERS = frozenset(
    {
        "base_url",  # OpenAI-style base URL of the fake server (…/v1)
        "url",  # the fake server's root URL
        "api_key",  # the run's unique canary key
        "model",
        "sessions_dir",
        "cwd",
        "home",
        "prompt",
        "timeout",
        "session_id",
        "scenario",  # path of the task's scenario file
        "adapter",
        "bindir",  # directory of the running Python's scripts (the venv's bin/)
        "python",  # the running interpreter
        "profile_dir",  # the folder of the profile file (helpers shipped beside it), absolute
        "session_uuid",  # a session id the harness chooses and hands to the agent (--session-id …)
        "agent_bin",  # the program of the installed real agent the profile names (agent = "codex")
        "agent_dir",  # … and its install folder (what its [install] warm_up unpacked is under cache/)
        "agent_version",  # … and its version (the one asked for, --agent NAME@VERSION, else the pin)
    }
)
OPTIONS = "{options}"  # a list element replaced by the spliced option lists
KEY_NAMES = frozenset({"esc", "ctrl-c", "ctrl-d", "enter"})
class MissingValue(KeyError):
    pass


@dataclass(frozen=True)
class CommandSpec:
    """A command template plus the option lists a driver splices in at ``{options}``."""

    command: tuple[str, ...]
    timeout_options: tuple[str, ...] = ()
    resume_options: tuple[str, ...] = ()
    first_options: tuple[str, ...] = ()  # only for a session's first run (e.g. --session-id {session_uuid})
    adapter_options: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    stdin: str | None = None  # what a headless run is given on stdin (then closed); None: /dev/null
    # Why the agent cannot resume a session this way (Cline: only its TUI resumes); then a task
    # that resumes (a second turn, a restart) is not run on this driver, with this reason.
    no_resume: str | None = None

    @property
    def needs_session_id(self) -> bool:
        """Resuming names the session (``--resume {session_id}``) rather than "the last" (``-c``)."""
        return any("session_id" in template_names(o) for o in self.resume_options)

    def render(self, values: Mapping[str, Any], *, timeout: bool = False, resume: bool = False) -> list[str]:
        options: list[str] = []
        if timeout:
            options += self.timeout_options
        options += self.resume_options if resume else self.first_options
        options += self.adapter_options.get(str(values.get("adapter")), ())
        argv: list[str] = []
        for part in self.command:
            if part == OPTIONS:
                argv += [fill(o, values) for o in options]
            else:
                argv.append(fill(part, values))
        return argv


@dataclass(frozen=True)
class Interactive(CommandSpec):
    prompt_regex: str = "(?m)^> "
    # Named groups: reason and source, or a group named after the reason it tells
    # ((?P<aborted>Interrupted)|(?P<completed>Done)) for a UI whose wording differs by reason.
    turn_ended_regex: str = ""
    queued_regex: str = ""
    cancel_command: str = ""
    stop_keys: tuple[str, ...] = ("esc",)
    quit_keys: tuple[str, ...] = ("ctrl-d",)
    # Full-screen UIs: match the prompt and the busy indicator on the rendered screen (pyte),
    # not the raw stream; a turn has ended when its turn-ended line shows below the input, or,
    # for a UI with no such line, when the busy indicator, seen since the input, is gone again.
    # Enter is its own keystroke once the typed text is on screen (some UIs take one write as a
    # paste).
    match_on: str = "stream"  # "stream" | "screen"
    busy_regex: str = ""


# ACP: how Stop is sent, how a session is taken up again after a kill, and how a tool's
# permission request is answered (docs/acp.md).
ACP_CANCELS = ("session/cancel", "$/cancel_request")
ACP_RESUME_METHODS = ("session/load", "session/resume")
ACP_PERMISSIONS = ("allow", "reject")
# Which store the log checks read on an acp run: what session/load replays (any ACP agent), or
# the agent's own store through the profile's log_reader.
ACP_READERS = ("acp-replay", "native")


@dataclass(frozen=True)
class AcpSpec(CommandSpec):
    """The agent's ACP server command (JSON-RPC over its stdio) and how the client plays it."""

    cancel: str = "session/cancel"
    resume_method: str = "session/load"
    permission: str = "allow"
    reader: str = "acp-replay"
    # Where the agent's toolCallId holds the model's call id (group ``id``), for an agent that
    # mints its own per process (kimi-cli: "<uuid>/<call id>"); empty: the toolCallId is it.
    call_id_regex: str = ""
    client_capabilities: Mapping[str, Any] = field(default_factory=lambda: {
        "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False})


@dataclass(frozen=True)
class Budgets:
    """How long each kind of step may take with this agent, in seconds: the failsafes a step
    runs under. Real CLIs take 10 s to start under load, so a profile can raise them."""

    startup: float = 30.0  # spawn → the agent is ready (its prompt, its session line)
    turn: float = 60.0  # a turn's input → the beacon a step waits for
    settle: float = 30.0  # Stop, a timeout or a turn's end → the settlement
    # The shortest run timeout T the agent can be given: a task's shorter T becomes this, for an
    # agent that takes longer than T just to start (a T it can never reach tests nothing).
    min_run_timeout: float = 0.0


BUDGET_KEYS = ("startup", "turn", "settle", "min_run_timeout")


@dataclass(frozen=True)
class SessionSpec:
    """Where the agent's session id and store are found (each agent shows them differently)."""

    stderr_regex: str | None = None  # (?P<id>…) and optionally (?P<path>…), printed any time, even at exit
    stdout_regex: str | None = None
    path_regex: str | None = None  # (?P<id>…) over the path of the file log_glob finds
    log_glob: str | None = None
    chosen: bool = False  # the harness picks the id and hands it over ({session_uuid})


REGISTRIES = ("npm", "pypi")


class Install(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A profile's ``[install]`` table: how ``stopbench agents install`` gets the real agent the
    profile drives. A profile with one is an installable agent, named after the profile.

    For Codex and Copilot CLI the program is the native binary the npm wrapper would spawn:
    signals sent to the wrapper do not reach it."""

    registry: str  # "npm" | "pypi"
    package: str
    version: str  # the pin
    program: tuple[str, ...]  # glob patterns relative to the install folder, tried in order
    python: str | None = None  # pip agents: a version range such as ">=3.10,<3.13"
    extras: tuple[str, ...] = ()  # further pip requirements, pinned
    # Arguments the program is run with once, at install, with its cache (XDG_CACHE_HOME) in the
    # install folder: what it unpacks on a first run is kept there (``cache/``), so runs with a
    # fresh HOME need not unpack it again (profiles point at it through ``{agent_dir}``).
    warm_up: tuple[str, ...] = ()
    description: str = ""
    store: str = ""  # where its sessions live, in words (the docs' table)
    name: str = ""  # the profile's name, filled in when the profile is read

    def requirement(self, version: str | None = None) -> str:
        """What the registry's client is asked for: ``pkg@1.2`` (npm) or ``pkg==1.2`` (pip)."""
        version = version or self.version
        return f"{self.package}@{version}" if self.registry == "npm" else f"{self.package}=={version}"


@dataclass(frozen=True)
class Profile:
    name: str
    path: str
    description: str = ""
    adapters: tuple[str, ...] = ("http",)
    wire_api: str = "chat"
    model: str = "stopbench-1"
    log_reader: str = "none"
    fresh_home: bool = True
    env: Mapping[str, str] = field(default_factory=dict)
    # Further environment for one adapter only (an agent whose wire is chosen by environment).
    adapter_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    files: tuple[Mapping[str, str], ...] = ()  # {path, content} written before the agent starts
    version_command: tuple[str, ...] = ()
    headless: CommandSpec | None = None
    exit_codes: Mapping[str, int] = field(default_factory=dict)
    interactive: Interactive | None = None
    acp: AcpSpec | None = None
    stop_signal: int = signal.SIGINT
    agent: str | None = None  # the installable agent (a built-in profile with [install]) this profile drives
    install: Install | None = None  # [install]: this profile is an installable agent itself
    agent_version: str | None = None  # … the installed version of it to drive (--agent NAME@VERSION); None: its pin
    sequential_tools: bool = False  # declared: a response's tool calls run one after another, in order
    session: SessionSpec = field(default_factory=SessionSpec)
    streams: bool = True  # False: the agent's model requests are not streamed (waits for chunks wait for the answer)
    inproc_factory: str | None = None
    failpoints_env: str | None = None
    failpoints_list_command: tuple[str, ...] = ()
    repair_outcome_unknown: str | None = None  # the agent's own wording for TOOL_OUTCOME_UNKNOWN (C14)
    repair_not_started: str | None = None  # … and for TOOL_NOT_STARTED
    budgets: Budgets = field(default_factory=Budgets)
    watchdog_signal: int = signal.SIGTERM  # what CI's watchdog sends an agent without a timeout option
    shell_fence: str | None = None  # no tool calling: the model's shell commands come as fenced blocks of this language
    # Texts that mark the agent's own side requests (a suggestion of what to type next, a title):
    # served the canned side answer and never counted among the task's requests.
    side_requests: tuple[str, ...] = ()
    not_run: Mapping[str, str] = field(default_factory=dict)  # task name → why it cannot apply to this agent
    finish_action: FinishAction | None = None  # how the agent is told a task is done, if only its own action ends it
    warnings: tuple[str, ...] = ()  # allowed but unwise (the key on the command line): said at load and by doctor

    def scenario_for(self, scenario: Scenario) -> Scenario:
        """A task's scenario as this agent must be served it: the same conversation, with
        the agent's own way of ending a task where a response ends one, and its shell
        commands as fenced blocks for an agent that calls no tools, and its own side requests
        told apart from the task's."""
        if self.finish_action is None and self.shell_fence is None and not self.side_requests:
            return scenario
        return dataclasses.replace(scenario, finish_action=self.finish_action or scenario.finish_action,
                                   shell_fence=self.shell_fence or scenario.shell_fence,
                                   side_requests=(*scenario.side_requests, *self.side_requests))

    def drivers(self) -> list[str]:
        """The drivers this profile can be driven by: those whose section it has
        (``harness.model.drivers``)."""
        sections = {"inproc": self.inproc_factory, "headless": self.headless, "interactive": self.interactive,
                    "acp": self.acp}
        return [name for name, spec in DRIVERS.items() if sections.get(spec.section)]


def fill(template: str, values: Mapping[str, Any]) -> str:
    """Substitute ``{name}`` placeholders; a placeholder without a value is an error."""
    out = []
    for literal, name, spec, _ in string.Formatter().parse(template):
        out.append(literal)
        if name is None:
            continue
        if name not in values or values[name] is None:
            raise MissingValue(name)
        out.append(format(values[name], spec or ""))
    return "".join(out)


def template_names(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def base_values(profile: Profile) -> dict[str, str]:
    """Placeholder values that do not depend on the run. ``{agent_bin}`` is there only when
    the profile's real agent is installed (``agent_binary`` says why not)."""
    values = {"bindir": str(Path(sys.executable).parent), "python": sys.executable,
              "profile_dir": str(Path(profile.path).resolve().parent)}
    if profile.agent:
        try:
            values["agent_bin"] = str(agent_binary(profile))
            values["agent_dir"] = str(installed_path(profile.agent, profile.agent_version))
            values["agent_version"] = profile.agent_version or agent_pin(profile.agent)
        except NotInstalled:
            pass
    return values


def agent_binary(profile: Profile) -> Path:
    """The installed program of the profile's real agent, at the version asked for (else its
    pin); ``NotInstalled`` says how to install it."""
    assert profile.agent is not None
    return binary(profile.agent, profile.agent_version)
