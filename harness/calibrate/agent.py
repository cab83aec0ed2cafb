"""stopbench's calibration agent: no model logic, and an effect after Stop delayed by a known D.

It is an agent like any other — standard library only, importing nothing of the harness — so
that stopbench can time it through its ordinary drivers and compare what it measures with what
the agent is known to have done. After a Stop (or its own ``--timeout T`` falling due) it spins
on ``time.monotonic_ns()`` for exactly D (``STOPBENCH_CAL_DELAY_MS``, default 0; a spin, not a
sleep, so D holds to the microsecond), then acts at once: it closes the HTTP stream
(``shutdown``), or SIGKILLs its tool's process group and waits until every member is gone, and
settles. Whatever stopbench measures minus D is the error of stopbench's own stopwatch.

Headless::

    STOPBENCH_CAL_API_KEY=… python -I -S agent.py [--timeout T] --base-url URL [--model M]
                                                  [--cwd DIR] [--] PROMPT

streams OpenAI Chat Completions (``{base_url}/chat/completions``, ``stream: true``, one
``bash`` tool), runs each requested command with ``bash -c`` in its own process group, sends
the result back and goes on until the model answers without a tool call. Exit status: 0
completed, 2 error, 3 stopped (SIGINT, SIGTERM or SIGHUP) or timed out. stderr's first line is
``cal-agent: session <id>``; its last, ``cal-agent: stamps {json}``, gives the agent's own
``monotonic_ns`` stamps (``t0`` its first instruction, ``trigger`` the Stop seen or the
timeout due, ``act`` = trigger + D, ``effect`` the stream shut or the kill sent, ``gone`` the
tool's group seen gone, ``exit`` just before ``_exit``), so a figure can be taken apart.

The in-process face of the same agent is ``agent_inproc.py`` (kept apart: importing asyncio
would add tens of milliseconds to every headless start).
"""

from __future__ import annotations

import time

T0_NS = time.monotonic_ns()  # before any other import: the earliest moment this process can name

import json  # noqa: E402 - imported after the first stamp on purpose
import os  # noqa: E402
import selectors  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from typing import TYPE_CHECKING, Any, NoReturn  # noqa: E402

# The wire and the tool's process group are modules of their own beside this file. Run as the
# profile runs it (``python -I -S agent.py``), this file is no package's module and its folder
# is not on the path, so it puts the folder there and imports them by their own names.
if TYPE_CHECKING or __package__:
    from .agent_tool_group import Group, kill_group, wait_gone
    from .agent_wire import BASH_TOOL, ModelError, ResponseParser, Step, command_of, http_request
else:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from agent_tool_group import Group, kill_group, wait_gone
    from agent_wire import BASH_TOOL, ModelError, ResponseParser, Step, command_of, http_request

VERSION = "stopbench-calibration-agent 1"
DELAY_ENV = "STOPBENCH_CAL_DELAY_MS"
KEY_ENV = "STOPBENCH_CAL_API_KEY"
EXIT_COMPLETED, EXIT_ERROR, EXIT_STOPPED = 0, 2, 3
MAX_STEPS = 8
OUTPUT_MAX = 30_000
SPIN_BEFORE_DEADLINE_NS = 200_000  # the last 0.2 ms before a timeout are spun, not slept (select wakes a little late)
IO_FAILSAFE_S = 600.0
# After acting on a Stop the agent sleeps this long before it exits: its exit costs the kernel a
# millisecond of CPU, and on a busy two-core machine that would compete with stopbench noticing
# the effect (the server reading the FIN, the watcher polling the tree). Its timeout exits at once:
# there, the exit is what L4 times.
LINGER_AFTER_STOP_S = 0.005


def delay_ns_from_env() -> int:
    """D in nanoseconds, from ``STOPBENCH_CAL_DELAY_MS`` (a decimal number of milliseconds)."""
    text = os.environ.get(DELAY_ENV, "0").strip() or "0"
    value = float(text)
    if not value >= 0:
        raise ValueError(f"{DELAY_ENV} must be a number of milliseconds >= 0, not {text!r}")
    return int(round(value * 1e6))


def spin_until(deadline_ns: int) -> int:
    """Busy-wait until ``deadline_ns`` (exact, unlike a sleep); returns the time it ended."""
    now = time.monotonic_ns()
    while now < deadline_ns:
        now = time.monotonic_ns()
    return now


def tool_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in (KEY_ENV, DELAY_ENV)}


# --- headless --------------------------------------------------------------------------------


