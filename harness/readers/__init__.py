"""Session-store readers, by the name an agent profile gives (``log_reader = "contract-v1"``).

A reader owns its store's format (``harness.readers.base.Reader``). ``none`` is not a reader
but its absence: the agent is judged black-box, and log checks answer ``unknown`` for want
of a reader. A reader for another agent's store plugs in by adding an entry to ``READERS``;
that registry is the one list of reader names (profiles validate against it).
"""

from __future__ import annotations

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

READERS: dict[str, Reader] = {
    reader.name: reader
    for reader in (ContractV1Reader(), CodexRolloutReader(), ClaudeCodeReader(), QwenCodeReader(), OpenCodeReader(),
                   PiReader(), CopilotReader(), KiloReader(), ContinueReader(), GeminiCliReader(),
                   KimiCliReader(), LlmLogsReader(), GptmeReader(), OpenHandsReader(), AcpReplayReader())
}


def reader_names() -> list[str]:
    return sorted([*READERS, NO_READER])


class UnknownReader(LookupError):
    def __init__(self, name: str):
        super().__init__(f"unknown log reader {name!r} (known: {', '.join(reader_names())})")
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
