"""Failpoints: named, deliberate breaks of one contract item each, off by default.

They exist so that stopbench can prove every check can say no: run the agent with a
failpoint on and the check it targets must fail. The set is read once, at start, from
``REFAGENT_FAILPOINTS`` (comma-separated) or ``--failpoints``; with none set, ``on()`` is a
lookup in an empty frozenset and nothing else changes. Each failpoint is tested where the
correct code lives, so the break is small and honest.
"""

from __future__ import annotations

import os

ENV_VAR = "REFAGENT_FAILPOINTS"

# name -> (contract checks it breaks, what the agent then does wrong)
CATALOG: dict[str, tuple[tuple[str, ...], str]] = {
    "no-tree-kill": (("C3",), "Stop kills only the tool's direct child, not its group or descendants"),
    "term-then-wait": (("C3",), "Stop sends SIGTERM to the tool's tree and waits a 2 s grace before SIGKILL"),
    "exit-1-on-timeout": (("C8",), "run --timeout exits 1 instead of 3"),
    "exit-0-on-stop": (("C8",), "run exits 0 after Stop (SIGINT/SIGTERM) instead of 3"),
    "drop-partial-text": (("C5",), "text streamed before Stop is discarded instead of committed"),
    "no-interrupted-flag": (("C5",), "a cut-off assistant message is written without interrupted: true"),
    "no-repair": (("C4",), "a dangling tool call is left without a result in the next request"),
    "drop-dangling-call": (("C4",), "a dangling tool call is deleted from the history instead of closed"),
    "repair-writes-disk": (("C2",), "reload writes the synthesized turn end into the log file"),
    "double-settle": (("C1",), "a stopped turn is settled twice (two turn_ended events)"),
    "no-settle-on-stop": (("C1",), "a stopped turn never writes its turn_ended event"),
    "seq-gap": (("C10",), "the sequence number skips one value after the first turn starts"),
    "no-header": (("C10",), "a new session log has no header line"),
    "append-after-torn-line": (("C10",), "the first append after a torn tail is written onto the torn line"),
    "accept-mid-file-damage": (("C10",), "damaged lines before the last are skipped instead of refused"),
    "late-tool-checkpoint": (("C11", "C4"), "the tool_call event is written after the tool body ran"),
    "no-request-checkpoint": (("C11",), "the model_request event is written after the stream, not before"),
    "stream-error-as-error": (("C12",), "a stream closed by our own Stop settles as error, not aborted"),
    "keep-going-after-stop": (("C9",), "after Stop mid-stream the agent sends one more model request"),
    "lose-inbox": (("C6",), "queued inbox items are silently forgotten when a turn is stopped or the session reloads"),
    "leak-api-key": (("C13",), "the API key is written into the session header"),
    "resume-forks": (("C7",), "--resume/--continue starts a new blank session instead"),
    "acp-cancel-ends-turn": (("C12",), "acp: a prompt stopped by session/cancel answers end_turn, not cancelled"),
    "acp-updates-after-cancel": (("C9",), "acp: the updates a cancelled turn sends after session/cancel (the stopped "
                                          "tool's failed tool_call_update) come after the prompt's response"),
    "acp-prompt-never-resolves": (("C1",), "acp: a prompt stopped by session/cancel never gets a response"),
    "acp-load-forgets-interrupted": (("C11",), "acp: session/load replays every turn except the stopped or "
                                              "interrupted ones"),
}


class UnknownFailpoint(ValueError):
    pass


def parse(text: str | None) -> frozenset[str]:
    names = frozenset(n.strip() for n in (text or "").split(",") if n.strip())
    unknown = sorted(names - CATALOG.keys())
    if unknown:
        raise UnknownFailpoint(
            f"unknown failpoint(s) {', '.join(unknown)} in {ENV_VAR}/--failpoints; "
            f"known: {', '.join(sorted(CATALOG))}"
        )
    return names


def _from_env() -> tuple[frozenset[str], str | None]:
    try:
        return parse(os.environ.get(ENV_VAR)), None
    except UnknownFailpoint as exc:
        return frozenset(), str(exc)


# Read once, when the agent starts; a bad value is reported by ``check_env`` (CLI/API).
_active, _env_error = _from_env()


def enable(names: frozenset[str]) -> None:
    """Set the active failpoints (once, at start: from the environment or the CLI flag)."""
    global _active
    _active = frozenset(names)


def active() -> frozenset[str]:
    return _active


def on(name: str) -> bool:
    return name in _active


def check_env() -> None:
    """Raise the error a bad ``REFAGENT_FAILPOINTS`` value caused at start, if any."""
    if _env_error:
        raise UnknownFailpoint(_env_error)