class Stopped(Exception):
    def __init__(self, trigger_ns: int, source: str):
        super().__init__(source)
        self.trigger_ns, self.source = trigger_ns, source


class Headless:
    """One turn of a headless run: a selector loop over the model socket or the tool's output,
    the signals' wakeup pipe, and the timeout."""

    def __init__(self, *, base_url: str, model: str, cwd: str, api_key: str, delay_ns: int,
                 deadline_ns: int | None):
        self.base_url, self.model, self.cwd, self.api_key = base_url, model, cwd, api_key
        self.delay_ns, self.deadline_ns = delay_ns, deadline_ns
        self.stamps: dict[str, Any] = {"t0": T0_NS, "delay": delay_ns}
        self.sock: socket.socket | None = None
        self.tool: subprocess.Popen[bytes] | None = None
        self.group: Group | None = None
        self.signal_ns: int | None = None
        self._wake_r, wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        # select(2), not epoll: its timeout has microseconds, epoll's whole milliseconds.
        self.selector = selectors.SelectSelector()
        self.selector.register(self._wake_r, selectors.EVENT_READ, "stop")

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.signal_ns is None:
            self.signal_ns = time.monotonic_ns()

    def wait(self, fd: int) -> None:
        """Until ``fd`` is readable; ``Stopped`` on a stop signal or the timeout falling due."""
        key = self.selector.register(fd, selectors.EVENT_READ, "io")
        try:
            while True:
                if self.signal_ns is not None:
                    self.stop(self.signal_ns, "signal")
                timeout = IO_FAILSAFE_S
                if self.group is not None:
                    self.group.refresh()
                    timeout = Group.REFRESH_NS / 1e9
                if self.deadline_ns is not None:
                    left = self.deadline_ns - time.monotonic_ns()
                    if left <= SPIN_BEFORE_DEADLINE_NS:
                        spin_until(self.deadline_ns)
                        if self.signal_ns is not None and self.signal_ns < self.deadline_ns:
                            self.stop(self.signal_ns, "signal")
                        self.stop(self.deadline_ns, "timeout")
                    timeout = min(timeout, (left - SPIN_BEFORE_DEADLINE_NS) / 1e9)
                for ready, _ in self.selector.select(timeout):
                    if ready.data == "io":
                        return
                    try:
                        os.read(self._wake_r, 512)
                    except BlockingIOError:
                        pass
        finally:
            self.selector.unregister(key.fd)

    # -- a model request ---------------------------------------------------------------------
    def stream(self, messages: list[dict[str, Any]]) -> Step:
        body = {"model": self.model, "messages": messages, "tools": [BASH_TOOL], "stream": True}
        address, data = http_request(self.base_url, "/chat/completions", body, self.api_key)
        try:
            self.sock = socket.create_connection(address, timeout=30)
        except OSError as exc:
            raise ModelError(f"cannot reach the model at {self.base_url}: {exc}") from None
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        step, parser = Step(), ResponseParser()
        try:
            self._send_all(data)
            while not parser.done:
                self.wait(self.sock.fileno())
                try:
                    received = self.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as exc:
                    raise ModelError(f"the stream broke: {exc}") from None
                if not received:
                    if parser.status == 200 and step.finish_reason:
                        break
                    raise ModelError("the server closed the stream before it finished")
                for payload in parser.feed(received):
                    added = step.feed(payload)
                    if added:
                        sys.stdout.write(added)
                        sys.stdout.flush()
                if parser.status not in (None, 200) and parser.done:
                    break
            if parser.status != 200:
                raise ModelError(f"HTTP {parser.status}: {parser.raw_body[:500].decode('utf-8', 'replace')}")
            return step
        finally:
            if self.sock is not None:
                self.sock.close()
                self.sock = None

    def _send_all(self, data: bytes) -> None:
        assert self.sock is not None
        view = memoryview(data)
        while view:
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                sent = 0
            view = view[sent:]
            if view:
                key = self.selector.register(self.sock.fileno(), selectors.EVENT_WRITE, "io")
                try:
                    self.selector.select(30)
                finally:
                    self.selector.unregister(key.fd)

    # -- a tool call -------------------------------------------------------------------------
    def run_tool(self, command: str) -> tuple[str, int]:
        print(f"cal-agent: $ {command}", file=sys.stderr, flush=True)
        self.tool = subprocess.Popen(["bash", "-c", command], cwd=self.cwd, env=tool_env(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, process_group=0)
        self.group = Group(self.tool.pid)
        assert self.tool.stdout is not None
        fd = self.tool.stdout.fileno()
        os.set_blocking(fd, False)
        output = b""
        while True:
            self.wait(fd)
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                break
            output = (output + data)[-OUTPUT_MAX:]
        code = self.tool.wait()
        self.tool.stdout.close()
        self.tool, self.group = None, None
        return output.decode("utf-8", "replace"), code

    # -- Stop ---------------------------------------------------------------------------------
    def stop(self, trigger_ns: int, source: str) -> NoReturn:
        """D after the trigger, end what is running now — the stream, or the tool's group —
        right here, before anything unwinds; then ``Stopped``."""
        self.stamps.update(trigger=trigger_ns, source=source)
        self.stamps["act"] = spin_until(trigger_ns + self.delay_ns)
        if self.sock is not None:
            self.stamps["phase"] = "stream"
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.stamps["effect"] = time.monotonic_ns()
            self.sock.close()
            self.sock = None
        elif self.tool is not None and self.group is not None:
            self.stamps["phase"] = "tool"
            self.stamps["effect"] = kill_group(self.group.pgid)
            self.stamps["gone"] = wait_gone(self.group)
            self.tool.wait()
        else:
            self.stamps["phase"] = "other"
            self.stamps["effect"] = time.monotonic_ns()
        raise Stopped(trigger_ns, source)


def headless_turn(agent: Headless, prompt: str) -> int:
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(MAX_STEPS):
        step = agent.stream(messages)
        sys.stdout.write("\n")
        sys.stdout.flush()
        messages.append(step.message())
        if not step.calls:
            return EXIT_COMPLETED
        for _, call in sorted(step.calls.items()):
            output, code = agent.run_tool(command_of(call))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"{output}\n[exit {code}]"})
    raise ModelError(f"no answer without a tool call after {MAX_STEPS} model requests")


