"""What a run shows on the terminal: a live progress line, the final scoreboard (check ×
task, per adapter), the latency table per adapter and, with ``--mutants``, the mutation score.

Plain text on purpose: it is read in a terminal and in CI logs alike. Colour-free, fixed
width, one line per task variant.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TextIO

from harness.contract import Verdict, check_order
from harness.model import LatencySample, Outcome, RunResult, RunStatus, TaskResult, Tier, combine_verdicts, task_verdict
from harness.report.latency import format_ns, summarise_by_adapter

CELL = {"pass": "pass", "fail": "FAIL", "unknown": "unk?", "skipped": "skip", "partial": "p/s"}
LEGEND = ("pass = held in every repeat · FAIL = failed in at least one · unk? = undecided in at least one "
          "(the evidence could not decide) · skip = not exercised in any repeat · p/s = passed where exercised, "
          "skipped in other repeats · →C8 = failed only as a consequence of C8's failure (one defect, counted "
          "there) · - = not a check of this task · lower case = advisory (shown, not scored)")


def fold(outcomes: Iterable[Outcome]) -> str:
    """A check's status over repeats: the worst outcome that occurred; never "pass" when a
    repeat was skipped ("partial")."""
    seen = {o.value for o in outcomes}
    for status in ("fail", "unknown"):
        if status in seen:
            return status
    if seen == {"pass"}:
        return "pass"
    return "partial" if "pass" in seen else "skipped"


def item_label(variant: str, driver: str, adapter: str, repeat: int, mutant: str | None) -> str:
    """The progress line's words for one work item: task, driver, adapter, repeat."""
    task = variant.split("[", 1)[0]
    label = f"{task} · driver {driver} · adapter {adapter} · repeat {repeat}"
    return label + (f" · mutant {mutant}" if mutant else "")


