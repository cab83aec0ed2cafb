"""Scenario data model: the frames, responses and scenario a fake server plays.

A scenario is data, not code, so that a task can say exactly what the "model" does and
two runs of it stream the same thing. This module is what a scenario *is*; reading one from
TOML, and refusing what is not one, is ``fake_server.scenario_schema`` (its keys and types) and
``fake_server.scenario_loader`` (the rest).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .canonical import Canonical, last_text, last_turn

DEFAULT_CHUNK_CHARS = 16


class ScenarioError(ValueError):
    """A scenario file is unusable: ``file``, ``item`` and ``problem`` say where and why."""

    def __init__(self, file: str, item: str, problem: str):
        self.file, self.item, self.problem = file, item, problem
        super().__init__(f"{file}: {item}: {problem}")


# --- frames -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Text:
    text: str
    chunk: int = DEFAULT_CHUNK_CHARS
    interval_s: float = 0.0


@dataclass(frozen=True)
class Reasoning:
    text: str
    chunk: int = DEFAULT_CHUNK_CHARS
    interval_s: float = 0.0


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str          # JSON text of an object
    chunk: int = DEFAULT_CHUNK_CHARS
    interval_s: float = 0.0


@dataclass(frozen=True)
class Window:
    """A "bash window": the shell command runs ``python -m fake_server.window``."""
    id: str
    depth: int = 1
    fanout: int = 1
    ignore_term: bool = False
    escape: bool = False
    hold_s: float = 60.0
    marker: str | None = None


@dataclass(frozen=True)
class Shell:
    """Call the request's shell tool with ``command`` (or with a window program)."""
    command: str | None = None
    window: Window | None = None
    extra: dict = field(default_factory=dict)   # extra tool arguments, e.g. Codex yield_time_ms
    chunk: int = DEFAULT_CHUNK_CHARS
    interval_s: float = 0.0


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Stall:
    """Hold the stream open, sending nothing, until the client goes away."""


@dataclass(frozen=True)
class Disconnect:
    """Close the connection abruptly here (no terminator, no finish)."""


@dataclass(frozen=True)
class StreamError:
    """A mid-stream error event in the provider's own shape; the stream then ends."""
    kind: str = "server_error"
    message: str = "The server had an error while processing your request."


@dataclass(frozen=True)
class HttpError:
    """Refuse the request with an HTTP status and the provider's error body."""
    status: int
    message: str | None = None
    retry_after: float | None = None


@dataclass(frozen=True)
class Finish:
    reason: str | None = None   # None: tool_calls if the response called a tool, else stop
    input_tokens: int | None = None
    output_tokens: int | None = None


Frame = Text | Reasoning | ToolCall | Shell | Pause | Stall | Disconnect | StreamError | HttpError | Finish


# --- responses and scenario ---------------------------------------------------------------

@dataclass(frozen=True)
class Match:
    """Which requests a response answers. "Last" means the last turn: the last message that is
    not a system message, since agents add system messages after a user's or a tool's message
    (a reminder, a note) and the model is still answering that message."""
    last: str | None = None        # role of the request's last turn
    tools: bool | None = None      # whether the request offers any tool
    contains: str | None = None    # substring of the last turn's text

    def accepts(self, canonical: Canonical) -> bool:
        turn = last_turn(canonical)
        if self.last is not None and (turn is None or turn["role"] != self.last):
            return False
        if self.tools is not None and bool(canonical["tools"]) != self.tools:
            return False
        if self.contains is not None and (turn is None or self.contains not in turn["text"]):
            return False
        return True


@dataclass(frozen=True)
class Response:
    frames: tuple[Frame, ...]
    match: Match = Match()
    repeat: bool = False           # never used up (e.g. answers every title request)

    @property
    def scripts_shell(self) -> bool:
        """Whether it calls the shell, so that only a request offering a shell tool can take it."""
        return any(isinstance(f, Shell) for f in self.frames)

    @property
    def ends_turn(self) -> bool:
        """Whether it answers with text alone: the turn's end (where a finish action is called)."""
        return all(isinstance(f, (Text, Reasoning, Pause)) for f in self.frames)

    @property
    def chunks(self) -> int | None:
        """How many numbered chunks it streams, as the scenario alone fixes it; None when a
        shell call's arguments are the agent's tool's own shape (their length is not known)."""
        if any(isinstance(f, Shell) for f in self.frames):
            return None
        if any(isinstance(f, HttpError) for f in self.frames):
            return 0
        paced = [(f.arguments if isinstance(f, ToolCall) else f.text, f.chunk)
                 for f in self.frames if isinstance(f, (Text, Reasoning, ToolCall))]
        return sum(max(1, -(-len(text) // size)) for text, size in paced)


@dataclass(frozen=True)
class ShellToolOverride:
    name: str
    field: str = "command"
    argv: bool = False


@dataclass(frozen=True)
class FinishAction:
    """How an agent that ends a task only through an action of its own is told the task is
    done (mini-swe-agent runs a submit command, Cline calls ``submit_and_exit``, gptme
    ``complete``, OpenHands ``finish``): every response that would end its turn with text
    alone then also calls this — a tool of the request's (``tool``, with ``arguments``, where
    ``{text}`` in a string stands for the response's text) or the shell (``shell``)."""
    tool: str | None = None
    arguments: tuple[tuple[str, Any], ...] = ()
    shell: str | None = None

    def arguments_for(self, text: str) -> dict:
        return {k: v.replace("{text}", text) if isinstance(v, str) else v for k, v in self.arguments}


@dataclass(frozen=True)
class Scenario:
    name: str
    responses: tuple[Response, ...]
    model: str | None = None
    shell_tool: ShellToolOverride | None = None
    finish_action: FinishAction | None = None
    side_requests: tuple[str, ...] = ()    # substrings that mark a request as a side request
    shell_fence: str | None = None         # shell frames travel as fenced blocks of this language (fence.py)
    source: str = "<inline>"

    @property
    def scripts_shell(self) -> bool:
        return any(r.scripts_shell for r in self.responses)

    @property
    def windows(self) -> frozenset[str] | None:
        """The ids of the bash windows its shell frames open; None when a plain shell command
        may start one itself (``python -m fake_server.window``)."""
        shells = [f for r in self.responses for f in r.frames if isinstance(f, Shell)]
        if any(f.command and "fake_server.window" in f.command for f in shells):
            return None
        return frozenset(f.window.id for f in shells if f.window is not None)

    def side_pattern(self, canonical: Canonical) -> str | None:
        """The first ``side_requests`` pattern found in the request's last user or last system
        text (a title request puts its instruction in either), or None."""
        texts = (last_text(canonical, "user"), last_text(canonical, "system"))
        return next((p for p in self.side_requests if any(p in t for t in texts)), None)
