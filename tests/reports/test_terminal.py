"""What ``stopbench run`` prints at its end: the scoreboard with a legend of exactly what it
shows, every failing check explained with its fact (a consequence under its cause), and the
latency table with names, single samples folded."""

from __future__ import annotations

import dataclasses
import io

from report_builders import build_run
from test_invariants import check, consequence_run, run, task

from harness.model import CheckResult, Evidence, LatencySample, Outcome, RunStatus, TaskResult, Tier
from harness.report.progress import Progress, latency_table, scoreboard


def shown_and_explained(text: str) -> tuple[set[str], set[str]]:
    """The column heads and cells of every scoreboard table, and the symbols its legend explains."""
    shown: set[str] = set()
    lines = text.splitlines()
    legend_at = lines.index("legend:")
    checks: list[str] = []
    start = 0
    for line in lines[:legend_at]:
        words = line.split()
        if words[:1] == ["task"]:
            checks = words[1:-1]  # task, the checks, runs
            start = len(line) - len(" ".join(f"{c:>4}" for c in checks) + "  runs")  # where the cells begin
            shown.update(checks)
        elif line.startswith("  ") and "not run:" not in line:
            shown.update(line[start:].split()[:len(checks)])
    explained = set()
    for line in lines[legend_at + 1:]:
        if not line.startswith("  "):
            break
        explained.add(line.split()[0])
    return shown, explained


def test_the_legend_explains_exactly_the_symbols_the_scoreboard_shows():
    partial = run("partial",
                  task("partial", "interrupt-cancel", (check("C3", Outcome.PASS), check("C5", Outcome.PASS)), repeat=0),
                  task("partial", "interrupt-cancel", (check("C3", Outcome.PASS), check("C5", Outcome.SKIPPED)),
                       repeat=1),
                  task("partial", "exit-codes", (check("C8", Outcome.PASS),)))
    all_pass = run("calm", task("calm", "exit-codes", (check("C8", Outcome.PASS),)))
    broken = build_run()
    for tasks in (broken.tasks, consequence_run().tasks, partial.tasks, all_pass.tasks):
        text = scoreboard([t for t in tasks if t.mutant is None])
        shown, explained = shown_and_explained(text)
        assert shown == explained, text
    assert shown_and_explained(scoreboard(all_pass.tasks)) == ({"C8", "pass"},) * 2
    text = scoreboard(consequence_run().tasks)
    assert "  →C8   failed only as a consequence of C8's failure (one defect, counted there)" in text
    assert "  C12   your own cancel is not an error" in text and "  C8    exit codes tell the truth" in text
    assert "  -     not a check of this task" in scoreboard(partial.tasks)
    assert "  p/s   passed where exercised, skipped in other repeats" in scoreboard(partial.tasks)


def failures_of(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("failures"))
    return lines[start + 1:]


def test_every_failing_check_is_explained_with_its_fact_and_a_consequence_under_its_cause():
    fact = {"fact": "the run process (pid 7) exited 0"}
    lying = run("lying",
                task("lying", "http-stream-cancel", (
                    check("C1", Outcome.PASS),
                    CheckResult("C8", Outcome.FAIL, Evidence("should exit 3, not exit 0", (fact,))),
                    CheckResult("C12", Outcome.FAIL, Evidence("should settle aborted, not completed", (fact,)),
                                consequence_of="C8"),
                    CheckResult("A1", Outcome.FAIL, Evidence("no resume note"), Tier.ADVISORY))),
                task("lying", "interrupt-cancel", (check("C3", Outcome.FAIL, "pid 9 outlived Stop"),)),
                task("lying", "interrupt-cancel", (check("C3", Outcome.FAIL, "pid 9 outlived Stop"),), repeat=1))
    assert failures_of(scoreboard(lying.tasks)) == [
        "  http-stream-cancel · driver subprocess · adapter http · repeat 0: C8 exit codes tell the truth: "
        "should exit 3, not exit 0 [fact: the run process (pid 7) exited 0]",
        "      ↳ repeat 0: C12 your own cancel is not an error: should settle aborted, not completed "
        "[fact: the run process (pid 7) exited 0] (a consequence of C8, counted there)",
        "  http-stream-cancel · driver subprocess · adapter http · repeat 0: A1 the model is told the session "
        "resumed (advisory): no resume note",
        "  interrupt-cancel · driver subprocess · adapter http · repeats 0, 1: C3 pending tool calls close: "
        "pid 9 outlived Stop",
    ]
    assert "failures" not in scoreboard(run("calm", task("calm", "exit-codes", (check("C8", Outcome.PASS),))).tasks)


def test_a_failure_line_shows_control_characters_escaped():
    stopped = [t for t in build_run().tasks
               if (t.task, t.adapter, t.repeat, t.mutant) == ("interrupt-cancel", "http", 0, None)]
    (line,) = failures_of(scoreboard(stopped))
    assert "\x1b" not in line and "\\x1b[31mred" in line


def test_latencies_are_named_and_single_samples_are_listed_on_one_line():
    samples = [LatencySample("L2", 1_000_000 + k, "ref", "http", "interrupt-cancel", k) for k in range(3)]
    samples += [LatencySample("L4", 40_000_000, "ref", "http", "interrupt-timeout"),
                LatencySample("L7", 210_000_000, "ref", "http", "interrupt-restart")]
    text = latency_table(samples)
    lines = text.splitlines()
    (row,) = [line for line in lines if line.startswith("ref ")]
    assert row.split()[2:7] == ["L2", "HTTP", "mid-SSE", "abort", "3"]
    assert "  ref · adapter http: L4 timeout overshoot 40.00 ms · L7 resume, seen from outside 210.00 ms" in lines
    assert "  L2  Stop delivered → the fake server sees the connection closed" in lines
    assert [line.split()[0] for line in lines if "40.00 ms" in line or "210.00 ms" in line] == ["ref"]  # one line


def test_each_finished_run_and_each_agent_says_whether_the_profile_fit():
    """The progress line of a finished run carries its profile fit, and so does the agent's
    scoreboard at the end: what did not fit, named."""
    misfit = {"fits": "no", "misfits": ["the queued acknowledgement"], "expectations": []}
    result = TaskResult("inbox", "claude-code", "http", 0, (), status=RunStatus.PROFILE_PROBLEM,
                        reason="the profile does not fit", evidence={"profile_fit": misfit})
    out = io.StringIO()
    progress = Progress(2, out)
    progress.done(1, "inbox · driver terminal", result)
    progress.done(2, "inbox · driver terminal", dataclasses.replace(result, evidence={}))
    first, _, second, _ = out.getvalue().splitlines()
    assert first.endswith("profile problem (0.0 s) · profile fits: no (the queued acknowledgement)"), first
    assert second.endswith("· profile fits: unknown"), second
    header = scoreboard([result]).splitlines()[0]
    assert header.endswith("; profile fits: no (the queued acknowledgement)"), header
