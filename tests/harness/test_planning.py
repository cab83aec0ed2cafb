"""Work plans: every variant × adapter × repeat × mutant in a stable order, and the tasks
that do not apply to an agent planned as not run, with the reason."""

from dataclasses import replace

from harness.profiles import load_profile
from harness.run.planning import WorkItem, not_applicable, plan
from harness.tasks import TASKS_DIR, load_task


def test_plan_is_every_variant_adapter_repeat_and_mutant_in_a_stable_order():
    profile = load_profile("reference")
    cancel, stream = load_task(TASKS_DIR / "interrupt-cancel"), load_task(TASKS_DIR / "http-stream-cancel")
    items = plan(profile, [cancel, stream], adapters=["inproc", "http"], repeat=2, mutants=[None, "seq-gap"])
    keys = [i.key for i in items]
    assert keys[:4] == ["interrupt-cancel[terminal]/inproc/1/-", "interrupt-cancel[terminal]/inproc/2/-",
                        "interrupt-cancel[terminal]/http/1/-", "interrupt-cancel[terminal]/http/2/-"]
    # http-stream-cancel is restricted to the http adapter
    assert [k for k in keys if k.startswith("http-stream-cancel[subprocess]")] == [
        "http-stream-cancel[subprocess]/http/1/-", "http-stream-cancel[subprocess]/http/2/-",
        "http-stream-cancel[subprocess]/http/1/seq-gap", "http-stream-cancel[subprocess]/http/2/seq-gap"]
    # a mutant never runs in-process: its failpoint lives in the environment of a started process
    assert not [k for k in keys if k.startswith("interrupt-cancel[inproc]") and k.endswith("seq-gap")]
    ran = [i for i in items if i.not_run is None]
    # interrupt-cancel: 4 drivers × 2 adapters × 2 repeats, and 3 × 2 × 2 with the mutant (not in-process);
    # http-stream-cancel: 2 drivers × the http adapter × 2 repeats, with and without the mutant
    assert len(ran) == (4 * 2 * 2 + 3 * 2 * 2) + (2 * 1 * 2 * 2)
    assert not [i for i in items if i.not_run is not None]


def test_a_task_without_a_driver_for_the_agent_is_planned_as_not_run_once():
    headless_only = replace(load_profile("reference"), interactive=None, inproc_factory=None, acp=None)
    cancel = load_task(TASKS_DIR / "interrupt-cancel")
    items = plan(headless_only, [cancel], adapters=["http"], repeat=3)
    ran = [i for i in items if i.not_run is None]
    skipped = [i for i in items if i.not_run is not None]
    assert [i.driver for i in ran] == ["subprocess"] * 3
    assert sorted(i.driver for i in skipped) == ["acp", "inproc", "terminal"]  # once each, not per repeat
    assert "has no [interactive] command" in next(i.not_run for i in skipped if i.driver == "terminal")


def test_damage_tasks_run_only_where_the_reader_can_damage_the_store():
    black_box = replace(load_profile("reference"), log_reader="none")
    torn = load_task(TASKS_DIR / "log-torn-tail")
    assert "no log reader" in (not_applicable(black_box, torn, "subprocess") or "")
    assert not_applicable(load_profile("reference"), torn, "subprocess") is None


def test_an_agent_without_headless_resume_runs_only_the_one_turn_tasks_headless():
    reference = load_profile("reference")
    assert reference.headless is not None
    once = replace(reference, headless=replace(reference.headless, resume_options=(), no_resume="only its TUI resumes"))
    for name in ("interrupt-cancel", "interrupt-restart", "log-mid-file-damage", "exit-codes"):
        why = not_applicable(once, load_task(TASKS_DIR / name), "subprocess") or ""
        assert "resumes a session" in why and "only its TUI resumes" in why, name
    assert not_applicable(once, load_task(TASKS_DIR / "interrupt-timeout"), "subprocess") is None
    assert not_applicable(once, load_task(TASKS_DIR / "interrupt-cancel"), "terminal") is None  # its TUI may


def test_work_item_keys_name_variant_adapter_repeat_and_mutant():
    task = load_task(TASKS_DIR / "interrupt-restart")
    assert WorkItem(task, "terminal", "http", 2, "no-repair").key == "interrupt-restart[terminal]/http/2/no-repair"


def _task(mutant, *outcomes, status=None, reason=None):
    from harness.model import CheckResult, Evidence, Outcome, RunStatus, TaskResult

    checks = tuple(CheckResult(c, Outcome(o), Evidence(""), tier) for c, o, tier in outcomes)
    return TaskResult("t", "a", "http", 1, checks, status=status or RunStatus.RAN, reason=reason, mutant=mutant)


def test_mutation_summary_counts_mutants_caught_by_a_mandatory_check_or_a_broken_task():
    from harness.model import RunStatus, Tier
    from harness.model.mutation import mutation_summary

    M, A = Tier.MANDATORY, Tier.ADVISORY
    tasks = [
        _task(None, ("C1", "pass", M)),
        _task("seq-gap", ("C10", "fail", M), ("C1", "pass", M)),
        _task("lose-inbox", ("C6", "pass", M), ("A1", "fail", A)),  # advisory only: survived
        _task("no-settle-on-stop", ("C1", "pass", M), status=RunStatus.ERRORED, reason="harness error: settle"),
    ]
    summary = mutation_summary(tasks, {"seq-gap": ("C10",), "lose-inbox": ("C6",), "no-settle-on-stop": ("C1",)})
    assert (summary["caught"], summary["total"]) == (2, 3)
    assert summary["mutants"]["seq-gap"] == {"targets": ["C10"], "failed": ["C10"], "task_errors": [],
                                              "targets_caught": True, "caught": True, "runs": 1}
    assert summary["mutants"]["lose-inbox"]["caught"] is False
    assert summary["mutants"]["no-settle-on-stop"]["task_errors"] == ["t"]


def test_a_failure_that_is_a_consequence_is_its_causes_catch():
    """One defect, one failure: a mutant caught by C8 whose exit C12 also read is C8's catch alone."""
    from harness.model import Tier
    from harness.model.mutation import mutation_summary

    task = _task("exit-0-on-stop", ("C8", "fail", Tier.MANDATORY), ("C12", "fail", Tier.MANDATORY))
    c8, c12 = task.checks
    task = replace(task, checks=(c8, replace(c12, consequence_of="C8")))
    summary = mutation_summary([task], {"exit-0-on-stop": ("C8",)})
    assert summary["mutants"]["exit-0-on-stop"]["failed"] == ["C8"] and summary["caught"] == 1


def test_a_mutant_that_only_leaves_a_check_undecided_survived_in_the_score_and_in_the_reports():
    """One definition of caught: the exit code's mutation score and the reports' failpoint rows agree."""
    from harness.model import RunResult, Tier
    from harness.model.mutation import caught_by, mutation_summary
    from harness.report.aggregate import failpoints, scoreboards

    undecided = _task("no-settle-on-stop", ("C1", "unknown", Tier.MANDATORY), ("C9", "pass", Tier.MANDATORY))
    summary = mutation_summary([undecided], {"no-settle-on-stop": ("C1",)})
    assert caught_by(undecided) == [] and summary["caught"] == 0
    run = RunResult(run={"agent": "a", "mutation": summary}, tasks=(undecided,), latencies=())
    (row,) = failpoints([run], scoreboards([run]))
    assert row.caught_by == []
