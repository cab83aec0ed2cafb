"""A tiny stand-in agent for driver tests: just enough of a CLI to be driven.

``fake_agent.py run [--timeout T] [--resume ID] --sessions DIR PROMPT`` prints
``fake: session <id> <path>`` on stderr, appends the prompt to the session file, then:
a prompt containing "hang" prints "working" and waits for SIGINT (exit 3); "fail" exits 2;
anything else prints "echo: <prompt>" and exits 0. A resumed session whose file holds the
line "DAMAGED" is refused (exit 2). ``chat`` does the same in a read-line loop behind the
prompt ``you> ``, ending each turn with ``[turn ended: <reason>]``; Ctrl-C (SIGINT) stops a
hanging turn.
"""

import argparse
import os
import signal
import sys
import threading
import uuid


class Stopped(Exception):
    pass


def on_sigint(signum, frame):
    raise Stopped()


def turn(prompt: str, log) -> str:
    try:
        log.write(prompt + "\n")
        log.flush()
        if "hang" in prompt:
            print("working", flush=True)
            threading.Event().wait()
        if "fail" in prompt:
            return "error"
        print(f"echo: {prompt}", flush=True)
        return "completed"
    except Stopped:
        return "aborted"


def session_log(sessions: str, resume: str | None) -> str | None:
    """The session's log file, announced on stderr; None for a resumed log that holds
    "DAMAGED" (refused, with the file and line named)."""
    session = resume or uuid.uuid4().hex[:8]
    path = os.path.join(sessions, f"{session}.log")
    if resume and "DAMAGED" in open(path).read():
        print(f"fake: {path}: line 2: damaged", file=sys.stderr, flush=True)
        return None
    print(f"fake: session {session} {path}", file=sys.stderr, flush=True)
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "chat"])
    parser.add_argument("--timeout", type=float)
    parser.add_argument("--resume")
    parser.add_argument("--sessions", required=True)
    parser.add_argument("prompt", nargs="?")
    args = parser.parse_intermixed_args()
    signal.signal(signal.SIGINT, on_sigint)
    path = session_log(args.sessions, args.resume)
    if path is None:
        return 2
    with open(path, "a") as log:
        if args.mode == "run":
            if args.timeout:
                signal.signal(signal.SIGALRM, on_sigint)
                signal.setitimer(signal.ITIMER_REAL, args.timeout)
            return {"completed": 0, "error": 2, "aborted": 3}[turn(args.prompt, log)]
        while True:
            print("you> ", end="", flush=True)
            try:
                line = sys.stdin.readline()
            except Stopped:
                continue
            if not line:
                return 0
            reason = turn(line.strip(), log)
            print(f"[turn ended: {reason}{' (user)' if reason == 'aborted' else ''}]", flush=True)


if __name__ == "__main__":
    sys.exit(main())
