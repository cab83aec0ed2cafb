"""Record a real agent's session store around completions, kills, Stops and resumes.

    stopbench agents record NAME CASE [--out DIR] [--keep]

CASE is one of :data:`CASES`:

``completed``    one turn that runs one shell command and answers;
``kill-tool``    SIGKILL while a bash window runs (waited for on the window's beacon record),
                 then a resume with a follow-up;
``kill-stream``  SIGKILL after the fourth text chunk of a slow stream, then a resume;
``stop-tool``    SIGINT (the agents' Stop) while a bash window runs, then a resume.

The fake model server runs in this process, so every interruption waits on a record (a
window's beacon, a flushed chunk), never on a sleep. Each run gets a fresh HOME and working
folder under ``/tmp/sbrec/<agent>/`` (fixed paths, so recordings of one agent are alike);
the API key is a fresh canary handed through the environment only. After every phase the
store is copied (for SQLite, through the backup API from a read-only connection) and
scrubbed: the key, and the paths of this installation, are replaced by placeholders.
What the phase observed goes to ``case.json``: command lines, exit codes, start-up times,
every model request the server got (roles and short texts), the server's refusals, the
window's survivors and any file under HOME that still held the key.

Output: ``DIR/<agent>-<version>/<case>/<phase>/<path under HOME>`` and ``…/<case>/case.json``
(DIR defaults to ``tests/fixtures/agents``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.agents.install import NotInstalled, binary, get_agent
from harness.agents.recipes import RECIPES
from harness.agents.scenarios import CASES, MAIN, scenario_text
from harness.agents.scrub import KEY_PLACEHOLDER, Scrubber, key_hits, snapshot

if TYPE_CHECKING:
    import psutil

RUN_ROOT = Path("/tmp/sbrec")
PROMPT = "Run the check command in the shell and tell me what it printed."
FOLLOW_UP = "follow-up: the last turn was cut off. What happened?"
TURN_TIMEOUT_S = 240.0
STOP_GRACE_S = 30.0
STREAM_KILL_CHUNK = 4


# --- processes ----------------------------------------------------------------------------


def _default_sigint() -> None:
    # A process started from a non-interactive shell may inherit SIGINT as ignored: restore it,
    # or a Stop by SIGINT silently does nothing.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class Run:
    role: str
    argv: list[str]
    proc: asyncio.subprocess.Process
    started_ns: int
    log: Path
    ended_ns: int | None = None
    returncode: int | None = None

    def summary(self, scrub: Scrubber, first_request_ns: int | None) -> dict:
        rc = self.returncode
        tail = self.log.read_text(encoding="utf-8", errors="replace")[-1500:] if self.log.exists() else ""
        return {
            "role": self.role, "argv": [scrub.text(a) for a in self.argv],
            "exit": None if rc is None else (f"signal {signal.Signals(-rc).name}" if rc < 0 else rc),
            "duration_s": round((self.ended_ns - self.started_ns) / 1e9, 2) if self.ended_ns else None,
            "first_request_after_s": round((first_request_ns - self.started_ns) / 1e9, 2)
            if first_request_ns and first_request_ns > self.started_ns else None,
            "output_tail": scrub.text(tail),
        }


async def spawn(role: str, argv: list[str], env: dict, cwd: Path, logdir: Path) -> Run:
    log = logdir / f"{role}.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=fd, stderr=fd, start_new_session=True,
                                                    preexec_fn=_default_sigint)
    finally:
        os.close(fd)
    return Run(role, argv, proc, time.monotonic_ns(), log)


async def wait_exit(run: Run, timeout: float) -> bool:
    try:
        await asyncio.wait_for(run.proc.wait(), timeout)
    except TimeoutError:
        return False
    run.ended_ns = time.monotonic_ns()
    run.returncode = run.proc.returncode
    return True


async def kill(run: Run) -> None:
    if run.proc.returncode is None:
        try:
            os.kill(run.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    await wait_exit(run, 30)


def tagged_processes(tag: str) -> list[psutil.Process]:
    import psutil  # here: `stopbench --help` builds this command's parser and loads no psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("STOPBENCH_RECORD_TAG") == tag:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def reap(tag: str) -> list[dict]:
    """Kill every process the runs left behind (found by the tag in their environment)."""
    import psutil

    left = tagged_processes(tag)
    described = []
    for proc in left:
        try:
            described.append({"pid": proc.pid, "cmd": " ".join(proc.cmdline())[:160]})
            proc.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(left, timeout=5)
    return described


# --- the cases ----------------------------------------------------------------------------


async def record_case(name: str, case: str, out_root: Path, keep: bool = False) -> Path:
    from fake_server import load_scenario
    from fake_server.server import FakeServer

    if case not in CASES:
        raise ValueError(f"unknown case {case!r} (cases: {', '.join(CASES)})")
    agent = get_agent(name)
    if name not in RECIPES:
        raise ValueError(f"no recording recipe for {name!r} (recipes: {', '.join(RECIPES)})")
    recipe = RECIPES[name]()
    prog = str(binary(name))
    base = RUN_ROOT / name
    shutil.rmtree(base, ignore_errors=True)
    home, work, logs = base / "home", base / "work", base / "logs"
    for d in (home, work, logs):
        d.mkdir(parents=True)
    key = "sk-stopbench-" + secrets.token_hex(12)
    tag = secrets.token_hex(8)
    scrub = Scrubber(key)
    (base / "scenario.toml").write_text(scenario_text(case, recipe.shell_extra, recipe.finish), encoding="utf-8")
    scenario = load_scenario(base / "scenario.toml")
    dest = out_root / f"{agent.name}-{agent.version}" / case
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    report: dict[str, Any] = {"agent": agent.name, "version": agent.version, "case": case, "phases": [],
                              "notes": []}
    runs: list[Run] = []

    async with FakeServer(scenario=scenario) as server:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
               "TERM": "dumb", "NO_COLOR": "1", "STOPBENCH_RECORD_TAG": tag,
               **recipe.prepare(home, work, server.url, key)}
        report["env"] = {k: (KEY_PLACEHOLDER if v == key else scrub.text(v)) for k, v in env.items()
                         if k not in ("PATH", "STOPBENCH_RECORD_TAG")}
        live = server.records

        def phase(label: str, **extra):
            files = snapshot(recipe, home, dest / label, scrub)
            report["phases"].append({"phase": label, "files": files, **extra})
            return files

        sid = recipe.chosen_session_id()
        first = await spawn("first", recipe.first(prog, PROMPT if case != "kill-stream" else
                                                  "Explain, at length, what this folder is for.", sid or ""),
                            env, work, logs)
        runs.append(first)
        try:
            if case == "completed":
                if not await wait_exit(first, TURN_TIMEOUT_S):
                    report["notes"].append(f"the turn did not end within {TURN_TIMEOUT_S:g} s; killed")
                    await kill(first)
                phase("final")
            else:
                moment = await _interrupt_moment(case, live, first)
                if moment is None:
                    report["notes"].append("the agent exited before the interruption point: "
                                           f"exit {first.proc.returncode}")
                    await wait_exit(first, 5)
                    phase("final")
                else:
                    report["interrupted_at"] = moment
                    if case == "stop-tool":
                        stop_ns = time.monotonic_ns()
                        os.kill(first.proc.pid, signal.SIGINT)
                        if await wait_exit(first, STOP_GRACE_S) and first.ended_ns is not None:
                            report["stop_exit_after_s"] = round((first.ended_ns - stop_ns) / 1e9, 3)
                        else:
                            report["notes"].append(f"still running {STOP_GRACE_S:g} s after SIGINT; SIGKILLed")
                            await kill(first)
                        label = "stopped"
                    else:
                        await kill(first)
                        label = "killed"
                    report["window_survivors"] = _survivors(live)
                    phase(label)
                    reap(tag)
                    sid = sid or recipe.session_id(home, first.log.read_text(errors="replace"))
                    report["session_id"] = sid
                    if sid is None:
                        report["notes"].append("no session id found: not resumed")
                    else:
                        marker = len(live)
                        second = await spawn("resume", recipe.resume(prog, FOLLOW_UP, sid), env, work, logs)
                        runs.append(second)
                        if not await wait_exit(second, TURN_TIMEOUT_S):
                            report["notes"].append("the resumed turn did not end; killed")
                            await kill(second)
                        report["resume_requests_from"] = marker + 1
                        phase("resumed")
            if "session_id" not in report:
                report["session_id"] = sid or recipe.session_id(home, first.log.read_text(errors="replace"))
        finally:
            for run in runs:
                if run.proc.returncode is None:
                    await kill(run)
            report["left_behind"] = reap(tag)
        records = [r.to_json() for r in live]  # the plain, versioned form, for the report
        request_records = [r for r in records if r.get("kind") == "request"]
        for run in runs:
            after = [r["mono_ns"] for r in request_records if r["mono_ns"] > run.started_ns]
            report.setdefault("runs", []).append(run.summary(scrub, min(after) if after else None))
        report["requests"] = [_request_summary(r, records, scrub) for r in request_records]
        report["server_errors"] = [scrub.text(json.dumps({k: r.get(k) for k in ("request", "path", "status",
                                                                               "problem")}))
                                   for r in records if r.get("kind") == "error"]
        report["key_in_files"] = key_hits(home, key)
    (dest / "case.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (dest / "scenario.toml").write_text((base / "scenario.toml").read_text(), encoding="utf-8")
    leaked = [p for p in dest.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    if leaked:
        raise RuntimeError(f"the key survived scrubbing in {', '.join(map(str, leaked))}")
    if not keep:
        shutil.rmtree(base, ignore_errors=True)
    return dest


async def _interrupt_moment(case: str, records, run: Run) -> dict | None:
    """Wait for the case's interruption point, or for the agent to exit first (None)."""
    if case in ("kill-tool", "stop-tool"):
        waiter = asyncio.wait_for(records.wait_window("w1"), TURN_TIMEOUT_S)
    else:
        async def chunk():
            response = await asyncio.wait_for(records.wait_for(
                lambda r: r.kind == "response" and r.response_index == MAIN, "the slow stream's response"),
                TURN_TIMEOUT_S)
            return await asyncio.wait_for(records.wait_chunk(response.request, STREAM_KILL_CHUNK), TURN_TIMEOUT_S)
        waiter = chunk()
    moment = asyncio.ensure_future(waiter)
    exited = asyncio.ensure_future(run.proc.wait())
    done, _ = await asyncio.wait({moment, exited}, return_when=asyncio.FIRST_COMPLETED)
    if moment in done:
        exited.cancel()
        record = moment.result().to_json()
        return {k: record.get(k) for k in ("kind", "request", "chunk", "window") if k in record}
    moment.cancel()
    return None


