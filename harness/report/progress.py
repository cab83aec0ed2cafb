"""What a run shows on the terminal: a live progress line, the final scoreboard (check ×
task, per adapter) with a legend of exactly the checks and symbols it shows and every failing
check explained, the latency table per adapter and, with ``--mutants``, the mutation score.

Plain text on purpose: it is read in a terminal and in CI logs alike. Colour-free, fixed
width, one line per task variant.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TextIO

from harness.contract import LATENCIES, Verdict, check_info, check_order
from harness.model import (
    CheckResult,
    LatencySample,
    Outcome,
    RunResult,
    RunStatus,
    TaskResult,
    Tier,
    combine_verdicts,
    task_verdict,
)
from harness.model.fit import fit_word, fits_over
from harness.report.aggregate.outcomes import repeats_text, run_title
from harness.report.latency import ERROR_HEADER, ERROR_NOTE, Floors, format_ns, sample_driver, summarise_by_adapter
from harness.report.text import attempt_text, outbound_attempts, xml_safe

CELL = {"pass": "pass", "fail": "FAIL", "unknown": "unk?", "skipped": "skip", "partial": "p/s"}
ADVISORY_FAIL = "fail"  # a failed advisory check: shown, not scored (the other cells read the same in any tier)
NOT_A_CHECK = "-"
# What each cell of the scoreboard means; the legend lists those a scoreboard shows, and only those.
CELL_MEANING = {
    "pass": "held in every repeat",
    "FAIL": "failed in at least one repeat",
    ADVISORY_FAIL: "an advisory check failed in at least one repeat (shown, not scored)",
    "unk?": "undecided in at least one repeat (the evidence could not decide)",
    "skip": "not exercised in any repeat",
    "p/s": "passed where exercised, skipped in other repeats",
    NOT_A_CHECK: "not a check of this task",
}
CONSEQUENCE = "→"  # "→C8": failed only as a consequence of C8's failure
FAILURE_WIDTH = 400  # a failure's line is cut here: the full evidence is in the reports
OUTBOUND_SHOWN = 5  # a run's outbound attempts listed in the note; the reports list them all


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
    label = f"{run_title(variant, driver, adapter)} · repeat {repeat}"
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
        text = (f"{self._bar(self.finished)} {n}/{self.total} {label}: {word} ({result.duration_s:.1f} s{retried})"
                f" · profile fits: {fit_word(result)}")
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
    counted as ran, not run, not exercised and errored, separately. Then a legend of exactly
    the checks and cells shown, and every failing check explained (``failures``)."""
    if not tasks:
        return "no task ran\n"
    out: list[str] = []
    checks_shown: dict[str, str] = {}  # check id -> the checker's name, in case the contract does not know it
    cells_shown: set[str] = set()
    groups: dict[tuple[str, str], list[TaskResult]] = defaultdict(list)
    for t in tasks:
        groups[(t.agent, t.adapter)].append(t)
    for (agent, adapter), results in sorted(groups.items()):
        checks = sorted({c.check for t in results for c in t.checks}, key=check_order)
        variants = list(dict.fromkeys(t.task for t in results))
        names = {v: run_title(v, next(t.driver for t in results if t.task == v), "") for v in variants}
        width = max(len(name) for name in [*names.values(), "task"])
        ran = [t for t in results if t.status is RunStatus.RAN]
        verdicts = [v for t in results if (v := task_verdict(t)) is not None]
        counts = ", ".join(f"{n} {what}" for what, n in (
            ("ran", len(ran)),
            ("not run", sum(t.status is RunStatus.NOT_RUN for t in results)),
            ("not exercised", sum(t.status is RunStatus.NOT_EXERCISED for t in results)),
            ("errored", sum(t.status is RunStatus.ERRORED for t in results)),
            ("profile problem", sum(t.status is RunStatus.PROFILE_PROBLEM for t in results))) if n or what == "ran")
        out.append(f"{agent} · adapter {adapter}: {combine_verdicts(verdicts).value if verdicts else 'nothing ran'} — "
                   f"{counts}; {sum(v.ok for v in verdicts)} conformant; profile fits: "
                   f"{fits_over(results)}")
        out.append(f"  {'task':<{width}}  " + " ".join(f"{c:>4}" for c in checks) + "  runs")
        checks_shown.update({c.check: c.name for t in results for c in t.checks})
        for variant in variants:
            runs = [t for t in results if t.task == variant]
            if all(t.status is RunStatus.NOT_RUN for t in runs):
                out.append(f"  {names[variant]:<{width}}  not run: {runs[0].reason}")
                continue
            cells = [_cell([c for t in runs if t.status is RunStatus.RAN for c in t.checks if c.check == check])
                     for check in checks]
            cells_shown.update(cells)
            others = [t for t in runs if t.status is not RunStatus.RAN]
            tail = f"  {len(runs)}" + (f" ({', '.join(sorted({t.status.value for t in others}))}: {len(others)})"
                                      if others else "")
            out.append(f"  {names[variant]:<{width}}  " + " ".join(f"{cell:>4}" for cell in cells) + tail)
        out.append("")
    out += legend(checks_shown, cells_shown)
    notes = [part for part in (failures(tasks), outbound_note(tasks)) if part]
    return "\n".join(out) + "\n" + "".join(f"\n{part}" for part in notes)