class Progress:
    """A one-line live progress bar on a terminal; one line per finished item elsewhere. A
    run that did not end conformant prints its one-line reason under the progress line."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total = total
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.t0 = time.monotonic()
        self.finished = 0  # items end out of order beside each other (--jobs)

    def start(self, n: int, label: str) -> None:
        if self.live:
            self._line(f"{self._bar(self.finished)} {n}/{self.total} {label} …")

    def done(self, n: int, label: str, result: TaskResult) -> None:
        verdict = task_verdict(result)
        word = verdict.value if verdict is not None else result.status.value
        if result.status is RunStatus.ERRORED:
            word = "error"
        elif result.status is RunStatus.PROFILE_PROBLEM:
            word = "profile problem"
        tries = len(result.attempts)
        retried = f", {tries} retr{'ies' if tries > 1 else 'y'}" if tries else ""
        self.finished += 1
        text = f"{self._bar(self.finished)} {n}/{self.total} {label}: {word} ({result.duration_s:.1f} s{retried})"
        why = _why(result, verdict)
        if self.live:
            self._line(text)
            if why or self.finished == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        if why:
            self.stream.write(f"    {why}\n")
        self.stream.flush()

    def _bar(self, done: int, width: int = 20) -> str:
        filled = round(width * done / self.total) if self.total else width
        return "[" + "#" * filled + "." * (width - filled) + "]"

    def _line(self, text: str) -> None:
        self.stream.write("\r\x1b[2K" + text[:200])
        self.stream.flush()


def _why(result: TaskResult, verdict: Verdict | None) -> str:
    """One line: the reason a run did not end conformant (nothing when it did)."""
    if verdict is not None and verdict.ok:
        return ""
    if result.status is not RunStatus.RAN:
        return f"{result.status.value}: {result.reason}"
    failed = [c for c in result.checks if c.tier is Tier.MANDATORY and c.outcome is Outcome.FAIL]
    undecided = [c for c in result.checks if c.tier is Tier.MANDATORY and c.outcome is Outcome.UNKNOWN]
    first = next(iter(failed or undecided), None)
    head = f"{first.check} {first.outcome.value}: {first.evidence.summary}" if first else ""
    if result.reason:
        head = f"the agent: {result.reason}" + (f"; {head}" if head else "")
    return head[:300]


def scoreboard(tasks: Sequence[TaskResult]) -> str:
    """Check × task matrix per agent × adapter, statuses folded over repeats; task runs
    counted as ran, not run, not exercised and errored, separately."""
    if not tasks:
        return "no task ran\n"
    out: list[str] = []
    groups: dict[tuple[str, str], list[TaskResult]] = defaultdict(list)
    for t in tasks:
        groups[(t.agent, t.adapter)].append(t)
    for (agent, adapter), results in sorted(groups.items()):
        checks = sorted({c.check for t in results for c in t.checks}, key=check_order)
        variants = list(dict.fromkeys(t.task for t in results))
        width = max(len(v) for v in variants + ["task"])
        ran = [t for t in results if t.status is RunStatus.RAN]
        verdicts = [v for t in results if (v := task_verdict(t)) is not None]
        counts = ", ".join(f"{n} {what}" for what, n in (
            ("ran", len(ran)),
            ("not run", sum(t.status is RunStatus.NOT_RUN for t in results)),
            ("not exercised", sum(t.status is RunStatus.NOT_EXERCISED for t in results)),
            ("errored", sum(t.status is RunStatus.ERRORED for t in results)),
            ("profile problem", sum(t.status is RunStatus.PROFILE_PROBLEM for t in results))) if n or what == "ran")
        out.append(f"{agent} on {adapter}: {combine_verdicts(verdicts).value if verdicts else 'nothing ran'} — "
                   f"{counts}; {sum(v.ok for v in verdicts)} conformant")
        out.append(f"  {'task':<{width}}  " + " ".join(f"{c:>4}" for c in checks) + "  runs")
        for variant in variants:
            runs = [t for t in results if t.task == variant]
            if all(t.status is RunStatus.NOT_RUN for t in runs):
                out.append(f"  {variant:<{width}}  not run: {runs[0].reason}")
                continue
            cells = []
            for check in checks:
                found = [c for t in runs if t.status is RunStatus.RAN for c in t.checks if c.check == check]
                cell = CELL[fold(c.outcome for c in found)] if found else "-"
                failed = [c for c in found if c.outcome is Outcome.FAIL]
                if failed and all(c.consequence_of for c in failed):  # counted where it started
                    cell = f"→{failed[0].consequence_of}"
                if found and found[0].tier is not Tier.MANDATORY and cell != "-":
                    cell = cell.lower()  # advisory/informational: shown, not scored
                cells.append(f"{cell:>4}")
            others = [t for t in runs if t.status is not RunStatus.RAN]
            tail = f"  {len(runs)}" + (f" ({', '.join(sorted({t.status.value for t in others}))}: {len(others)})"
                                      if others else "")
            out.append(f"  {variant:<{width}}  " + " ".join(cells) + tail)
        out.append("")
    out.append(LEGEND)
    return "\n".join(out) + "\n"


def latency_table(samples: Sequence[LatencySample]) -> str:
    """p50 / p90 / p99 / max with n per agent × adapter × latency, all tasks pooled."""
    if not samples:
        return "no latency samples\n"
    rows: list[tuple[str, ...]] = [("agent", "adapter", "latency", "n", "p50", "p90", "p99", "max")]
    for (agent, adapter, lid), s in summarise_by_adapter(samples).items():
        rows.append((agent, adapter, lid, str(s.n), *(format_ns(v) for v in (s.p50, s.p90, s.p99, s.max))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) if i >= 3 else cell.ljust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    return "\n".join(lines) + "\n"


def mutation_table(run: RunResult) -> str:
    """Per mutant: the checks that failed (caught it) and whether its targets were among them."""
    mutation = run.run.get("mutation")
    if not mutation:
        return ""
    lines = [f"mutation score: {mutation['caught']}/{mutation['total']} mutants caught"]
    for name, m in mutation["mutants"].items():
        status = "caught" if m["caught"] else "SURVIVED"
        targets = ",".join(m["targets"]) or "?"
        lines.append(f"  {name:<26} {status:<8} targets {targets:<10} failed: {', '.join(m['failed']) or '-'}")
    return "\n".join(lines) + "\n"
