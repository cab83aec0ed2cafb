"""Session-store readers, by the name an agent profile gives (``log_reader = "contract-v1"``).

A reader owns its store's format (``harness.readers.base.Reader``). ``none`` is not a reader
but its absence: the agent is judged black-box, and log checks answer ``unknown`` for want
of a reader. ``READERS`` is the one list of reader names (profiles validate against it): the
built-in readers below, and those installed packages offer under the entry-point group
``stopbench.readers`` (``NAME = "package.module:ReaderClass"``), loaded the first time the
registry is asked. A plug-in that cannot be loaded, or is not a reader, is left out and said
(``READERS.problems``): only a profile naming it fails, with a message naming the
distribution and the entry point; every other command runs as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points

from harness.readers.acp_replay import NAME as ACP_REPLAY
from harness.readers.acp_replay import AcpReplayReader
from harness.readers.base import (
    CannotDamage,
    Damage,
    LogDamaged,
    Reader,
    UnknownVersion,
    capture,
    parse_capture,
)
from harness.readers.claude_code import ClaudeCodeReader
from harness.readers.codex_rollout import CodexRolloutReader
from harness.readers.continue_sessions import ContinueReader
from harness.readers.contract_v1 import ContractV1Reader
from harness.readers.copilot import CopilotReader
from harness.readers.gemini_cli import GeminiCliReader
from harness.readers.gptme import GptmeReader
from harness.readers.kilo import KiloReader
from harness.readers.kimi_cli import KimiCliReader
from harness.readers.llm_logs import LlmLogsReader
from harness.readers.opencode import OpenCodeReader
from harness.readers.openhands import OpenHandsReader
from harness.readers.pi import PiReader
from harness.readers.qwen_code import QwenCodeReader

NO_READER = "none"
PLUGIN_GROUP = "stopbench.readers"
# What a reader offers the runner and the checks (``Reader`` and ``LogFormat``).
_READER_METHODS = ("snapshot", "parse", "damage", "changed", "lost", "format_problems", "continuation_problems")


class _Registry(Mapping[str, Reader]):
    """The readers by name: the built-in ones, then the plug-ins' (loaded once, when first asked)."""

    def __init__(self, builtin: tuple[Reader, ...]):
        self._builtin = {reader.name: reader for reader in builtin}
        self._all: dict[str, Reader] | None = None
        self._problems: dict[str, str] = {}

    @property
    def plugins(self) -> frozenset[str]:
        """The names of the readers plug-ins added."""
        return frozenset(self._loaded()) - frozenset(self._builtin)

    @property
    def problems(self) -> Mapping[str, str]:
        """Plug-ins left out, by entry-point name: what is wrong, naming distribution and entry point."""
        self._loaded()
        return self._problems

    def _loaded(self) -> dict[str, Reader]:
        if self._all is None:
            found = dict(self._builtin)
            for point in entry_points(group=PLUGIN_GROUP):
                reader, problem = _load_plugin(point, found)
                if reader is None:
                    self._problems[point.name] = problem
                else:
                    found[point.name] = reader
            self._all = found
        return self._all

    def __getitem__(self, name: str) -> Reader:
        return self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def _load_plugin(point: EntryPoint, known: Mapping[str, Reader]) -> tuple[Reader | None, str]:
    """The reader an entry point names, or None and why not."""
    dist = point.dist.name if point.dist is not None else "an unnamed distribution"
    said = f"reader plug-in {point.name!r} of {dist} ({PLUGIN_GROUP}: {point.name} = {point.value!r})"
    try:
        loaded = point.load()
        reader = loaded() if isinstance(loaded, type) else loaded
    except Exception as exc:  # a plug-in's own fault, whatever it is: said, never raised here
        return None, f"{said} cannot be loaded: {type(exc).__name__}: {exc}"
    if point.name in known:
        return None, f"{said} is left out: {point.name!r} is a built-in reader's name"
    if getattr(reader, "name", None) != point.name:
        return None, f"{said} is not a reader named {point.name!r} (its name: {getattr(reader, 'name', None)!r})"
    missing = [m for m in _READER_METHODS if not callable(getattr(reader, m, None))]
    if missing or not isinstance(getattr(reader, "capabilities", None), frozenset):
        return None, f"{said} is not a reader: it lacks {', '.join(missing) or 'capabilities (a frozenset)'}"
    return reader, ""


READERS = _Registry((ContractV1Reader(), CodexRolloutReader(), ClaudeCodeReader(), QwenCodeReader(), OpenCodeReader(),
                     PiReader(), CopilotReader(), KiloReader(), ContinueReader(), GeminiCliReader(),
                     KimiCliReader(), LlmLogsReader(), GptmeReader(), OpenHandsReader(), AcpReplayReader()))


def reader_names() -> list[str]:
    return sorted([*READERS, NO_READER])


class UnknownReader(LookupError):
    def __init__(self, name: str):
        super().__init__(READERS.problems.get(name)
                         or f"unknown log reader {name!r} (known: {', '.join(reader_names())})")
        self.name = name


def get_reader(name: str) -> Reader | None:
    """The reader registered under ``name``; None for ``none``; ``UnknownReader`` otherwise."""
    if name == NO_READER:
        return None
    try:
        return READERS[name]
    except KeyError:
        raise UnknownReader(name) from None


__all__ = [
    "ACP_REPLAY",
    "NO_READER",
    "PLUGIN_GROUP",
    "READERS",
    "CannotDamage",
    "Damage",
    "LogDamaged",
    "UnknownVersion",
    "Reader",
    "UnknownReader",
    "capture",
    "get_reader",
    "parse_capture",
    "reader_names",
]