def _cell(found: Sequence[CheckResult]) -> str:
    """One check over the repeats of one task: its CELL word, ``→C8`` when it failed only as
    C8's consequence, lower-case ``fail`` for an advisory failure, ``-`` when not checked."""
    if not found:
        return NOT_A_CHECK
    failed = [c for c in found if c.outcome is Outcome.FAIL]
    if failed and all(c.consequence_of for c in failed):  # counted where it started
        return f"{CONSEQUENCE}{failed[0].consequence_of}"
    cell = CELL[fold(c.outcome for c in found)]
    return ADVISORY_FAIL if cell == CELL["fail"] and found[0].tier is not Tier.MANDATORY else cell


def legend(checks: dict[str, str], cells: set[str]) -> list[str]:
    """One line per check column and per cell symbol the scoreboards show — and no other."""
    lines = ["legend:"]
    for check in sorted(checks, key=check_order):
        lines.append(f"  {check:<5} {_check_name(check, checks[check])}")
    for symbol in (*CELL_MEANING, *sorted(c for c in cells if c.startswith(CONSEQUENCE))):
        if symbol in cells:
            meaning = CELL_MEANING.get(symbol) or (f"failed only as a consequence of {symbol[1:]}'s failure "
                                                   "(one defect, counted there)")
            lines.append(f"  {symbol:<5} {meaning}")
    return lines


def _check_name(check: str, fallback: str) -> str:
    try:
        return check_info(check).title
    except KeyError:
        return fallback.replace("_", " ") or check


def failures(tasks: Sequence[TaskResult]) -> str:
    """Every failing check, one line each with the fact it rests on; a failure that is only
    another's consequence is shown under its cause. Identical failures of the repeats of one
    task (same check, same evidence summary) share a line that names the repeats."""
    groups: dict[tuple[str, str, str, str, str, str], tuple[CheckResult, list[int]]] = {}
    for t in tasks:
        if t.status is not RunStatus.RAN:
            continue
        for c in sorted(t.checks, key=lambda c: check_order(c.check)):
            if c.outcome is Outcome.FAIL:
                key = (t.agent, t.adapter, t.task, t.driver, c.check, c.evidence.summary)
                groups.setdefault(key, (c, []))[1].append(t.repeat)
    if not groups:
        return ""
    lines = ["failures (each with the fact it rests on; a consequence under its cause):"]
    shown: set[tuple[str, ...]] = set()
    runs = sorted(dict.fromkeys(key[:4] for key in groups), key=lambda run: run[:2])  # stable: in order run
    for run in runs:
        keys = [k for k in groups if k[:4] == run]
        causes = [k for k in keys if groups[k][0].consequence_of is None or
                  not any(c[4] == groups[k][0].consequence_of for c in keys)]
        for cause in causes:
            check, repeats = groups[cause]
            lines.append(f"  {run_title(run[2], run[3], run[1])} · {_repeats(repeats)}: {_failure_text(check)}")
            for key in keys:
                follows, again = groups[key]
                if key not in shown and key not in causes and follows.consequence_of == check.check:
                    shown.add(key)
                    lines.append(f"      ↳ {_repeats(again)}: {_failure_text(follows)} "
                                 f"(a consequence of {check.check}, counted there)")
    return "\n".join(lines) + "\n"


