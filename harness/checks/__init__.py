"""The contract checkers, one function per contract item, and the safe way to run them.

``REGISTRY`` maps each contract ID (C1–C14, and A1–A3 for the advisory items) to a
``CheckSpec``: the function, what it observes (``B`` black-box, ``L`` log, ``B+L``) and its
default tier, all from the contract's one table (``harness.contract.CHECKS``), iterated in
the contract's order. ``run_check``/``run_checks`` are the only way the runner calls a
checker: a checker that raises yields ``unknown`` with the traceback's last frames, never
``pass``; ``run_checks`` then marks a failure that rests only on facts an earlier check failed
on as that check's consequence (``facts``: one defect, one failure). See ``docs/checks.md`` for
each invariant in words and how it is observed.
"""

from harness.checks import (  # noqa: F401 (each module registers its checkers)
    balance,
    checkpoints,
    inbox,
    leaks,
    log_format,
    partial,
    process,
    repair,
    resume,
    tools,
    turns,
)
from harness.checks.base import REGISTRY, CheckSpec, get_check, run_check, run_checks

__all__ = ["REGISTRY", "CheckSpec", "get_check", "run_check", "run_checks"]
