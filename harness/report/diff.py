"""``stopbench diff BASE NEW``: what changed between two results files — typically two
releases of one agent — check by check, and their latencies side by side.

Rows are one check of one task on one driver and adapter (and one agent, when a file holds
several; otherwise agent names are not compared, so ``claude-code`` 2.1.197 and 2.1.332 are
one agent). A check's outcome over the repeats of a file is the worst one seen
(``harness.report.aggregate.fold``) among the task runs that ran; a task that did not run on a
side shows its status there (``errored``, ``not exercised``, ``not run``). Each row is:

* ``fixed``: fail → pass;
* ``newly broken``: anything else → fail (pass, unknown, skipped, or a task that did not
  run) — the one kind that makes ``stopbench diff`` exit 1, unless every failure on the new
  side rests on the same fact as an earlier check (``consequence_of``): then it is shown with
  that check and not counted;
* ``newly undecidable``: pass or fail → unknown, or a task that ran and now errored or was
  not exercised: what was known is not any more;
* ``unchanged``; ``changed`` (any other move, e.g. unknown → pass); ``only in base`` and
  ``only in new`` (a task, driver, adapter or check one file does not have).

Latencies are compared as the gate compares them (``harness.report.gate``: Mann-Whitney U,
the tolerance, machines that differ), shown as p50 with n on each side; with too few samples
for any verdict the row says so. They never change the exit code: the gate decides on
latency; the diff lists.

The module reads results values only (the model and the report package), never drivers,
readers or installs: a diff runs anywhere the two files are.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.contract import check_order
from harness.model import Outcome, RunResult, RunStatus, TaskResult
from harness.model.results import task_of
from harness.report.aggregate import fold, latency_order
from harness.report.gate import NOT_COMPARABLE, TASK_ROW, TOO_FEW, agent_key, compare, consequences
from harness.report.gate_text import columns
from harness.report.latency import format_ns, percentile
from harness.report.text import md_cell


class Change(enum.StrEnum):
    """What became of a row, in the order a reader wants them: what got worse first."""

    BROKEN = "newly broken"
    UNDECIDABLE = "newly undecidable"
    FIXED = "fixed"
    CHANGED = "changed"
    ONLY_BASE = "only in base"
    ONLY_NEW = "only in new"
    UNCHANGED = "unchanged"


CHANGE_ORDER = tuple(Change)
DECIDED = ("pass", "fail")
NOT_DECIDED_NOW = ("unknown", RunStatus.ERRORED.value, RunStatus.NOT_EXERCISED.value)
NO_VERDICT = "no verdict: too few samples"

Key = tuple[str, str, str, str, str]  # agent ("*" when one per file), task, driver, adapter, check


@dataclass(frozen=True)
class CheckChange:
    key: Key
    base: str | None  # folded outcome, the task's status when it did not run, None when absent
    new: str | None
    change: Change
    consequence_of: str | None = None  # every new failure rests on this earlier check's fact

    @property
    def counted(self) -> bool:
        """A failure the release brought, not one that follows from another."""
        return self.change is Change.BROKEN and self.consequence_of is None

    def to_json(self) -> dict[str, Any]:
        agent, task, driver, adapter, check = self.key
        return {"agent": agent, "task": task, "driver": driver, "adapter": adapter, "check": check,
                "base": self.base, "new": self.new, "change": self.change.value,
                "consequence_of": self.consequence_of, "counted": self.counted}


@dataclass(frozen=True)
class LatencyChange:
    key: tuple[str, str, str, str]  # agent, adapter, task, latency ID
    n_base: int
    n_new: int
    p50_base: int | None
    p50_new: int | None
    verdict: str

    def to_json(self) -> dict[str, Any]:
        agent, adapter, task, latency = self.key
        return {"agent": agent, "adapter": adapter, "task": task, "latency": latency, "n_base": self.n_base,
                "n_new": self.n_new, "p50_base_ns": self.p50_base, "p50_new_ns": self.p50_new,
                "verdict": self.verdict}


@dataclass(frozen=True)
class Diff:
    base: RunResult
    new: RunResult
    checks: tuple[CheckChange, ...]
    latencies: tuple[LatencyChange, ...]

    @property
    def broken(self) -> int:
        return sum(r.counted for r in self.checks)

    def count(self, change: Change) -> int:
        return sum(r.change is change for r in self.checks)

    @property
    def exit_code(self) -> int:
        return 1 if self.broken else 0

    def to_json(self, base_name: str = "", new_name: str = "") -> dict[str, Any]:
        return {"base": _side(self.base, base_name), "new": _side(self.new, new_name),
                "newly_broken": self.broken,
                "counts": {c.value: self.count(c) for c in CHANGE_ORDER},
                "checks": [r.to_json() for r in self.checks],
                "latencies": [r.to_json() for r in self.latencies]}


def diff(base: RunResult, new: RunResult) -> Diff:
    """Every check row of either file, what became of it, and the latencies side by side."""
    key_of = agent_key(base, new)
    before, after = _side_rows(base, key_of), _side_rows(new, key_of)
    _not_ran(before, after)
    _not_ran(after, before)
    follows = consequences(new, lambda t, c: (key_of(t.agent), task_of(t.task, t.driver), t.driver,
                                             t.adapter, c.check))
    checks = [_change(key, before.get(key), after.get(key), follows.get(key))
              for key in sorted(before.keys() | after.keys(), key=_row_order)]
    return Diff(base, new, tuple(checks), _latencies(base, new, key_of))


def _side_rows(run: RunResult, key_of: Callable[[str], str]) -> dict[Key, str]:
    """Each row's folded outcome over the task runs that ran; a task row holds the task's
    status over its runs (the worst), and so does a check of a task none of whose runs ran."""
    outcomes: dict[tuple[str, str, str, str], dict[str, list[Outcome]]] = {}
    statuses: dict[tuple[str, str, str, str], list[RunStatus]] = {}
    for t in _plain_tasks(run):
        task_key = (key_of(t.agent), task_of(t.task, t.driver), t.driver, t.adapter)
        statuses.setdefault(task_key, []).append(t.status)
        checks = outcomes.setdefault(task_key, {})
        for c in t.checks:
            checks.setdefault(c.check, []).extend([c.outcome] if t.status is RunStatus.RAN else [])
    out: dict[Key, str] = {}
    for task_key, seen in statuses.items():
        status = _worst_status(seen)
        out[(*task_key, TASK_ROW)] = status
        out.update({(*task_key, check): fold(found) if found else status
                    for check, found in outcomes[task_key].items()})
    return out


def _not_ran(side: dict[Key, str], other: dict[Key, str]) -> None:
    """A check the other file has, of a task that is here but did not run (an errored run
    has no checks): the task's status stands for it, rather than "only in" the other file."""
    for key in other.keys() - side.keys():
        status = side.get((*key[:4], TASK_ROW))
        if status is not None and status != RunStatus.RAN.value:
            side[key] = status


