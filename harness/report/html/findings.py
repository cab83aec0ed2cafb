"""What went wrong: findings, real failures first and identical outcomes as one line, each with
its evidence as tables that link to the moment on the run's timeline (raw JSON folded beside)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.model import CheckResult, TaskResult
from harness.report.aggregate import RANK_READER, RANK_UNKNOWN, Finding, agents, repeats_text, run_groups
from harness.report.evidence import Context, Field, fields
from harness.report.html.markup import Page, badge, check_label, esc, kv_table, status_class
from harness.report.text import item_label, item_text

MAX_MEMBERS_WITH_EVIDENCE = 5  # per finding; the other runs are listed as links


def findings_section(page: Page) -> list[str]:
    out = ['<h2 id="findings">What went wrong</h2>',
           "<p>Failed checks first, then failures that only follow from another check’s (the same defect, "
           "counted there), the agent’s own failures, what the profile got wrong, harness errors, undecided "
           "checks, advisory findings, checks that need a log reader, races not exercised and tasks not run. "
           "Identical outcomes are one line.</p>"]
    any_found = False
    for a in agents(page.boards):
        found = a.findings
        if not found:
            continue
        any_found = True
        adapters = f"adapter{'s' if len(a.boards) > 1 else ''} {', '.join(b.adapter for b in a.boards)}"
        out.append(f"<h3>{esc(a.label)} · {esc(adapters)} — {esc(a.verdict)}</h3>")
        out.append('<ol class="findings">')
        out += [_finding(page, f) for f in found]
        out.append("</ol>")
    if not any_found:
        out.append("<p>Nothing: every check that ran passed or was skipped.</p>")
    return out


def _finding_class(f: Finding) -> str:
    if f.is_check:
        return f.outcome
    return {"ran": "fail"}.get(f.outcome, status_class(f.outcome))


def _finding(page: Page, f: Finding) -> str:
    is_open = " open" if f.rank <= RANK_UNKNOWN else ""
    word = "agent failed" if f.outcome == "ran" else f.outcome
    head = (f"<summary>{badge(word, _finding_class(f))} {esc(f.headline)}"
            + (f" — {esc(f.summary)}" if f.summary else "") + "</summary>")
    runs = f.runs
    listing = "<p>In " + "; ".join(
        f"{esc(title)} · " + repeats_text([page.run_link(t, str(t.repeat)) for t in members])
        for title, members in run_groups(runs)) + ".</p>"
    parts = [listing]
    if f.is_check and f.rank < RANK_READER:
        shown = 0
        for t, r in f.members:
            if r is None or shown >= MAX_MEMBERS_WITH_EVIDENCE:
                continue
            shown += 1
            parts.append(_member(page, t, r))
        if len(f.members) > shown:
            parts.append(f"<p>Evidence of the other {len(f.members) - shown} is in each run’s section.</p>")
    elif not f.is_check:
        parts += [_run_problem(page, t) for t in runs[:MAX_MEMBERS_WITH_EVIDENCE]]
    return f'<li class="finding"><details{is_open}>{head}{"".join(parts)}</details></li>'


def _member(page: Page, task: TaskResult, r: CheckResult) -> str:
    decided = f" · decided by the {r.decided_by.value} half" if r.decided_by else ""
    anchor = page.anchor(task)
    links = [page.run_link(task, "timeline"), f'<a href="#{anchor}-processes">command lines and output</a>',
             f'<a href="#{anchor}-records">server records</a>']
    follows = f" · a consequence of {r.consequence_of}, counted there" if r.consequence_of else ""
    return (f'<div class="member"><h4>{page.run_link(task)} · {esc(check_label(r.check, r.name))}'
            f" · {esc(r.outcome.value)} ({esc(r.tier.value)}){esc(decided)}{esc(follows)}</h4>"
            f"<p>{esc(r.evidence.summary)}</p>{_evidence(page, task, r)}"
            f'<p class="links">See: {" · ".join(links)}</p></div>')


def _run_problem(page: Page, task: TaskResult) -> str:
    lines = [f"<h4>{page.run_link(task)} — {esc(task.status.value)}</h4>"]
    if task.reason:
        lines.append(f"<p>{esc(task.reason)}</p>")
    if task.attempts:
        lines.append("<p>Tried again: " + "; ".join(
            f"{esc(a.reason)} ({a.duration_s:.2f} s)" for a in task.attempts) + ".</p>")
    if task.evidence.get("agent_failure"):
        lines.append(f'<p class="links">See <a href="#{page.anchor(task)}-failure">what the agent did</a> and '
                     f'<a href="#{page.anchor(task)}-processes">its command line and output</a>.</p>')
    return '<div class="member">' + "".join(lines) + "</div>"


def _evidence(page: Page, task: TaskResult, r: CheckResult) -> str:
    if not r.evidence.items:
        return ""
    ctx = Context.of(task)
    groups: dict[str, list[str]] = {}
    for item in r.evidence.items:
        table = fields_table(page, task, fields(item, ctx))
        raw = f'<details class="raw"><summary>raw JSON</summary><pre>{esc(item_text(item))}</pre></details>'
        groups.setdefault(item_label(item), []).append(f'<div class="item">{table}{raw}</div>')
    return "".join(f"<h5>{esc(label)} ({len(items)})</h5>{''.join(items)}" for label, items in groups.items())


def fields_table(page: Page, task: TaskResult, fs: Sequence[Field]) -> str:
    return kv_table((f.key, _field_value(page, task, f)) for f in fs)


def _field_value(page: Page, task: TaskResult, f: Field) -> str:
    if f.rows:
        keys = list(dict.fromkeys(sub.key for row in f.rows for sub in row))
        body = "".join("<tr>" + "".join(
            f"<td>{_field_value(page, task, by_key[k]) if k in by_key else ''}</td>"
            for k in keys) + "</tr>" for row in f.rows if (by_key := {sub.key: sub for sub in row}) is not None)
        return f"<table><thead><tr>{''.join(f'<th>{esc(k)}</th>' for k in keys)}</tr></thead><tbody>{body}</tbody>" \
               "</table>"
    if f.lines:
        return "<ol>" + "".join(f"<li>{esc(line)}</li>" for line in f.lines) + "</ol>"
    if f.ref:
        return page.ref_link(task, f.ref, f.text)
    if "\n" in f.text:
        return f"<pre>{esc(f.text)}</pre>"
    return esc(f.text)
