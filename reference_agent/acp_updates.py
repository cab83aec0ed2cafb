"""What a turn looks like to an ACP client: the engine's events as ``session/update`` messages.

Two views of one conversation: ``live_updates`` reports a running turn event by event, and
``replay_updates`` replays a loaded session's durable log, each tool call closed with the outcome
the log recorded (or the repair's words for one it never recorded). ``reference_agent.acp``
sends them.
"""

from __future__ import annotations

from typing import Any

from . import failpoints
from .state import NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT, parse_arguments

TOOL_KINDS = {"bash": "execute", "read_file": "read"}


def tool_call_update(call_id: str, name: str, arguments: Any, status: str) -> dict[str, Any]:
    """The ``tool_call`` that announces a call: what it is, and how far it got."""
    args = arguments if isinstance(arguments, dict) else {}
    shown = args.get("command", args.get("path", ""))
    update: dict[str, Any] = {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": f"{name}: {shown}",
                              "kind": TOOL_KINDS.get(name, "other"), "status": status, "rawInput": arguments}
    if name == "read_file" and isinstance(args.get("path"), str):
        update["locations"] = [{"path": args["path"]}]
    return update


def result_update(call_id: str, output: str, exit_code: int | None, aborted: bool) -> dict[str, Any]:
    """A call's end: ``completed`` when it ran and exited 0; else ``failed`` (a Stop included)."""
    status = "completed" if exit_code == 0 and not aborted else "failed"
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status,
            "content": [text_content(output)], "rawOutput": {"exitCode": exit_code, "aborted": aborted}}


def text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def live_updates(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The updates one event of a running turn is reported as."""
    kind = event["type"]
    if kind == "text_delta":
        return [chunk("agent_message_chunk", event["text"])]
    if kind == "tool_call":
        return [tool_call_update(event["call_id"], event["name"], event.get("arguments"), "pending")]
    if kind == "tool_card":  # the body starts now
        return [{"sessionUpdate": "tool_call_update", "toolCallId": event["call_id"], "status": "in_progress"}]
    if kind == "tool_result":
        return [result_update(event["call_id"], event.get("output") or "", event.get("exit_code"),
                              bool(event.get("aborted")))]
    return []


def replay_updates(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The whole durable conversation as updates: user and assistant text, and each tool
    call the model asked for with the outcome the log recorded. Calls are opened and closed
    as the model's history does it (``state.History``): a call with no result (a Stop before
    it ran, or a kill) ends ``failed`` with the words the in-memory repair gives the model,
    ``TOOL_OUTCOME_UNKNOWN`` once its ``tool_call`` was recorded, else ``TOOL_NOT_STARTED``."""
    endings = {e["turn"]: e["reason"] for e in events if e["type"] == "turn_ended"}
    forget = failpoints.on("acp-load-forgets-interrupted")
    inbox: dict[str, str] = {}
    calls: dict[str, bool] = {}  # call_id -> its tool_call recorded, of calls with no result yet
    updates: list[dict[str, Any]] = []

    def close_open_calls() -> None:
        for call_id, started in calls.items():
            text = OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT
            updates.append(result_update(call_id, text, None, True))
        calls.clear()

    for event in events:
        kind = event["type"]
        if kind == "inbox_queued":
            inbox[event["item_id"]] = event["text"]
            continue
        if forget and endings.get(event.get("turn"), "interrupted") in ("aborted", "interrupted"):
            continue
        call_id = event.get("call_id")
        if kind == "turn_started":
            close_open_calls()
            texts = [inbox[i] for i in event.get("inbox") or () if i in inbox]
            if event.get("input"):
                texts.append(event["input"])
            updates.append(chunk("user_message_chunk", "\n\n".join(texts)))
        elif kind == "assistant_message":
            close_open_calls()
            if event.get("text"):
                updates.append(chunk("agent_message_chunk", event["text"]))
            for call in event.get("tool_calls") or ():
                calls[call["id"]] = False
                updates.append(tool_call_update(call["id"], call["name"], parse_arguments(call["arguments"]),
                                                "pending"))
        elif kind == "tool_call" and call_id in calls:
            calls[call_id] = True
        elif kind == "tool_result" and call_id in calls:
            del calls[call_id]
            updates.append(result_update(call_id, event.get("output") or "", event.get("exit_code"),
                                         bool(event.get("aborted"))))
    close_open_calls()
    return updates
