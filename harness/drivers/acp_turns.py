"""What an ACP agent's messages say of its turns: the client's record of each
``session/prompt``, what its ``session/update`` notifications add to it, how its answer maps to
the contract's settlement, how a permission the agent asks for during it is answered, and the
replay file a ``session/load`` leaves, headed by what the turns showed live.

Kept apart from the driver's steps (``harness.drivers.acp``) and the connection
(``harness.drivers.acp_rpc``): this is where the protocol's words become the contract's —
a ``stopReason`` a settlement, a tool call's status a ``TurnUpdate``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.drivers.acp_rpc import Answer, error_text, json_object
from harness.model import Settlement, TurnUpdate, UserInput
from harness.model.history import History

# ACP's stopReason → the contract's settlement reason.
STOP_REASONS = {"end_turn": "completed", "cancelled": "aborted", "max_tokens": "max_tokens",
                "max_turn_requests": "error", "refusal": "blocked"}
# The updates that are a turn's own content; the others (available commands, the mode, the
# session's title or usage) are the session's, and may come at any time.
TURN_CONTENT = frozenset({"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"})
# A load's replayed updates: in a folder of the run's own beside the agent's sessions folder,
# where the agent never looks (nor a native reader's glob).
REPLAY_DIR, REPLAY_NAME = "acp-replays", "replay-{n}.jsonl"


@dataclass
class AcpTurn:
    """One ``session/prompt``: its request id, its response when it came, what streamed."""

    number: int
    request_id: int
    response: asyncio.Future[Answer]
    cancelled: bool = False
    ended: bool = False
    settled: bool = False  # its answer recorded as the turn's settlement
    text: list[str] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)  # tool call id → its last status

    def take(self, update: dict[str, Any], read_ns: int, message: int,
             call_id_of: Callable[[str], str] = str) -> TurnUpdate | None:
        """Take a ``session/update`` (the transcript's ``message``-th) sent during or after the
        turn: its text, a tool call's status; what the history records of it — a tool call's
        new status, or anything of the turn's own sent after it settled — or None. The
        session's updates (its commands, mode, title) are no turn's."""
        kind = str(update.get("sessionUpdate"))
        if kind not in TURN_CONTENT:
            return None
        how = f"ACP transcript: session/update {kind}, message {message}"
        if kind == "agent_message_chunk" and not self.ended:
            content = update.get("content")
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                self.text.append(content["text"])
        if kind in ("tool_call", "tool_call_update"):
            recorded = self.call_status(update, read_ns, how, call_id_of, "pending" if kind == "tool_call" else None)
            if recorded is not None:
                return recorded
        if self.ended:
            return TurnUpdate(mono_ns=read_ns, turn=self.number, kind=kind, how=how, after_end=True)
        return None

    def unsettled_answer(self) -> bool:
        """Answered, but not yet recorded as settled (the run ended before its settle step)."""
        done = self.response.done() and not self.response.cancelled()
        return done and self.response.exception() is None and not self.settled

    def carried(self, params: Any, read_ns: int, message: int, call_id_of: Callable[[str], str]) -> TurnUpdate | None:
        """The tool call a ``session/request_permission`` carries, as an update of that call
        (Gemini CLI announces a call there and nowhere else before it runs)."""
        return self.call_status(json_object(json_object(params).get("toolCall")), read_ns,
                                f"ACP transcript: session/request_permission, message {message}", call_id_of)

    def call_status(self, update: dict[str, Any], read_ns: int, how: str, call_id_of: Callable[[str], str],
                    default: str | None = None) -> TurnUpdate | None:
        """A tool call's status (a ``tool_call``, a ``tool_call_update``, or the call a
        permission request carries), recorded when it changed or came after the turn's answer."""
        raw = update.get("toolCallId")
        if not isinstance(raw, str):
            return None
        call_id = call_id_of(raw)
        status = update.get("status") or self.calls.get(call_id) or default
        if status is None or (status == self.calls.get(call_id) and not self.ended):
            return None
        self.calls[call_id] = str(status)
        return TurnUpdate(mono_ns=read_ns, turn=self.number, kind="tool_call", how=how,
                          call_id=call_id, status=str(status), after_end=self.ended)


    def settlement(self, pid: int | None, note: Callable[[str], None]) -> Settlement:
        """How the turn ended, as its ``session/prompt`` answer says: its ``stopReason`` (one
        that is not ACP's is ``note``d as a protocol problem, its reason unknown), or ``error``.
        The turn is then ended and settled."""
        read_ns, answer = self.response.result()
        self.ended = self.settled = True
        where = f"ACP transcript: session/prompt {self.request_id}"
        error = answer.get("error")
        if isinstance(error, dict):
            return Settlement(mono_ns=read_ns, reason="error", source=None, pid=pid,
                              how=f"{where} answered error {error_text(error)}")
        stop_reason = json_object(answer.get("result")).get("stopReason")
        reason = STOP_REASONS.get(str(stop_reason))
        if reason is None:
            note(f"session/prompt {self.request_id} answered stopReason {stop_reason!r}, not one of "
                 f"{', '.join(STOP_REASONS)}")
        return Settlement(mono_ns=read_ns, reason=reason, source=None, how=f"{where} stopReason {stop_reason!r}",
                          pid=pid)


