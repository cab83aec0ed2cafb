"""``refagent chat``: the interactive terminal session.

The terminal is read key by key (no line discipline, no echo, no signal keys) so that Esc
and Ctrl-C reach the agent as keys: during a turn either one is Stop. Text typed during a
turn is queued on Enter (``[queued <id>]``) and delivered with the next turn; after a
``completed`` turn queued items start the next turn by themselves, after a Stop they wait
for the user (Stop means stop, C9). Output is line-oriented for scripts and pexpect:
``you> `` at the start of a line is the prompt, ``[tool] bash: …`` lines open and close a
tool card, and ``[turn ended: <reason>]`` marks every settlement.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import termios
from collections.abc import Awaitable, Callable
from typing import Any

from .engine import Session, Turn

PROMPT = "you> "
ESC, CTRL_C, CTRL_D, BACKSPACE, CTRL_H = "\x1b", "\x03", "\x04", "\x7f", "\x08"


class Chat:
    def __init__(self, session: Session, out=sys.stdout):
        self.session = session
        self.out = out
        self.turn: Turn | None = None
        self.buffer = ""
        self.at_line_start = True
        self._tool_names: dict[str, str] = {}  # call_id -> tool name, for the closing card line
        self.quit = asyncio.get_running_loop().create_future()
        session.subscribe(self._on_event)

    # --- output ---------------------------------------------------------------------------

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        self.write(("" if self.at_line_start else "\n") + text + "\n")

    def prompt(self) -> None:
        self.write(("" if self.at_line_start else "\n") + PROMPT)
        self.at_line_start = False

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "text_delta":
            self.write(event["text"])
        elif kind == "tool_card":
            args = event.get("arguments") or {}
            shown = args.get("command", args.get("path", "")) if isinstance(args, dict) else args
            self._tool_names[event["call_id"]] = event["name"]
            self.line(f"[tool] {event['name']}: {shown}")
        elif kind == "tool_result":
            outcome = "aborted" if event.get("aborted") else f"exit {event.get('exit_code')}"
            self.line(f"[tool] {self._tool_names.get(event['call_id'], 'tool')}: {outcome}")

    # --- input ----------------------------------------------------------------------------

    def on_key(self, key: str) -> None:
        running = self.turn is not None and not self.turn.done
        if key in (ESC, CTRL_C):
            if running:
                self.turn.stop("user")
            elif key == CTRL_C:
                self.buffer = ""
                self.line("^C")
                self.prompt()
        elif key == CTRL_D:
            if not running and not self.buffer and not self.quit.done():
                self.line("")
                self.quit.set_result(0)
        elif key in ("\r", "\n"):
            text, self.buffer = self.buffer, ""
            if not running:
                self.write("\n")
            self.submit(text.strip(), running)
        elif key in (BACKSPACE, CTRL_H):
            if self.buffer:
                self.buffer = self.buffer[:-1]
                if not running:
                    self.write("\b \b")
        elif key.isprintable():
            self.buffer += key
            if not running:
                self.write(key)

    def submit(self, text: str, running: bool) -> None:
        if text.startswith("/cancel"):
            item_id = text[len("/cancel"):].strip()
            try:
                self.session.cancel_queued(item_id)
                self.line(f"[canceled {item_id}]")
            except KeyError as exc:
                self.line(f"[error: {exc.args[0]}]")
        elif running:
            if text:
                self.line(f"[queued {self.session.queue(text)}]")
            return
        elif text:
            self.start(text)
            return
        if not running:
            self.prompt()

    def start(self, text: str) -> None:
        self.at_line_start = True
        self.turn = self.session.start_turn(text)
        asyncio.get_running_loop().create_task(self._settled(self.turn))

    async def _settled(self, turn: Turn) -> None:
        ending = await turn.settled()
        source = f" ({ending['source']})" if ending.get("source") else ""
        self.line(f"[turn ended: {ending['reason']}{source}]")
        if ending["reason"] == "completed" and self.session.state.pending_inbox():
            self.start("")
        else:
            self.prompt()


async def chat_main(args: argparse.Namespace, open_session: Callable[[argparse.Namespace], Awaitable[Session]]) -> int:
    loop = asyncio.get_running_loop()
    session = await open_session(args)
    chat = Chat(session)

    def on_signal(sig: int) -> None:
        running = chat.turn is not None and not chat.turn.done
        if running:
            chat.turn.stop("user")
        if sig == signal.SIGTERM and not chat.quit.done():
            chat.quit.set_result(3 if running else 0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    fd = sys.stdin.fileno()
    with _keys_mode(fd):
        loop.add_reader(fd, _read_keys, fd, chat)
        chat.prompt()
        try:
            code = await chat.quit
        finally:
            loop.remove_reader(fd)
            await session.close()
    return code


def _read_keys(fd: int, chat: Chat) -> None:
    data = os.read(fd, 1024)
    if not data:  # end of input (not a terminal): like Ctrl-D
        chat.on_key(CTRL_D)
        if not chat.quit.done():
            chat.quit.set_result(0)
        return
    text = data.decode("utf-8", errors="replace")
    i = 0
    while i < len(text):
        if text[i] == ESC and text[i + 1 : i + 2] in ("[", "O"):  # arrow keys and the like: ignored
            i += 3
            continue
        chat.on_key(text[i])
        i += 1


@contextlib.contextmanager
def _keys_mode(fd: int):
    """Key-by-key input: no canonical mode, no echo, and Ctrl-C/Ctrl-Z as plain keys."""
    if not os.isatty(fd):
        yield
        return
    saved = termios.tcgetattr(fd)
    mode = termios.tcgetattr(fd)
    mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)
    mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