def _worst_status(seen: Sequence[RunStatus]) -> str:
    order = (RunStatus.ERRORED, RunStatus.NOT_EXERCISED, RunStatus.RAN, RunStatus.NOT_RUN)
    return next(s.value for s in order if s in seen)


def _plain_tasks(run: RunResult) -> list[TaskResult]:
    return [t for t in run.tasks if t.mutant is None]  # a failpoint's run is expected to fail


def _change(key: Key, base: str | None, new: str | None, consequence: str | None) -> CheckChange:
    if base is None:
        change = Change.ONLY_NEW
    elif new is None:
        change = Change.ONLY_BASE
    elif base == new:
        change = Change.UNCHANGED
    elif new == "fail":
        change = Change.BROKEN
    elif base == "fail" and new == "pass":
        change = Change.FIXED
    elif (base in DECIDED or base == RunStatus.RAN.value) and new in NOT_DECIDED_NOW:
        change = Change.UNDECIDABLE
    else:
        change = Change.CHANGED
    return CheckChange(key, base, new, change, consequence if change is Change.BROKEN else None)


def _row_order(key: Key) -> tuple:
    agent, task, driver, adapter, check = key
    return (agent, task, driver, adapter, check != TASK_ROW, check_order(check), check)


def _latencies(base: RunResult, new: RunResult, key_of: Callable[[str], str]) -> tuple[LatencyChange, ...]:
    """p50 and n of each side, with the gate's verdict on the pair (none when too few)."""
    samples_b, samples_n = _samples(base, key_of), _samples(new, key_of)
    rows = []
    for row in compare(base, new).latencies:
        b, n = samples_b.get(row.key, []), samples_n.get(row.key, [])
        verdict = NO_VERDICT if row.verdict == TOO_FEW else row.verdict
        rows.append(LatencyChange(row.key, len(b), len(n), percentile(b, 50) if b else None,
                                  percentile(n, 50) if n else None, verdict))
    return tuple(sorted(rows, key=lambda r: (*r.key[:3], latency_order(r.key[3]))))


