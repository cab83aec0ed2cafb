"""Record an agent's session store around completions, kills, Stops and resumes.

    stopbench agents record AGENT CASE... [--out DIR] [--keep]

AGENT is a built-in profile name (``NAME@VERSION`` for another installed version) or a profile
file; CASE is one of :data:`harness.agents.scenarios.CASES` (or ``all``):

``completed``    one turn that runs one shell command and answers;
``kill-tool``    SIGKILL while a bash window runs, then a restart with a follow-up;
``kill-stream``  SIGKILL after the fourth text chunk of a slow stream, then a restart;
``stop-tool``    the profile's Stop while a bash window runs, then a follow-up.

Nothing here knows an agent: each phase of a case (``killed``, ``stopped``, ``resumed``,
``final``) is a task that ``stopbench run --keep`` plays with the agent's profile, on the
headless driver, exactly as a scored run does — the profile says how the agent is started,
pointed at the fake server, stopped and resumed, and where its store is (``[session]
log_glob``). The store the kept run folder holds after the phase is copied (SQLite through the
backup API) and scrubbed: the run's key, and the paths of this installation and of the run
folder, become placeholders. ``case.json`` says what each phase's run was: its status, its
reason, and the files kept.

Output: ``DIR/<agent>-<version>/<case>/<phase>/<path under HOME>``, ``…/<case>/case.json`` and
the case's ``scenario.toml`` (DIR defaults to ``tests/fixtures/agents``).
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.agents.scenarios import CASES, phases, scenario_text, task_text
from harness.agents.scrub import CANARY, Scrubber, snapshot

RUN_TIMEOUT_S = 900.0  # a failsafe for one phase's `stopbench run` (the steps have budgets of their own)
RUN_FOLDER = "/tmp/stopbench-record"  # what a kept run folder's path becomes in the kept files


class RecordError(Exception):
    """A recording that could not be made; the message says why."""


def record_case(agent: str, case: str, out_root: Path, *, keep: bool = False) -> Path:
    """Run the case's phases with ``agent``'s profile, keep each phase's store under
    ``out_root``; the case's folder. With ``keep`` the runs' folders stay (printed)."""
    from harness.profiles import ProfileError, load_profile

    if case not in CASES:
        raise RecordError(f"unknown case {case!r} (cases: {', '.join(CASES)})")
    try:
        profile = load_profile(agent)
    except ProfileError as exc:
        raise RecordError(str(exc)) from None
    if not profile.headless:
        raise RecordError(f"profile {profile.name!r} has no [headless] command: recordings run headless")
    if not profile.session.log_glob:
        raise RecordError(f"profile {profile.name!r} has no [session] log_glob: nothing says where its store is")
    version = profile.agent_version or (profile.install.version if profile.install else None)
    dest = out_root / f"{profile.name}-{version}" / case if version else out_root / profile.name / case
    work = Path(tempfile.mkdtemp(prefix="stopbench-record-"))
    try:
        report = _run_phases(agent, case, work)
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        summary: dict = {"agent": profile.name, "version": version, "case": case, "phases": []}
        for phase, task in report:
            run_dir = Path(task["evidence"]["run_dir"])
            scrub = Scrubber(_keys(run_dir), paths={str(run_dir): RUN_FOLDER})
            files = snapshot(_store_paths(profile, run_dir), run_dir, dest / phase, scrub)
            summary["phases"].append({"phase": phase, "task": task["task"], "status": task.get("status"),
                                      "reason": scrub.text(task.get("reason") or ""), "files": files})
        (dest / "case.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (dest / "scenario.toml").write_text(scenario_text(case), encoding="utf-8")
        leaked = [str(p) for p in dest.rglob("*") if p.is_file() and CANARY.search(p.read_bytes())]
        if leaked:
            raise RecordError(f"a key survived scrubbing in {', '.join(leaked)}")
    finally:
        if keep:
            print(f"run folders kept in {work / 'report' / 'runs'}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return dest


def _run_phases(agent: str, case: str, work: Path) -> list[tuple[str, dict]]:
    """Each phase of ``case`` as a task of ``stopbench run --keep``; (phase, its task result)."""
    tasks = work / "tasks"
    names = {}
    for phase in phases(case):
        name = f"record-{case}-{phase.name}"
        (tasks / name).mkdir(parents=True)
        (tasks / name / "task.toml").write_text(task_text(name, phase), encoding="utf-8")
        (tasks / name / "scenario.toml").write_text(scenario_text(case), encoding="utf-8")
        names[name] = phase.name
    from harness.profiles import load_profile

    argv = [sys.executable, "-m", "harness", "run", "--agent", agent, "--tasks-dir", str(tasks),
            "--driver", "subprocess", "--adapter", load_profile(agent).adapters[0], "--retries", "0",
            "--keep", "--report-dir", str(work / "report"), *(a for n in names for a in ("--task", n))]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RecordError(f"stopbench run took over {RUN_TIMEOUT_S:g} s; gave up") from None
    try:
        results = json.loads((work / "report" / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RecordError(f"stopbench run exited {proc.returncode} without results:\n{proc.stderr[-2000:]}") from None
    found = [(names[t["task"]], t) for t in results.get("tasks", []) if t.get("task") in names]
    missing = [n for n in names if n not in {t["task"] for _, t in found}]
    if missing or any("run_dir" not in t.get("evidence", {}) for _, t in found):
        raise RecordError(f"stopbench run exited {proc.returncode} without a kept run of "
                          f"{', '.join(missing) or 'every phase'}:\n{proc.stderr[-2000:]}")
    return found


def _store_paths(profile, run_dir: Path) -> list[Path]:
    """The store the run left: every match of the profile's ``log_glob`` (a folder whole)."""
    from harness.profiles import fill

    pattern = fill(profile.session.log_glob, {"home": run_dir / "home", "sessions_dir": run_dir / "sessions",
                                              "cwd": run_dir / "work"})
    out: list[Path] = []
    for match in sorted(glob.glob(pattern, recursive=True)):
        path = Path(match)
        out += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return out


