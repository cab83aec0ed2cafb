"""The profile file's schema: one msgspec Struct per TOML table, each taking only its own
keys with their types. Decoding a parsed profile into :class:`ProfileFile` refuses an unknown
key, a missing required key or a value of the wrong type, and :func:`decode` says which item
(``files[2].path``, ``headless.command``) in the words a profile author reads; what types
cannot say (a regex that compiles, a placeholder that exists, a signal name) is checked after,
in ``harness.profiles``. Tables whose keys are the author's own names (``[env]``, a command's
``adapter_options``, ``exit_codes``, ``not_run``) are typed ``dict[str, Any]`` here and
checked key by key there, so an error names the key.

A new table is a Struct here and a field of :class:`ProfileFile`; the reference in
``docs/profiles.md`` lists every field (a test holds it to this module).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from harness.profiles.model import Install

MAX_BUDGET_S = 3600.0  # a step budget longer than an hour hides a hang rather than waiting for an agent
Seconds = Annotated[float, msgspec.Meta(gt=0, le=MAX_BUDGET_S)]


class _Table(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A profile table: its keys, nothing else."""


class CommandTable(_Table, frozen=True, forbid_unknown_fields=True):
    command: list[str] = []
    timeout_options: list[str] = []
    resume_options: list[str] = []
    first_options: list[str] = []
    adapter_options: dict[str, Any] = {}


class HeadlessTable(CommandTable, frozen=True, forbid_unknown_fields=True):
    exit_codes: dict[str, Any] = {}
    stdin: str | None = None
    no_resume: str | None = None


class InteractiveTable(CommandTable, frozen=True, forbid_unknown_fields=True):
    prompt_regex: str | None = None  # required: said by the checks, after the types
    turn_ended_regex: str = ""
    busy_regex: str = ""
    queued_regex: str = ""
    cancel_command: str = ""
    stop_keys: tuple[str, ...] = ("esc",)
    quit_keys: tuple[str, ...] = ("ctrl-d",)
    match_on: str = "stream"


class AcpTable(_Table, frozen=True, forbid_unknown_fields=True):
    """[acp]: the agent's ACP server command and how the client plays it (docs/acp.md)."""

    command: list[str] = []
    adapter_options: dict[str, Any] = {}
    cancel: str = "session/cancel"
    resume_method: str = "session/load"
    permission: str = "allow"
    reader: str = "acp-replay"
    call_id_regex: str = ""
    client_capabilities: dict[str, Any] | None = None


class StopTable(_Table, frozen=True, forbid_unknown_fields=True):
    signal: str = "SIGINT"


class WatchdogTable(_Table, frozen=True, forbid_unknown_fields=True):
    signal: str = "SIGTERM"


class SessionTable(_Table, frozen=True, forbid_unknown_fields=True):
    stderr_regex: str | None = None
    stdout_regex: str | None = None
    path_regex: str | None = None
    log_glob: str | None = None


class InprocTable(_Table, frozen=True, forbid_unknown_fields=True):
    factory: str | None = None


class FailpointsTable(_Table, frozen=True, forbid_unknown_fields=True):
    env: str | None = None
    list_command: list[str] = []


class RepairTable(_Table, frozen=True, forbid_unknown_fields=True):
    outcome_unknown: str | None = None
    not_started: str | None = None


class TimeoutsTable(_Table, frozen=True, forbid_unknown_fields=True):
    startup: Seconds | None = None
    turn: Seconds | None = None
    settle: Seconds | None = None
    min_run_timeout: Seconds | None = None


class FinishActionTable(_Table, frozen=True, forbid_unknown_fields=True):
    tool: Any = None  # its types are fake_server.scenario_loader.parse_finish_action's, shared with scenarios
    arguments: Any = None
    shell: Any = None


class ShellTable(_Table, frozen=True, forbid_unknown_fields=True):
    fence: str | None = None


class FileTable(_Table, frozen=True, forbid_unknown_fields=True):
    path: str | None = None  # both required: said by the checks, with what a file needs
    content: str | None = None