def _survivors(records) -> list[dict]:
    """The window's processes still alive right after the interruption."""
    alive = []
    for record in records.of_kind("window"):
        for p in record.to_json().get("pids", []):
            try:
                proc = psutil.Process(p["pid"])
                if abs(proc.create_time() - p["create_time"]) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append({"pid": p["pid"], "role": p.get("role")})
            except psutil.Error:
                continue
    return alive


def _request_summary(r: dict, records, scrub: Scrubber) -> dict:
    canonical = r.get("canonical") or {}
    messages = canonical.get("messages") or []
    response = next((x for x in records if x.get("kind") == "response" and x.get("request") == r["request"]), None)
    tools = canonical.get("tools") or []  # the body of a large request is not kept; its canonical form is
    out = {
        "request": r["request"], "api": r.get("api"), "path": r.get("path"), "status": r.get("status"),
        "error": r.get("error"), "response_index": response.get("response_index") if response else None,
        "tools": len(tools),
        "messages": [_message_summary(m) for m in messages],
    }
    return json.loads(scrub.text(json.dumps(out, ensure_ascii=False)))


def _message_summary(m: dict) -> dict:
    limit = 80 if m.get("role") == "system" else 400
    text = m.get("text") or ""
    out: dict[str, Any] = {"role": m.get("role"), "text": text[:limit] + ("…" if len(text) > limit else "")}
    if m.get("tool_calls"):
        out["tool_calls"] = [{"id": c.get("id"), "name": c.get("name"),
                              "arguments": str(c.get("arguments"))[:300]} for c in m["tool_calls"]]
    if m.get("tool_call_id"):
        out["tool_call_id"] = m["tool_call_id"]
    return out


