"""A stand-in full-screen terminal UI for the terminal driver's screen mode (``match_on = "screen"``).

``fake_tui.py --sessions DIR [--resume ID]`` draws, like the Ink and ratatui UIs it stands in
for, the whole screen with cursor moves rather than lines in order: the conversation at the
top, an input box between two rules, a status line under it. It echoes typed keys into the
box (cbreak mode) and takes Enter as submit. A prompt containing "hang" shows ``working…`` in
the status line until Esc; text typed meanwhile is queued (listed indented above the box).
When a turn ends it first clears the busy indicator and only afterwards, in a separate write,
draws the turn's last line above the box — ``Interrupted`` or ``Done`` — the order in which
such UIs repaint. Its session log is fake_agent.py's (a damaged one is refused, exit 2).
"""

import argparse
import os
import sys
import termios
import tty

from fake_agent import session_log  # beside this file: the session store both stand-ins share

RULE = "─" * 30


class Tui:
    def __init__(self) -> None:
        self.history: list[str] = []
        self.queued: list[str] = []
        self.box = ""
        self.status = "? for shortcuts"

    def draw(self) -> None:
        rows = [*self.history, *(f"  > {q}" for q in self.queued), RULE, f"> {self.box}", RULE, self.status]
        # Bottom up, each row at its own position: never the conversation's order.
        out = "".join(f"\x1b[{n + 1};1H\x1b[2K{row}" for n, row in reversed(list(enumerate(rows))))
        os.write(1, out.encode())

    def end_turn(self, line: str) -> None:
        self.status = "? for shortcuts"
        self.draw()  # the indicator goes first …
        self.history.append(line)  # … the line comes in a later write
        self.draw()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", required=True)
    parser.add_argument("--resume")
    args = parser.parse_args()
    path = session_log(args.sessions, args.resume)
    if path is None:
        return 2
    saved = termios.tcgetattr(0)
    tty.setcbreak(0)
    tui, running = Tui(), False
    try:
        with open(path, "a") as log:
            os.write(1, b"\x1b[2J")
            tui.draw()
            while key := os.read(0, 1).decode():
                if key == "\x04" and not running:
                    return 0
                if key == "\x1b" and running:
                    running = False
                    tui.end_turn("Interrupted")
                elif key in "\r\n":
                    text, tui.box = tui.box, ""
                    if running:
                        tui.queued.append(text)
                    else:
                        log.write(text + "\n")
                        log.flush()
                        tui.history.append(f"> {text}")
                        running = "hang" in text
                        tui.status = "working… (esc to interrupt)"
                        tui.draw()
                        if not running:
                            tui.history.append(f"echo: {text}")
                            tui.end_turn("Done")
                        continue
                else:
                    tui.box += key
                tui.draw()
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
