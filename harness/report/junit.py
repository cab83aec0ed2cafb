"""JUnit XML for CI test tabs: one suite per task run, one testcase per check.

Mapping, chosen so the test tab is red exactly when the run is not conformant or incomplete:
mandatory ``fail`` -> <failure> (one that is another check's consequence -> <skipped> naming
that check: one defect, one failure); mandatory ``unknown`` -> <error> (the harness could not
decide, which must not pass silently) — unless it is unknown only for want of a log reader,
which the contract counts as conformant (black-box): then <skipped> saying so; ``skipped``
-> <skipped>; advisory and informational outcomes never fail the suite, their verdict goes to
<system-out>. Each suite carries the run's verdict level, status, driver and retries as
properties. A task run that was not run (the agent has no driver for it) is one <skipped>
testcase with its reason; one the harness failed is one <error>; one whose race was never
exercised, after its retries, is one <skipped> with each try's timing; an agent that failed
the run (it exited early, never sent the request awaited) adds one <failure> with what it
did. Checks are in the contract's order. Failpoints (mutants) get one suite per agent with a
testcase per failpoint, failing when no task run with it failed a mandatory check (it survived).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from harness.contract import check_order
from harness.model import CheckResult, Outcome, RunResult, RunStatus, TaskResult, Tier, task_verdict
from harness.report.aggregate import (
    NOTHING_RAN,
    FailpointRow,
    Scoreboard,
    attempts_text,
    caught_by,
    failpoints,
    scoreboards,
)
from harness.report.text import evidence_text, xml_safe


def render_junit(runs: Sequence[RunResult]) -> str:
    root = ET.Element("testsuites", name="stopbench")
    boards = scoreboards(runs)
    for board in boards:
        for task in board.tasks:
            root.append(_suite(board, task))
    found = failpoints(runs, boards)
    for label in dict.fromkeys(f.label for f in found):
        root.append(_failpoint_suite(label, [f for f in found if f.label == label]))
    counts = {k: sum(int(s.get(k, "0")) for s in root) for k in ("tests", "failures", "errors", "skipped")}
    for key, value in counts.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(board: Scoreboard, task: TaskResult) -> ET.Element:
    name = f"{board.label} / {board.adapter} / {task.task} #{task.repeat}"
    suite = ET.Element("testsuite", name=xml_safe(name), time=f"{task.duration_s:.3f}")
    if task.started:
        suite.set("timestamp", task.started)
    level = task_verdict(task)
    props = ET.SubElement(suite, "properties")
    for key, value in (("agent", board.agent), ("agent_version", board.version), ("adapter", board.adapter),
                       ("task", task.task), ("repeat", str(task.repeat)), ("driver", task.driver),
                       ("status", task.status.value), ("verdict", level.value if level else NOTHING_RAN),
                       ("attempts", str(len(task.attempts) + 1)), ("agent_verdict", board.verdict)):
        ET.SubElement(props, "property", name=key, value=xml_safe(value))
    classname = f"stopbench.{board.label}.{board.adapter}.{task.task}"
    if task.status is not RunStatus.RAN:
        return _counted(suite, [_status_case(classname, task)])
    checks = sorted(task.checks, key=lambda c: (check_order(c.check), c.check))
    cases = [_check_case(classname, task, c) for c in checks]
    if task.reason:  # the agent failed the run: the checks it belongs to fail too, this says what it did
        case = ET.Element("testcase", classname=classname, name=f"task #{task.repeat}: the agent")
        ET.SubElement(case, "failure", message=xml_safe(task.reason), type="agent").text = xml_safe(
            _agent_failure_text(task))
        cases.insert(0, case)
    return _counted(suite, cases)


def _status_case(classname: str, task: TaskResult) -> ET.Element:
    """The one testcase of a task run that did not run its checks."""
    case = ET.Element("testcase", classname=classname, name=f"task #{task.repeat} ({task.status.value})")
    reason = task.reason or ""
    if task.status is RunStatus.ERRORED:
        ET.SubElement(case, "error", message=xml_safe(reason), type="harness").text = xml_safe(reason)
    elif task.status is RunStatus.PROFILE_PROBLEM:  # someone must fix the profile; the agent is not judged
        ET.SubElement(case, "error", message=xml_safe(f"profile problem: {reason}"), type="profile").text = (
            xml_safe(reason))
    elif task.status is RunStatus.NOT_RUN:
        ET.SubElement(case, "skipped", message=xml_safe(f"not run: {reason}"))
    else:
        tries = attempts_text(task)
        timing = f" after {len(task.attempts) + 1} tries: {tries}, then {task.duration_s:.2f} s" if tries else (
            f" ({task.duration_s:.2f} s)")
        ET.SubElement(case, "skipped", message=xml_safe(f"not exercised{timing}: {reason}"))
        if task.attempts:
            ET.SubElement(case, "system-out").text = xml_safe("\n".join(
                f"try {n}: {a.reason} ({a.duration_s:.3f} s)" for n, a in enumerate(task.attempts, 1)))
    return case


def _agent_failure_text(task: TaskResult) -> str:
    failure = task.evidence.get("agent_failure") if isinstance(task.evidence, dict) else None
    lines = [task.reason or ""]
    if isinstance(failure, dict):
        lines += [f"{k}: {failure.get(k)}" for k in ("step", "awaited", "what") if failure.get(k)]
        exit_ = failure.get("exit")
        if isinstance(exit_, dict):
            lines.append(f"process {exit_.get('pid')} ({exit_.get('role')}): argv {exit_.get('argv')}, "
                         f"exit {exit_.get('returncode')}, signal {exit_.get('signal')}")
            if exit_.get("stderr_tail"):
                lines.append(f"stderr (tail):\n{exit_['stderr_tail']}")
    return "\n".join(lines)


def _counted(suite: ET.Element, cases: list[ET.Element]) -> ET.Element:
    suite.extend(cases)
    suite.set("tests", str(len(cases)))
    for key, tag in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        suite.set(key, str(len(suite.findall(f"testcase/{tag}"))))
    return suite


def _check_case(classname: str, task: TaskResult, check: CheckResult) -> ET.Element:
    label = f"{check.check} {check.name}".strip()
    case = ET.Element("testcase", classname=classname, name=f"{label} #{task.repeat}")
    message = xml_safe(check.evidence.summary)
    if check.outcome is Outcome.SKIPPED:
        ET.SubElement(case, "skipped", message=message)
    elif check.outcome is Outcome.UNKNOWN and check.needs_reader and check.tier is Tier.MANDATORY:
        ET.SubElement(case, "skipped", message=xml_safe(f"unknown: needs a log reader — {check.evidence.summary}"))
    elif check.tier is not Tier.MANDATORY:
        ET.SubElement(case, "system-out").text = (
            f"{check.tier.value} check: {check.outcome.value}\n\n{evidence_text(check.evidence)}"
        )
    elif check.outcome is Outcome.FAIL and check.consequence_of:  # one defect, one <failure>: the cause's
        ET.SubElement(case, "skipped", message=xml_safe(
            f"fail, a consequence of {check.consequence_of} (the same defect, counted there) — "
            f"{check.evidence.summary}"))
    elif check.outcome is Outcome.FAIL:
        ET.SubElement(case, "failure", message=message, type="fail").text = evidence_text(check.evidence)
    elif check.outcome is Outcome.UNKNOWN:
        ET.SubElement(case, "error", message=message, type="unknown").text = evidence_text(check.evidence)
    return case


def _failpoint_suite(label: str, found: list[FailpointRow]) -> ET.Element:
    suite = ET.Element("testsuite", name=xml_safe(f"{label} / failpoints"),
                       time=f"{sum(t.duration_s for f in found for t in f.runs):.3f}")
    classname = f"stopbench.{label}.failpoints"
    cases = []
    for f in found:
        case = ET.Element("testcase", classname=classname, name=f"failpoint {f.failpoint} caught")
        if f.caught:
            lines = [f"{t.task} #{t.repeat} on {t.adapter}: {', '.join(caught_by(t))}" for t in f.runs if caught_by(t)]
            ET.SubElement(case, "system-out").text = xml_safe("caught by:\n" + "\n".join(lines))
        else:
            targets = f" (targets {', '.join(f.targets)})" if f.targets else ""
            ET.SubElement(case, "failure", type="failpoint-survived", message=xml_safe(
                f"failpoint {f.failpoint}{targets} survived: no mandatory check failed in its {len(f.runs)} run(s)"))
        cases.append(case)
    return _counted(suite, cases)