async def answers_due(turns: Sequence[AcpTurn], closed: asyncio.Event, grace_s: float) -> None:
    """Prompts not answered yet when the steps are over (the run failed before a settle step):
    their answers, or the agent's output ending, are waited for before the agent is ended, so
    C1 never depends on which came first. ``grace_s`` is the failsafe: a prompt still
    unanswered then was never answered while the agent lived."""
    due = [t.response for t in turns if not t.response.done()]
    if not due:
        return
    answered, ended = asyncio.ensure_future(asyncio.wait(due)), asyncio.ensure_future(closed.wait())
    try:
        await asyncio.wait([answered, ended], timeout=grace_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        answered.cancel()
        ended.cancel()


def permission_outcome(turn: AcpTurn | None, params: Any, permission: str) -> dict[str, Any]:
    """The answer to ``session/request_permission``: the option the profile's ``permission``
    (``allow`` or not) picks among those offered — ``cancelled`` once the turn it is for was
    stopped or has ended, as the protocol requires, or when no option fits."""
    options = [o for o in json_object(params).get("options", []) if isinstance(o, dict)]
    wanted = ("allow_once", "allow_always") if permission == "allow" else ("reject_once", "reject_always")
    chosen = next((o.get("optionId") for kind in wanted for o in options if o.get("kind") == kind), None)
    if turn is None or turn.cancelled or turn.ended or chosen is None:
        return {"outcome": "cancelled"}
    return {"outcome": "selected", "optionId": chosen}


def model_call_id(call_id_regex: str) -> Callable[[str], str]:
    """The model's call id in an agent's toolCallId (the profile's ``call_id_regex``), so
    that a call is one call live and in every replay, whichever process named it."""
    def call_id_of(tool_call_id: str) -> str:
        found = re.search(call_id_regex, tool_call_id) if call_id_regex else None
        return found.group("id") if found else tool_call_id
    return call_id_of


def write_replay(folder: Path, number: int, session_id: str | None, method: str, history: History,
                 updates: list[dict[str, Any]], call_id_regex: str = "") -> Path:
    """Keep the updates a load replayed as the file the ``acp-replay`` reader reads: a header
    (the prompts sent, the tool calls seen to finish live), then the updates, one a line —
    each toolCallId written as the model's call id it holds when the profile says where."""
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / REPLAY_NAME.format(n=number)
    finished = {u.call_id for u in history.of(TurnUpdate) if u.kind == "tool_call" and u.call_id
                and u.status in ("completed", "failed")}
    header = {"acp_replay": 1, "sessionId": session_id, "method": method,
              "prompts": [i.text for i in history.of(UserInput)], "finished_live": sorted(finished)}
    if call_id_regex:
        header["call_id_regex"] = call_id_regex
        call_id_of = model_call_id(call_id_regex)
        updates = [{**u, "toolCallId": call_id_of(u["toolCallId"])} if isinstance(u.get("toolCallId"), str) else u
                   for u in updates]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [header, *updates]),
                    encoding="utf-8")
    return path