def _samples(run: RunResult, key_of: Callable[[str], str]) -> dict[tuple[str, str, str, str], list[int]]:
    out: dict[tuple[str, str, str, str], list[int]] = {}
    for s in run.latencies:
        out.setdefault((key_of(s.agent), s.adapter, s.task, s.latency), []).append(s.value_ns)
    return out


def _side(run: RunResult, name: str) -> dict[str, Any]:
    return {"file": name, "agent": run.run.get("agent"), "agent_version": run.run.get("agent_version"),
            "verdict": run.verdict.value}


# --- rendering ------------------------------------------------------------------------


def headline(result: Diff) -> str:
    """The counts, worst first, and what the exit code will say."""
    consequences = result.count(Change.BROKEN) - result.broken
    also = {Change.BROKEN: f" ({consequences} a consequence of an earlier check, not counted)"} if consequences else {}
    counts = ", ".join(f"{result.count(c)} {c.value}{also.get(c, '')}" for c in CHANGE_ORDER if result.count(c))
    return f"diff: {len(result.checks)} rows — {counts or 'nothing to compare'}"


def _who(run: RunResult, name: str) -> str:
    agent, version = run.run.get("agent") or "?", run.run.get("agent_version")
    return f"{name} ({agent}{f' {version}' if version else ''}, {run.verdict.value})"


def _tables(result: Diff) -> list[tuple[str, list[str], list[list[str]]]]:
    shown = [r for r in result.checks if r.change is not Change.UNCHANGED]
    shown.sort(key=lambda r: CHANGE_ORDER.index(r.change))  # stable: rows keep their order within a kind
    one_agent = {r.key[0] for r in result.checks} <= {"*"}
    lead = [] if one_agent else ["agent"]
    checks = (f"checks: {len(result.checks)} compared, {result.count(Change.UNCHANGED)} unchanged",
              [*lead, "task", "driver", "adapter", "check", "base", "new", "change"],
              [[*([r.key[0]] if lead else []), *r.key[1:], r.base or "-", r.new or "-", _change_text(r)]
               for r in shown])
    latencies = (f"latencies: {len(result.latencies)} compared (p50, n)",
                 [*lead, "adapter", "task", "latency", "base", "new", "verdict"],
                 [[*([r.key[0]] if lead else []), *r.key[1:], _p50(r.p50_base, r.n_base), _p50(r.p50_new, r.n_new),
                   r.verdict] for r in result.latencies])
    return [checks, latencies]


def _change_text(row: CheckChange) -> str:
    if row.change is Change.BROKEN and row.consequence_of:
        return f"newly broken — consequence of {row.consequence_of}, not counted"
    return row.change.value


def _p50(value: int | None, n: int) -> str:
    return "-" if value is None else f"{format_ns(value)} (n={n})"


def format_diff(result: Diff, base_name: str = "BASE", new_name: str = "NEW") -> str:
    """The rows that changed and every latency, for a terminal."""
    lines = [f"stopbench diff: {_who(result.base, base_name)} -> {_who(result.new, new_name)}"]
    for caption, header, rows in _tables(result):
        lines += ["", caption, *(columns(header, rows) if rows else [])]
    if any(r.verdict == NOT_COMPARABLE for r in result.latencies):
        lines.append("(the two machines differ: latencies shown, not judged)")
    return "\n".join([*lines, "", headline(result)]) + "\n"


def format_diff_markdown(result: Diff, base_name: str = "BASE", new_name: str = "NEW") -> str:
    """The same for a pull request or a release note."""
    lines = [f"## {md_cell(headline(result))}", "",
             f"{md_cell(_who(result.base, base_name))} → {md_cell(_who(result.new, new_name))}"]
    for caption, header, rows in _tables(result):
        lines += ["", f"**{caption}**"]
        if rows:
            lines += ["", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header),
                      *("| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows)]
    return "\n".join(lines) + "\n"


def diff_json(result: Diff, base_name: str = "", new_name: str = "") -> str:
    return json.dumps(result.to_json(base_name, new_name), indent=1, ensure_ascii=False) + "\n"
