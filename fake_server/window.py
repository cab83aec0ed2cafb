"""The "bash window": a scripted tool command with a known process tree and a beacon.

Run as ``python -m fake_server.window --id w1 [--depth D] [--fanout F] [--ignore-term]
[--escape] [--hold S] [--marker PATH] [--beacon URL]``. The root starts ``depth`` levels of
nested children (``fanout`` per level), optionally one child that ignores SIGTERM and one
that leaves the process group with ``setsid`` — the two ways real tool processes outlive a
careless kill. Once every process is running it posts a ``window`` record with each PID and
its start time, so the harness interrupts *inside* the window instead of guessing. It then
holds (bounded) and writes its marker file only if allowed to finish.

The harness waits for that record before it interrupts, so the time from the tool command's
start to the beacon is time a task spends racing the agent: the window must open fast, even
on a loaded machine. Hence every process of the tree is *forked* from the window process (no
new interpreter per child), and nothing heavy is imported before the beacon is posted: each
process describes itself from ``os`` and ``/proc`` (its start time computed exactly as
psutil's ``Process.create_time()`` does, since the harness identifies processes by PID and
start time with psutil), the beacon is one HTTP request written on the interpreter's own socket
module (``_socket``: ``socket`` and ``selectors`` cost milliseconds to import), and the command
line is read without ``argparse`` (which imports ``shutil`` and ``gettext`` to build a parser).

Children report to their parent through a pipe (one JSON line each, the subtree below them
included); their standard streams are ``/dev/null`` and they keep no other inherited file, so
nothing but the root touches the tool's output (which stays deterministic) and a surviving
child never holds the tool's pipe open.
"""
from __future__ import annotations

import _socket
import json
import os
import signal
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

CHILD_GRACE_S = 5.0     # failsafe: children outlive a killed root by this much at most
HOLD_MAX_S = 600.0      # a window is bounded, whatever it is asked for
END_WAIT_S = 10.0       # failsafe: how long a finishing window waits for its killed children to go
BEACON_TIMEOUT_S = 5.0
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


# --- describing a process without psutil ----------------------------------------------------

_boot: list[float] = []     # the boot time, read once per process tree


def _boot_time() -> float:
    if not _boot:
        with open("/proc/stat", "rb") as f:
            _boot.extend(float(line.split()[1]) for line in f if line.startswith(b"btime"))
        if not _boot:
            raise RuntimeError("/proc/stat has no btime line")
    return _boot[0]


def start_time(pid: int) -> float | None:
    """``pid``'s start time in seconds since the epoch, the way psutil computes
    ``create_time()`` on Linux (start ticks / CLK_TCK + boot time); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(b")") + 2:].split()   # the name may hold spaces and parentheses
    return float(fields[19]) / os.sysconf("SC_CLK_TCK") + _boot_time()


def _state(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rindex(b")") + 2:].split()[0]


def describe(role: str) -> dict:
    """This process, as the window record lists it."""
    pid = os.getpid()
    return {"pid": pid, "ppid": os.getppid(), "pgid": os.getpgid(0), "sid": os.getsid(0),
            "create_time": start_time(pid), "role": role}


def same_process(proc: dict) -> bool:
    """Whether ``proc`` (a described process) still runs: same PID *and* start time, not a zombie."""
    created = start_time(proc["pid"])
    return created is not None and abs(created - proc["create_time"]) < 0.01 and _state(proc["pid"]) != b"Z"


def say(line: str) -> None:
    """One line of the tool's output. The reader may be gone (the agent, or the harness above
    it, was killed): the window then goes on silently — it still ends its tree — instead of
    dying of a BrokenPipeError traceback with its children left to their grace period."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())  # nothing more to write to, the exit's flush included
        os.close(null)


# --- the beacon -----------------------------------------------------------------------------