# --- command ------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help=f"agent ({', '.join(RECIPES)})")
    parser.add_argument("cases", nargs="+", metavar="CASE", help=f"one or more of: {', '.join(CASES)}, or all")
    parser.add_argument("--out", default="tests/fixtures/agents", help="where recordings go")
    parser.add_argument("--keep", action="store_true", help=f"keep the run folder under {RUN_ROOT}")


def main(args: argparse.Namespace) -> int:
    cases = list(CASES) if args.cases == ["all"] else args.cases
    bad = [c for c in cases if c not in CASES]
    if bad:
        print(f"stopbench agents record: unknown case {bad[0]!r} (cases: {', '.join(CASES)})", file=sys.stderr)
        return 2
    if args.name not in RECIPES:
        print(f"stopbench agents record: no recipe for {args.name!r} (recipes: {', '.join(RECIPES)})",
              file=sys.stderr)
        return 2
    try:
        binary(args.name)
    except NotInstalled as exc:
        print(f"stopbench agents record: {exc}", file=sys.stderr)
        return 2
    for case in cases:
        dest = asyncio.run(record_case(args.name, case, Path(args.out), keep=args.keep))
        report = json.loads((dest / "case.json").read_text())
        exits = ", ".join(f"{r['role']} {r['exit']}" for r in report.get("runs", []))
        print(f"{args.name} {case}: {dest} ({exits}; {len(report['requests'])} requests"
              + (f"; notes: {'; '.join(report['notes'])}" if report["notes"] else "") + ")", flush=True)
    return 0