class ProfileFile(_Table, frozen=True, forbid_unknown_fields=True):
    name: str
    description: str = ""
    agent: str | None = None
    version_command: list[str] = []
    adapters: tuple[str, ...] = ("http",)
    wire_api: str = "chat"
    model: str = "stopbench-1"
    log_reader: str = "none"
    fresh_home: bool = True
    streams: bool = True
    sequential_tools: bool = False
    env: dict[str, Any] = {}
    adapter_env: dict[str, Any] = {}
    files: list[FileTable] = []
    not_run: dict[str, Any] = {}
    headless: HeadlessTable | None = None
    interactive: InteractiveTable | None = None
    acp: AcpTable | None = None
    inproc: InprocTable | None = None
    stop: StopTable = StopTable()
    watchdog: WatchdogTable = WatchdogTable()
    session: SessionTable = SessionTable()
    failpoints: FailpointsTable = FailpointsTable()
    repair: RepairTable = RepairTable()
    timeouts: TimeoutsTable = TimeoutsTable()
    finish_action: FinishActionTable | None = None
    shell: ShellTable = ShellTable()
    side_requests: tuple[str, ...] = ()
    install: Install | None = None


# The Struct of each table, by the key it sits under (``files``: each [[files]] entry).
TABLES: dict[str, type[msgspec.Struct]] = {
    "headless": HeadlessTable, "interactive": InteractiveTable, "acp": AcpTable, "stop": StopTable,
    "watchdog": WatchdogTable, "session": SessionTable, "inproc": InprocTable, "failpoints": FailpointsTable,
    "repair": RepairTable,
    "timeouts": TimeoutsTable, "finish_action": FinishActionTable, "shell": ShellTable, "files": FileTable,
    "install": Install,
}
_TYPE_WORDS = {"str": "a string", "bool": "true or false", "object": "a table", "int": "an integer"}
_AT = re.compile(r"^(?P<problem>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)


class SchemaError(ValueError):
    """A profile the schema refuses: the item and the problem."""

    def __init__(self, item: str, problem: str):
        super().__init__(f"{item}: {problem}")
        self.item, self.problem = item, problem


def fields(struct: type[msgspec.Struct]) -> tuple[str, ...]:
    """The keys a table takes (``Install``'s ``name`` is the profile's, never written)."""
    return tuple(f for f in struct.__struct_fields__ if not (struct is Install and f == "name"))


def decode(data: Mapping[str, Any]) -> ProfileFile:
    """``data`` as a :class:`ProfileFile`; :class:`SchemaError` names the item and the problem."""
    try:
        return msgspec.convert(data, ProfileFile)
    except msgspec.ValidationError as exc:
        raise _explain(str(exc), data) from None


def _explain(message: str, data: Mapping[str, Any]) -> SchemaError:
    """msgspec's words (``Expected `str`, got `int` - at `$.files[0].path```) in a profile's."""
    m = _AT.match(message)
    assert m is not None
    problem, path = m["problem"], m["path"] or ""
    steps = re.findall(r"\.(\w+)|\[(\d+|\.\.\.)\]", path)
    keys = [key or (f"[{int(index) + 1}]" if index.isdigit() else "") for key, index in steps]
    section = next((k for k in keys if k in TABLES), None)
    item = ".".join(keys).replace(".[", "[")
    if unknown := re.match(r"Object contains unknown field `(.+)`", problem):
        struct = TABLES[keys[0]] if keys else ProfileFile
        where = (f" in [[{keys[0]}]]" if keys[0] == "files" else f" in [{keys[0]}]") if keys else ""
        return SchemaError(f"{item}.{unknown[1]}" if item else unknown[1],
                           f"unknown key{where} (known: {', '.join(sorted(fields(struct)))})")
    if missing := re.match(r"Object missing required field `(.+)`", problem):
        return SchemaError(f"{item}.{missing[1]}" if item else missing[1], "required")
    if section == "timeouts" and len(keys) == 2:
        value = data.get("timeouts", {}).get(keys[-1]) if isinstance(data.get("timeouts"), dict) else None
        return SchemaError(item, f"must be a number of seconds above 0 and at most {MAX_BUDGET_S:g}, not {value!r}")
    expected = re.match(r"Expected `([^`]+)`(?:, got `([^`]+)`)?", problem)
    if expected is None:
        return SchemaError(item or "profile", problem.replace("`", ""))
    want, got = expected[1].replace(" | null", ""), expected[2]
    if keys and keys[-1].startswith("[") and want == "str":  # an element of a list of strings
        return SchemaError(item.rsplit("[", 1)[0], f"must be a list of strings (item {keys[-1][1:-1]} is {got})")
    if want == "array":
        return SchemaError(item, "must be an array of [[files]] tables" if item == "files"
                           else "must be a list of strings")
    return SchemaError(item, f"must be {_TYPE_WORDS.get(want, want)}" + (f", got {got}" if got else ""))
