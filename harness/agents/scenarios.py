"""The fake server's script for each recording case: the turn that runs one shell command,
the bash window that is killed or Stopped, the slow stream that is cut off, and the answers
to the resume that follows."""

from __future__ import annotations

import json
from typing import Any

CASES = ("completed", "kill-tool", "kill-stream", "stop-tool")
LONG_TEXT = ("Here is a long explanation streamed slowly, one small piece at a time, so that the "
             "recorder can interrupt it in the middle: first part, second part, third part, fourth "
             "part, fifth part, sixth part, seventh part, eighth part, and the end.")


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def _response(frames: list[dict], match: dict | None = None, repeat: bool = False, note: str = "") -> str:
    out = [f"\n[[responses]]{'  # ' + note if note else ''}"]
    if match:
        out.append(f"match = {_toml(match)}")
    if repeat:
        out.append("repeat = true")
    for frame in frames:
        out.append("[[responses.frames]]")
        out.extend(f"{k} = {_toml(v)}" for k, v in frame.items())
    return "\n".join(out) + "\n"


# Response 0 answers tool-less side requests (title generation); the main script starts at 1.
MAIN = 1


def scenario_text(case: str, shell_extra: dict, finish: dict | None = None) -> str:
    """The case's scenario; ``finish`` is a frame that closes every answer (a call of the tool
    through which an agent such as gptme or OpenHands ends its turn), else answers are text."""
    extra = {"extra": shell_extra} if shell_extra else {}
    done = [finish] if finish else []
    window = {"shell": {"window": {"id": "w1", "depth": 2, "fanout": 1, "hold_s": 120}}, **extra}
    parts = [f'name = "agents-{case}"\n',
             _response([{"text": "Stopbench recording"}], {"tools": False}, repeat=True, note="side requests")]
    if case == "completed":
        parts += [_response([{"text": "I will run the check."}, {"shell": "echo stopbench-hello", **extra}],
                            {"last": "user", "tools": True}, note="1: the tool call"),
                  _response([{"text": "The command printed stopbench-hello. Done."}, *done], {"last": "tool"},
                            note="2: the answer")]
    elif case in ("kill-tool", "stop-tool"):
        parts += [_response([{"text": "Starting the long check."}, window], {"last": "user", "tools": True},
                            note="1: the window"),
                  _response([{"text": "The earlier check was interrupted before it finished."}, *done],
                            {"last": "user"}, note="2: the follow-up")]
    elif case == "kill-stream":
        parts += [_response([{"text": LONG_TEXT, "chunk": 8, "interval_s": 0.25}], {"last": "user"},
                            note="1: the slow stream"),
                  _response([{"text": "The earlier answer was cut off."}, *done], {"last": "user"},
                            note="2: the follow-up")]
    else:
        raise ValueError(f"unknown case {case!r} (cases: {', '.join(CASES)})")
    parts.append(_response([{"text": "Nothing more to do."}, *done], repeat=True, note="anything else"))
    return "".join(parts)