def _keys(run_dir: Path) -> set[str]:
    """The run's canary keys wherever the run folder holds one (a config file, the agent's store)."""
    keys: set[str] = set()
    for path in run_dir.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_size < 64 << 20:
                keys.update(m.decode() for m in CANARY.findall(path.read_bytes()))
        except OSError:
            continue
    return keys


# --- command ------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="AGENT", help="a built-in profile (NAME or NAME@VERSION) or a profile TOML")
    parser.add_argument("cases", nargs="+", metavar="CASE", help=f"one or more of: {', '.join(CASES)}, or all")
    parser.add_argument("--out", default="tests/fixtures/agents", help="where recordings go")
    parser.add_argument("--keep", action="store_true", help="keep the runs' folders (printed)")


def main(args: argparse.Namespace) -> int:
    from harness.agents.install import NotInstalled
    from harness.profiles import ProfileError, agent_binary, load_profile

    cases = list(CASES) if args.cases == ["all"] else args.cases
    bad = [c for c in cases if c not in CASES]
    if bad:
        print(f"stopbench agents record: unknown case {bad[0]!r} (cases: {', '.join(CASES)})", file=sys.stderr)
        return 2
    try:
        profile = load_profile(args.name)
        if profile.agent:
            agent_binary(profile)
    except (ProfileError, NotInstalled) as exc:
        print(f"stopbench agents record: {exc}", file=sys.stderr)
        return 2
    for case in cases:
        try:
            dest = record_case(args.name, case, Path(args.out), keep=args.keep)
        except RecordError as exc:
            print(f"stopbench agents record: {args.name} {case}: {exc}", file=sys.stderr)
            return 2
        report = json.loads((dest / "case.json").read_text())
        said = "; ".join(f"{p['phase']}: {p['status']}, {len(p['files'])} file(s)"
                         + (f" ({p['reason']})" if p["reason"] else "") for p in report["phases"])
        print(f"{args.name} {case}: {dest} ({said})", flush=True)
    return 0


__all__ = ["RecordError", "record_case"]
