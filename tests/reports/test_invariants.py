"""The leaderboard opens with where each agent stands on each invariant, ranks agents by
invariants held and defects found, counts a defect once and never counts unknown as a failure;
a failure that follows from another is shown linked to it; a profile problem is reported as such."""

from __future__ import annotations

import json

from harness.contract import Verdict
from harness.model import CheckResult, Evidence, Outcome, RunResult, RunStatus, TaskResult, task_verdict
from harness.report import render_html, render_junit, render_markdown
from harness.report.aggregate import Standing, Standings, leaderboard, ranked_agents, scoreboards
from harness.report.load import parse_results
from harness.report.writer import results_text

PASSING = ("C1", "C2", "C4", "C5", "C6", "C7", "C8", "C9")


def check(check_id: str, outcome: Outcome, summary: str = "", **fields) -> CheckResult:
    return CheckResult(check_id, outcome, Evidence(summary or f"{check_id} {outcome.value}", ({"note": "x"},)),
                       **fields)


def task(agent: str, name: str, checks: tuple[CheckResult, ...], *, driver: str = "subprocess",
         status: RunStatus = RunStatus.RAN, reason: str | None = None, repeat: int = 0) -> TaskResult:
    return TaskResult(task=name, agent=agent, adapter="http", repeat=repeat, checks=checks, driver=driver,
                      status=status, reason=reason)


def run(agent: str, *tasks: TaskResult) -> RunResult:
    result = RunResult({"agent": agent}, tasks, ())
    return parse_results(json.loads(results_text(result)))  # as renderers meet it: through the file


def few() -> RunResult:
    """Could run two tasks: one conformant, one failing C1; all else unknown or not run."""
    return run("few",
               task("few", "exit-codes", (check("C8", Outcome.PASS), check("C3", Outcome.UNKNOWN))),
               task("few", "interrupt-cancel", (check("C1", Outcome.FAIL), check("C8", Outcome.PASS))))


def many() -> RunResult:
    """Ran everything on three drivers; one defect (C3), shown by every run."""
    return run("many", *(task("many", "interrupt-cancel", (*(check(c, Outcome.PASS) for c in PASSING),
                                                           check("C3", Outcome.FAIL, "tree survived")),
                              driver=driver) for driver in ("inproc", "subprocess", "terminal")))


def test_an_agent_that_ran_little_is_not_ranked_first():
    boards = scoreboards([few(), many()])
    assert [b.label for b in leaderboard(boards)] == ["many", "few"]
    assert [a.label for a in ranked_agents(boards)] == ["many", "few"]


def test_a_defect_counts_once_and_unknown_is_no_failure():
    many_standings = Standings.of(many().tasks)
    assert (many_standings.held, many_standings.defects) == (len(PASSING), 1)  # C3 broken in 3 runs: one defect
    few_standings = Standings.of(few().tasks)
    assert few_standings.by_check["C3"] is Standing.UNKNOWN and few_standings.defects == 1
    assert few_standings.by_check["C14"] is Standing.NOT_RUN


def test_the_leaderboard_opens_with_the_invariant_matrix():
    html = render_html([few(), many()])
    assert html.index('id="invariants"') < html.index('id="scoreboard"')
    matrix = html[html.index('id="invariants"'):html.index('id="scoreboard"')]
    assert matrix.index(">many<") < matrix.index(">few<")
    assert '<span class="badge broken">broken</span>' in matrix and '<span class="badge unknown">unknown' in matrix
    md = render_markdown([few(), many()])
    assert md.index("### Invariants, agent by agent") < md.index("### Leaderboard")
    assert "| 1 | many | 8 | 1 | holds | holds | broken |" in md
    assert 'id="invariants"' not in render_html([many()])  # one agent: no leaderboard, no matrix


def consequence_run() -> RunResult:
    fact = {"fact": "the run process (pid 7) exited 0", "note": "n"}
    checks = (check("C1", Outcome.PASS),
              CheckResult("C8", Outcome.FAIL, Evidence("should exit 3, not exit 0", (fact,))),
              CheckResult("C12", Outcome.FAIL, Evidence("should settle aborted, not completed", (fact,)),
                          consequence_of="C8"))
    return run("lying", task("lying", "http-stream-cancel", checks))


def test_a_consequence_is_shown_linked_and_not_counted():
    runs = [consequence_run()]
    (board,) = scoreboards(runs)
    assert board.standings.by_check["C12"] is Standing.NOT_RUN and board.standings.defects == 1
    assert board.cell("http-stream-cancel", "C12").text == "1/1 → C8"
    md = render_markdown(runs)
    assert "a consequence of C8 (counted there)" in md
    junit = render_junit(runs)
    assert junit.count("<failure") == 1 and "fail, a consequence of C8" in junit


def test_a_profile_problem_is_reported_and_judges_nothing():
    problem = task("sid-at-exit", "interrupt-restart", (check("C7", Outcome.SKIPPED),),
                   status=RunStatus.PROFILE_PROBLEM, reason="cannot resume: the profile gives no way to name the "
                   "session after a kill")
    runs = [run("sid-at-exit", problem, task("sid-at-exit", "exit-codes", (check("C8", Outcome.PASS),)))]
    assert task_verdict(runs[0].tasks[0]) is Verdict.INCOMPLETE
    (board,) = scoreboards(runs)
    assert board.count(RunStatus.PROFILE_PROBLEM) == 1 and board.standings.defects == 0
    md = render_markdown(runs)
    assert "interrupt-restart · driver subprocess: profile problem in 1 run** — cannot resume: the profile gives no" in md
    assert 'type="profile"' in render_junit(runs)


def test_the_terminal_scoreboard_shows_a_consequence_as_an_arrow_to_its_cause():
    from harness.report.progress import scoreboard

    text = scoreboard(consequence_run().tasks)
    row = next(line for line in text.splitlines() if line.strip().startswith("http-stream-cancel"))
    assert row.split()[4:7] == ["pass", "FAIL", "→C8"]  # after "http-stream-cancel · driver subprocess"


def test_the_html_run_links_a_consequence_to_its_cause():
    html = render_html([consequence_run()])
    assert "<em>a consequence of C8 (counted there)</em>: should settle aborted, not completed" in html
    assert "a consequence of C8, counted there</h4>" in html
