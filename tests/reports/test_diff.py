"""``stopbench diff BASE NEW``: per task, driver, adapter and check, what changed between two
results files; latencies side by side; exit 1 on anything newly broken."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.cli import main
from harness.model import CheckResult, Evidence, LatencySample, Outcome, RunResult, RunStatus, TaskResult
from harness.report.diff import NO_VERDICT, Change, diff
from harness.report.writer import results_text

P, F, U, S = Outcome.PASS, Outcome.FAIL, Outcome.UNKNOWN, Outcome.SKIPPED


def task(name: str, checks: dict[str, Outcome], *, driver: str = "subprocess", repeat: int = 0,
         status: RunStatus = RunStatus.RAN, agent: str = "claude-code", because: dict[str, str] | None = None
         ) -> TaskResult:
    """A task run with these check outcomes; ``because`` names, per check, the earlier check
    its failure rests on (as evidence, the way results without the field carry it)."""
    because = because or {}
    return TaskResult(
        task=name, agent=agent, adapter="http", repeat=repeat, driver=driver, status=status,
        reason=None if status is RunStatus.RAN else "the harness failed",
        checks=tuple(CheckResult(c, o, Evidence(f"{c} {o.value}", ({"consequence_of": because[c]},) if c in because
                                                else ())) for c, o in checks.items()))


def run(*tasks: TaskResult, version: str = "2.1.197", latencies: tuple[LatencySample, ...] = ()) -> RunResult:
    return RunResult(run={"agent": "claude-code", "agent_version": version}, tasks=tasks, latencies=latencies)


def changes(result) -> dict[tuple[str, ...], Change]:
    return {r.key[1:]: r.change for r in result.checks}


def test_each_row_says_what_became_of_the_check():
    base = run(task("interrupt-cancel", {"C1": P, "C3": F, "C5": P, "C8": P, "C9": S, "C10": U, "C11": F}),
               task("interrupt-cancel", {"C1": P}, driver="terminal"))
    new = run(task("interrupt-cancel", {"C1": F, "C3": P, "C5": U, "C8": P, "C9": F, "C10": P, "C11": U}),
              task("interrupt-cancel", {"C1": P}, driver="terminal"), version="2.1.332")
    rows = changes(diff(base, new))
    on = ("interrupt-cancel", "subprocess", "http")
    assert rows[(*on, "C1")] is Change.BROKEN
    assert rows[(*on, "C3")] is Change.FIXED
    assert rows[(*on, "C5")] is Change.UNDECIDABLE and rows[(*on, "C11")] is Change.UNDECIDABLE
    assert rows[(*on, "C8")] is Change.UNCHANGED
    assert rows[(*on, "C9")] is Change.BROKEN  # skipped -> fail
    assert rows[(*on, "C10")] is Change.CHANGED  # unknown -> pass: decided now
    assert rows[("interrupt-cancel", "terminal", "http", "C1")] is Change.UNCHANGED  # the driver is its own row
    assert diff(base, new).broken == 2


def test_a_check_fails_in_any_repeat_and_a_task_that_errored_is_newly_undecidable():
    base = run(task("exit-codes", {"C8": P}), task("exit-codes", {"C8": P}, repeat=1),
               task("restart", {"C7": P}))
    new = run(task("exit-codes", {"C8": P}), task("exit-codes", {"C8": F}, repeat=1),
              task("restart", {}, status=RunStatus.ERRORED))
    result = diff(base, new)
    rows = changes(result)
    assert rows[("exit-codes", "subprocess", "http", "C8")] is Change.BROKEN
    assert rows[("restart", "subprocess", "http", "(task)")] is Change.UNDECIDABLE
    [c7] = [r for r in result.checks if r.key[1] == "restart" and r.key[4] == "C7"]
    assert (c7.base, c7.new, c7.change) == ("pass", "errored", Change.UNDECIDABLE)


def test_a_failure_resting_on_an_earlier_check_is_shown_and_not_counted():
    base = run(task("stop-tool", {"C3": P, "C4": P}))
    new = run(task("stop-tool", {"C3": F, "C4": F}, because={"C4": "C3"}))
    result = diff(base, new)
    [c3, c4] = [r for r in result.checks if r.key[4] in ("C3", "C4")]
    assert (c3.change, c3.counted) == (Change.BROKEN, True)
    assert (c4.change, c4.consequence_of, c4.counted) == (Change.BROKEN, "C3", False)
    assert result.broken == 1
    only_consequence = diff(run(task("stop-tool", {"C4": P})),
                            run(task("stop-tool", {"C4": F}, because={"C4": "C3"})))
    assert only_consequence.broken == 0 and only_consequence.exit_code == 0


def test_latencies_side_by_side_with_no_verdict_on_few_samples():
    def samples(values: list[int]) -> tuple[LatencySample, ...]:
        return tuple(LatencySample("L3", v, "claude-code", "http", "interrupt-cancel", repeat=i)
                     for i, v in enumerate(values))

    few = diff(run(latencies=samples([10_000_000, 11_000_000])), run(latencies=samples([30_000_000, 31_000_000])))
    [row] = few.latencies
    assert (row.n_base, row.n_new, row.p50_base, row.p50_new, row.verdict) == (2, 2, 10_000_000, 30_000_000,
                                                                                 NO_VERDICT)
    many = diff(run(latencies=samples([10_000_000 + i for i in range(20)])),
                run(latencies=samples([30_000_000 + i for i in range(20)])))
    assert many.latencies[0].verdict.startswith("REGRESSION")
    assert many.exit_code == 0  # the diff lists latencies; the gate decides on them


def write(path: Path, result: RunResult) -> Path:
    path.write_text(results_text(result), encoding="utf-8")
    return path


def test_cli_writes_terminal_markdown_and_json_and_exits_1_on_newly_broken(tmp_path, capsys):
    base = write(tmp_path / "base.json", run(task("exit-codes", {"C8": P, "C13": F})))
    new = write(tmp_path / "new.json", run(task("exit-codes", {"C8": F, "C13": P}), version="2.1.332"))
    md, js = tmp_path / "out" / "diff.md", tmp_path / "out" / "diff.json"
    assert main(["diff", str(base), str(new), "--md", str(md), "--json", str(js)]) == 1
    out = capsys.readouterr().out
    assert "claude-code 2.1.197" in out and "claude-code 2.1.332" in out
    assert "newly broken" in out and "fixed" in out
    assert "| exit-codes | subprocess | http | C8 | pass | fail | newly broken |" in md.read_text(encoding="utf-8")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["newly_broken"] == 1 and data["counts"]["fixed"] == 1
    assert (data["base"]["agent_version"], data["new"]["agent_version"]) == ("2.1.197", "2.1.332")
    assert main(["diff", str(new), str(new)]) == 0


def test_cli_refuses_a_bad_file_naming_file_and_item(tmp_path, capsys):
    good = write(tmp_path / "good.json", run(task("exit-codes", {"C8": P})))
    data = json.loads(good.read_text(encoding="utf-8"))
    del data["tasks"][0]["status"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    assert main(["diff", str(good), str(bad)]) == 2
    assert f"{bad}: tasks[0]: missing field 'status'" in capsys.readouterr().err
    assert main(["diff", str(good), str(tmp_path / "none.json")]) == 2
    assert "none.json: no such file" in capsys.readouterr().err


def test_the_diff_module_loads_no_driver_reader_or_installer():
    code = ("import sys, harness.report.diff; "
            "print([m for m in ('harness.drivers', 'harness.readers', 'harness.agents.install') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_an_older_file_of_the_agent_compares_with_a_release_as_one_agent(tmp_path, capsys):
    """A version-1 file, whose agent_version was what the program printed, beside a file that
    records the version driven and the one reported: rows match, whatever the versions."""
    old = {"format": "stopbench-results", "version": 1, "latencies": [],
           "run": {"agent": "claude-code", "agent_version": "2.1.197 (Claude Code)"},
           "tasks": [{"task": "exit-codes", "agent": "claude-code", "adapter": "http", "driver": "subprocess",
                      "repeat": 0, "checks": [{"check": "C8", "outcome": "pass", "tier": "mandatory",
                                               "evidence": {"summary": "exit 2"}}]}]}
    base = tmp_path / "old.json"
    base.write_text(json.dumps(old), encoding="utf-8")
    release = run(task("exit-codes", {"C8": P}), version="2.1.332")
    new = write(tmp_path / "new.json", RunResult(run={**release.run, "agent_version_reported": "2.1.332 (Claude Code)"},
                                                 tasks=release.tasks, latencies=()))
    assert main(["diff", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "claude-code 2.1.197 (Claude Code)" in out and "claude-code 2.1.332" in out
    assert "2 unchanged" in out  # the task row and C8: one agent on both sides


def test_a_task_that_gained_a_driver_still_lines_up_with_a_run_from_before():
    """A result names the driver only when its task has several: a task that gains one renames
    its results (http-stream-cancel → http-stream-cancel[subprocess]), and the diff still
    compares them, by task and driver."""
    from harness.model import CheckResult, Evidence, Outcome, RunResult, TaskResult, Tier
    from harness.report.diff import diff

    def run(task: str) -> RunResult:
        check = CheckResult("C8", Outcome.PASS, Evidence("exit 3"), Tier.MANDATORY)
        return RunResult({"agent": "a"}, (TaskResult(task, "a", "http", 1, (check,), driver="subprocess"),), ())

    changes = diff(run("http-stream-cancel"), run("http-stream-cancel[subprocess]")).checks
    assert {(c.key[1], c.change.value) for c in changes} == {("http-stream-cancel", "unchanged")}