def parse_args(argv: list[str]) -> dict[str, Any]:
    """A tiny parser (argparse costs milliseconds of start-up, which L4 would carry)."""
    opts: dict[str, Any] = {"base_url": None, "model": "stopbench-1", "cwd": None, "timeout": None, "prompt": None}
    names = {"--base-url": "base_url", "--model": "model", "--cwd": "cwd", "--timeout": "timeout"}
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--":
            opts["prompt"] = " ".join(args)
            break
        if arg in names:
            if not args:
                raise SystemExit(f"cal-agent: {arg} needs a value")
            opts[names[arg]] = args.pop(0)
        elif arg.startswith("--"):
            raise SystemExit(f"cal-agent: unknown option {arg}")
        else:
            opts["prompt"] = " ".join([arg, *args])
            break
    if not opts["base_url"] or opts["prompt"] is None:
        raise SystemExit("usage: agent.py [--timeout T] --base-url URL [--model M] [--cwd DIR] [--] PROMPT")
    if opts["timeout"] is not None:
        opts["timeout"] = float(opts["timeout"])
        if not opts["timeout"] > 0:
            raise SystemExit("cal-agent: --timeout must be positive")
    return opts


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:
        print(VERSION)
        return 0
    opts = parse_args(argv)
    try:
        delay_ns = delay_ns_from_env()
    except ValueError as exc:
        print(f"cal-agent: {exc}", file=sys.stderr)
        return EXIT_ERROR
    deadline = T0_NS + int(opts["timeout"] * 1e9) if opts["timeout"] is not None else None
    agent = Headless(base_url=opts["base_url"], model=opts["model"], cwd=opts["cwd"] or os.getcwd(),
                     api_key=os.environ.get(KEY_ENV, ""), delay_ns=delay_ns, deadline_ns=deadline)
    print(f"cal-agent: session cal-{os.urandom(4).hex()}", file=sys.stderr, flush=True)
    try:
        code = headless_turn(agent, opts["prompt"])
    except Stopped as stopped:
        if stopped.source != "timeout":
            time.sleep(LINGER_AFTER_STOP_S)
        print(f"cal-agent: turn {'interrupted' if stopped.source == 'timeout' else 'aborted'}", file=sys.stderr)
        code = EXIT_STOPPED
    except ModelError as exc:
        print(f"cal-agent: error: {exc}", file=sys.stderr)
        code = EXIT_ERROR
    agent.stamps["exit"] = time.monotonic_ns()
    print(f"cal-agent: stamps {json.dumps(agent.stamps, sort_keys=True)}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown between the decision and the exit: L4 sees only the kernel's


if __name__ == "__main__":
    sys.exit(main())
