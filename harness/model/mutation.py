"""Whether a mutant was caught: one definition, for the run's exit code and every report.

A mutant is the agent with one failpoint on. It is *caught* when one of its task runs failed
a mandatory check (a consequence counts with its cause) or could not complete (a task error).
A check left undecided (``unknown``) is not a catch: it observed nothing wrong, only that it
could not tell — a mutant that leaves only that behind has survived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.contract import check_order
from harness.model.results import RunStatus, TaskResult, Tier

TASK_ERROR = "task error"


def caught_by(mutant_task: TaskResult) -> list[str]:
    """What gave a failpoint away in one task run: the mandatory checks that failed, or the
    task error. Empty when the failpoint went unnoticed."""
    found = [TASK_ERROR] if mutant_task.status is RunStatus.ERRORED else []
    return found + [c.check for c in mutant_task.checks if c.tier is Tier.MANDATORY and c.counts_as_failure]


def mutation_summary(tasks: Sequence[TaskResult], failpoints: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Per mutant: which checks failed on any task (caught it), and the mutation score; a
    mutant is caught when ``caught_by`` finds something in one of its task runs."""
    mutants: dict[str, Any] = {}
    for name, targets in failpoints.items():
        runs = [t for t in tasks if t.mutant == name]
        signs = {sign for t in runs for sign in caught_by(t)}
        failed_checks = sorted(signs - {TASK_ERROR}, key=check_order)
        errors = sorted({t.task for t in runs if t.status is RunStatus.ERRORED})
        mutants[name] = {
            "targets": list(targets),
            "failed": failed_checks,
            "task_errors": errors,
            "targets_caught": bool(set(targets) & set(failed_checks)),
            "caught": bool(signs),
            "runs": len(runs),
        }
    caught = sum(m["caught"] for m in mutants.values())
    return {"caught": caught, "total": len(mutants), "score": caught / len(mutants) if mutants else None,
            "mutants": mutants}
