"""What a run shows on the terminal: a live progress line, the final scoreboard (check ×
task, per adapter), the latency table per adapter and, with ``--mutants``, the mutation score.

Plain text on purpose: it is read in a terminal and in CI logs alike. Colour-free, fixed
width, one line per task variant.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Iterable, Sequence, TextIO

from harness.latency import format_ns, summarise_by_adapter
from harness.model import LatencySample, Outcome, RunResult, TaskResult, Tier

CELL = {"pass": "pass", "fail": "FAIL", "unknown": "unk?", "skipped": "skip"}


def fold(outcomes: Iterable[Outcome]) -> str:
    """A check's status over repeats: the worst outcome that occurred."""
    from harness.report.aggregate import fold as worst

    return worst(list(outcomes))


class Progress:
    """A one-line live progress bar on a terminal; one line per finished item elsewhere."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total = total
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.t0 = time.monotonic()
        self.failed = 0

    def start(self, n: int, label: str) -> None:
        if self.live:
            self._line(f"{self._bar(n - 1)} {n}/{self.total} {label} …")

    def done(self, n: int, label: str, result: TaskResult) -> None:
        verdict = "error" if result.error else ("ok" if result.conformant else "NOT conformant")
        if result.error or not result.conformant:
            self.failed += 1
        text = f"{self._bar(n)} {n}/{self.total} {label}: {verdict} ({result.duration_s:.1f} s)"
        if self.live:
            self._line(text)
            if n == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def _bar(self, done: int, width: int = 20) -> str:
        filled = round(width * done / self.total) if self.total else width
        return "[" + "#" * filled + "." * (width - filled) + "]"

    def _line(self, text: str) -> None:
        self.stream.write("\r\x1b[2K" + text[:160])
        self.stream.flush()


def scoreboard(tasks: Sequence[TaskResult]) -> str:
    """Check × task matrix per agent × adapter, statuses folded over repeats."""
    if not tasks:
        return "no task ran\n"
    out: list[str] = []
    groups: dict[tuple[str, str], list[TaskResult]] = defaultdict(list)
    for t in tasks:
        groups[(t.agent, t.adapter)].append(t)
    for (agent, adapter), results in sorted(groups.items()):
        checks = sorted({c.check for t in results for c in t.checks}, key=_check_order)
        variants = list(dict.fromkeys(t.task for t in results))
        width = max(len(v) for v in variants + ["task"])
        conformant = sum(t.conformant for t in results)
        out.append(f"{agent} on {adapter}: {conformant}/{len(results)} task runs conformant")
        out.append(f"  {'task':<{width}}  " + " ".join(f"{c:>4}" for c in checks) + "  runs")
        for variant in variants:
            runs = [t for t in results if t.task == variant]
            cells = []
            for check in checks:
                found = [c for t in runs for c in t.checks if c.check == check]
                cell = CELL[fold(c.outcome for c in found)] if found else "-"
                if found and found[0].tier is not Tier.MANDATORY and cell != "pass":
                    cell = cell.lower()  # advisory/informational: shown, not scored
                cells.append(f"{cell:>4}")
            errors = sum(t.error is not None for t in runs)
            tail = f"  {len(runs)}" + (f" ({errors} error{'s' if errors > 1 else ''})" if errors else "")
            out.append(f"  {variant:<{width}}  " + " ".join(cells) + tail)
        out.append("")
    out.append("pass = held in every repeat, FAIL = failed at least once, unk? = undecided, skip = not exercised; "
               "lower case = advisory")
    return "\n".join(out) + "\n"


def _check_order(check: str) -> tuple[int, int]:
    return (0 if check.startswith("C") else 1, int(check[1:]) if check[1:].isdigit() else 0)


def latency_table(samples: Sequence[LatencySample]) -> str:
    """p50 / p90 / p99 / max with n per agent × adapter × latency, all tasks pooled."""
    if not samples:
        return "no latency samples\n"
    rows = [("agent", "adapter", "latency", "n", "p50", "p90", "p99", "max")]
    for (agent, adapter, lid), s in summarise_by_adapter(samples).items():
        rows.append((agent, adapter, lid, str(s.n), format_ns(s.p50), format_ns(s.p90), format_ns(s.p99), format_ns(s.max)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) if i >= 3 else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
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
