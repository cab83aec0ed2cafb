"""The contract checkers, one function per contract item, and the safe way to run them.

``REGISTRY`` maps each contract ID (C1–C13, and A1/A2 for the advisory items) to a
``CheckSpec``: the function, what it observes (``B`` black-box, ``L`` log, ``B+L``) and its
default tier. ``run_check``/``run_checks`` are the only way the runner calls a checker: a
checker that raises yields ``unknown`` with the traceback's last frames, never ``pass``.
See ``docs/checks.md`` for each invariant in words and how it is observed.
"""

from harness.checks import balance, durability, inbox, partial, process, resume, secrets, tools, turns  # noqa: F401 (registers)
from harness.checks.base import REGISTRY, CheckSpec, get_check, run_check, run_checks


def _contract_order(item: tuple[str, CheckSpec]) -> tuple[int, int]:
    check_id = item[0]
    return (0 if check_id.startswith("C") else 1, int(check_id[1:]))


_ordered = sorted(REGISTRY.items(), key=_contract_order)
REGISTRY.clear()
REGISTRY.update(_ordered)

__all__ = ["REGISTRY", "CheckSpec", "get_check", "run_check", "run_checks"]