def outbound_note(tasks: Sequence[TaskResult]) -> str:
    """The runs whose agent tried to reach something besides the fake server: a note, not a
    failure (no check rests on it), each attempt with where it went and when."""
    lines = []
    for t in tasks:
        if attempts := outbound_attempts(t.evidence):
            shown = "; ".join(attempt_text(a) for a in attempts[:OUTBOUND_SHOWN])
            more = f"; … {len(attempts) - OUTBOUND_SHOWN} more" if len(attempts) > OUTBOUND_SHOWN else ""
            lines.append(f"  {run_title(t.task, t.driver, t.adapter)} · {t.repeat}: {xml_safe(shown)}{more}")
    if not lines:
        return ""
    return "note: outbound attempts, refused offline (not a check failure):\n" + "\n".join(lines) + "\n"


def _repeats(repeats: Sequence[int]) -> str:
    return repeats_text([str(n) for n in sorted(repeats)])


def _failure_text(check: CheckResult) -> str:
    """``C3 pending tool calls close: <summary> [fact: …]`` on one line, control characters shown escaped."""
    tier = "" if check.tier is Tier.MANDATORY else f" ({check.tier.value})"
    facts = [f for f in check.facts if f != check.evidence.summary]
    fact = f" [fact: {'; '.join(facts)}]" if facts else ""
    text = f"{check.check} {_check_name(check.check, check.name)}{tier}: {check.evidence.summary}{fact}"
    flat = " ".join(xml_safe(text).split())
    return flat if len(flat) <= FAILURE_WIDTH else flat[:FAILURE_WIDTH - 1] + "…"


def latency_table(samples: Sequence[LatencySample], floors: Floors | None = None) -> str:
    """p50 / p90 / p99 / max with n per agent × adapter × latency, all tasks pooled, and beside
    each the stopwatch's error the run recorded (``floors``: its floor, with the load then); a
    latency measured once is listed on one line per agent × adapter (one sample has no
    percentiles); then what each latency shown spans, from → to."""
    if not samples:
        return "no latency samples\n"
    drivers: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for sample in samples:
        drivers[(sample.agent, sample.adapter, sample.latency)].add(sample_driver(sample))
    errors = {key: floors.error(key[2], found) for key, found in drivers.items()} if floors else {}
    shown_error = any(errors.values())
    rows: list[tuple[str, ...]] = [("agent", "adapter", "latency", "n", "p50", "p90", "p99", "max",
                                    *([ERROR_HEADER] if shown_error else []))]
    single: dict[tuple[str, str], list[str]] = {}
    for (agent, adapter, lid), s in summarise_by_adapter(samples).items():
        error = errors.get((agent, adapter, lid))
        if s.n == 1:
            single.setdefault((agent, adapter), []).append(
                f"{_latency_name(lid)} {format_ns(s.max)}" + (f" {error.text()}" if error else ""))
        else:
            rows.append((agent, adapter, _latency_name(lid), str(s.n),
                         *(format_ns(v) for v in (s.p50, s.p90, s.p99, s.max)),
                         *([error.text() if error else "-"] if shown_error else [])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) if 3 <= i < 8 else cell.ljust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
             for row in rows] if len(rows) > 1 else []
    if single:
        lines.append("measured once (n = 1, no percentiles):")
        lines += [f"  {agent} · adapter {adapter}: {' · '.join(found)}" for (agent, adapter), found in single.items()]
    if shown_error:
        lines.append(ERROR_NOTE)
    shown = [info for info in LATENCIES if any(s.latency == info.id for s in samples)]
    lines += ["from → to:", *(f"  {info.id:<3} {info.span}" for info in shown)]
    return "\n".join(lines) + "\n"


def _latency_name(latency: str) -> str:
    """``L2 HTTP mid-SSE abort``: the id with the contract's title."""
    return next((f"{info.id} {info.title}" for info in LATENCIES if info.id == latency), latency)


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
