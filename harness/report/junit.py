"""JUnit XML for CI test tabs: one testcase per task × check (× repeat).

Mapping, chosen so the test tab is red exactly when the run is not conformant:
mandatory ``fail`` -> <failure>; mandatory ``unknown`` -> <error> (the harness could not
decide, which must not pass silently); ``skipped`` -> <skipped>; advisory and informational
outcomes never fail the suite, their verdict goes to <system-out>. A task the harness could
not run is one <error> testcase. Failpoints (mutants) get one suite per agent with a testcase
per failpoint, failing when no task run with it failed a mandatory check (it survived).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Sequence

from harness.model import CheckResult, Outcome, RunResult, TaskResult, Tier
from harness.report.aggregate import FailpointRow, Scoreboard, caught_by, failpoints, scoreboards
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
    props = ET.SubElement(suite, "properties")
    for key, value in (("agent", board.agent), ("agent_version", board.version), ("adapter", board.adapter),
                       ("task", task.task), ("repeat", str(task.repeat))):
        ET.SubElement(props, "property", name=key, value=xml_safe(value))
    classname = f"stopbench.{board.label}.{board.adapter}.{task.task}"
    cases = [_check_case(classname, task, c) for c in task.checks]
    if task.error is not None:
        case = ET.Element("testcase", classname=classname, name=f"task #{task.repeat}")
        ET.SubElement(case, "error", message=xml_safe(task.error), type="harness").text = xml_safe(task.error)
        cases.insert(0, case)
    return _counted(suite, cases)


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
    elif check.tier is not Tier.MANDATORY:
        ET.SubElement(case, "system-out").text = (
            f"{check.tier.value} check: {check.outcome.value}\n\n{evidence_text(check.evidence)}"
        )
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