def post(beacon: str | None, record: dict) -> None:
    """POST ``record`` to the server's beacon and wait for its answer (so the record is stored
    before the window goes on). A window without a reachable beacon still runs: it says so."""
    if not beacon:
        return
    body = json.dumps({**record, "mono_ns": time.monotonic_ns(), "source": "window"}).encode()
    url = urlsplit(beacon)
    path = url.path.rstrip("/") + "/_stopbench/beacon"
    head = (f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    conn = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        conn.settimeout(BEACON_TIMEOUT_S)
        conn.connect((url.hostname or "127.0.0.1", url.port or 80))
        conn.sendall(head + body)
        answer = b""
        while b"\r\n" not in answer:
            piece = conn.recv(4096)
            if not piece:
                break
            answer += piece
    except OSError as exc:
        print(f"window: beacon not reachable ({exc})", file=sys.stderr)
        return
    finally:
        conn.close()
    status = answer.split(b"\r\n", 1)[0].decode("latin-1")
    if status.split()[1:2] != ["200"]:
        print(f"window: the beacon refused the {record['kind']} record ({status or 'no answer'})", file=sys.stderr)


# --- the tree -------------------------------------------------------------------------------

def _become(role: str, report_fd: int) -> None:
    """Set up a freshly forked child: its own signal dispositions (not the root's handlers),
    ``/dev/null`` for its standard streams, and no inherited file but its report pipe."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN if role == "term-ignorer" else signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if role == "escapee":
        os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, report_fd)
    os.closerange(report_fd + 1, 1 << 16)


def fork_node(role: str, depth: int, fanout: int, hold: float) -> tuple[int, int]:
    """Fork one child that builds its own subtree, reports it, and holds. Returns (pid, read
    end of its report pipe). Stop signals stay blocked across the fork, so a SIGTERM arriving
    now reaches the child with its own disposition, never with the root's handler."""
    read_fd, write_fd = os.pipe()
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _become(role, write_fd)
            report = [describe(role)] + start_subtree(depth, fanout, hold)
            os.write(write_fd, (json.dumps(report) + "\n").encode())
            os.close(write_fd)
            code = 0
            time.sleep(hold + CHILD_GRACE_S)
        finally:
            os._exit(code)      # never run the root's cleanup (stdio buffers, atexit) in a child
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    os.close(write_fd)
    return pid, read_fd


def _read_report(fd: int) -> bytes:
    """A child's report, read to the end of the pipe: the child closes its end right after
    writing, so once this returns no child still holds a pipe of the tree (before the beacon)."""
    data = b""
    while piece := os.read(fd, 65536):
        data += piece
    os.close(fd)
    return data


def start_subtree(depth: int, fanout: int, hold: float, extra_roles: tuple[str, ...] = ()) -> list[dict]:
    """Start the children of this process (all at once) and gather the descriptions of
    everything below it, depth first in the order the children were started."""
    children = [fork_node("child", depth - 1, fanout, hold) for _ in range(fanout if depth > 0 else 0)]
    children += [fork_node(role, 0, 1, hold) for role in extra_roles]
    described: list[dict] = []
    for pid, read_fd in children:
        line = _read_report(read_fd)
        if not line:
            raise SystemExit(f"window: a child process (pid {pid}) died before reporting")
        described += json.loads(line)
    return described


def end_subtree(procs: list[dict]) -> None:
    """A window allowed to finish leaves nothing behind: kill every process it started (those
    that are still the same process) and wait until they are gone — reaping its own children,
    watching the others until their new parent has."""
    killed = []
    for proc in procs:
        if same_process(proc):
            try:
                os.kill(proc["pid"], signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.append(proc)
    deadline = time.monotonic() + END_WAIT_S
    for proc in killed:
        if proc["ppid"] == os.getpid():
            os.waitpid(proc["pid"], 0)
            continue
        while same_process(proc) and time.monotonic() < deadline:
            time.sleep(0.002)


class Args:
    """The command line: ``--id``, ``--depth``, ``--fanout``, ``--hold``, ``--marker``,
    ``--beacon`` with a value; ``--ignore-term`` and ``--escape`` alone."""
    USAGE = ("usage: python -m fake_server.window [--id ID] [--depth D] [--fanout F] [--hold S] "
             "[--ignore-term] [--escape] [--marker PATH] [--beacon URL]")

    def __init__(self, argv: list[str]):
        self.id, self.depth, self.fanout, self.hold = "w", 1, 1, 60.0
        self.ignore_term = self.escape = False
        self.marker: str | None = None
        self.beacon: str | None = None
        flags = {"--ignore-term": "ignore_term", "--escape": "escape"}
        values = {"--id": str, "--depth": int, "--fanout": int, "--hold": float, "--marker": str, "--beacon": str}
        items = iter(argv)
        for option in items:
            if option in ("-h", "--help"):
                print(f"{self.USAGE}\n\n{__doc__}")
                raise SystemExit(0)
            if option in flags:
                setattr(self, flags[option], True)
                continue
            if option not in values:
                raise SystemExit(f"{self.USAGE}\nwindow: unknown option {option!r}")
            text = next(items, None)
            if text is None:
                raise SystemExit(f"{self.USAGE}\nwindow: {option} needs a value")
            try:
                setattr(self, option[2:], values[option](text))
            except ValueError:
                kind = {int: "an integer", float: "a number"}.get(values[option], "a value")
                raise SystemExit(f"{self.USAGE}\nwindow: {option} must be {kind}, not {text!r}") from None
        self.hold = min(max(self.hold, 0.0), HOLD_MAX_S)


def root(args: Args) -> None:
    window_id = args.id
    marker = Path(args.marker or f"stopbench-window-{window_id}.done").absolute()

    def on_signal(signum: int, _frame: object) -> None:
        post(args.beacon, {"kind": "window_done", "window": window_id, "finished": False,
                           "signal": signal.Signals(signum).name})
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    extra = (("term-ignorer",) if args.ignore_term else ()) + (("escapee",) if args.escape else ())
    sys.stdout.flush()
    pids = [describe("root")] + start_subtree(args.depth, args.fanout, args.hold, extra)
    say(f"window {window_id}: open, {len(pids)} processes")
    post(args.beacon, {"kind": "window", "window": window_id, "pids": pids, "marker": str(marker)})
    time.sleep(args.hold)
    marker.write_text(f"window {window_id} finished\n")
    end_subtree(pids[1:])
    post(args.beacon, {"kind": "window_done", "window": window_id, "finished": True})
    say(f"window {window_id}: done")


def main(argv: list[str] | None = None) -> int:
    root(Args(sys.argv[1:] if argv is None else argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
