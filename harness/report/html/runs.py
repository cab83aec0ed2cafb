"""Every task run: its timeline (one lane per actor on one axis from the task's start;
open for a run that failed, folded for one that passed), its checks, the agent's command lines
and output tails, the server's records and what outlived the run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from harness.contract import check_order
from harness.model import RunStatus, TaskResult, task_verdict
from harness.model.fit import fit_word
from harness.report.aggregate import attempts_text, run_name, run_title
from harness.report.evidence import Context, fields
from harness.report.html.findings import fields_table
from harness.report.html.markup import Page, badge, check_label, data_table, esc, kv_table, level_class, status_class
from harness.report.svg import ms_text, timeline, timeline_legend
from harness.report.text import outbound_attempts, plain


def _run_failed(task: TaskResult) -> bool:
    v = task_verdict(task)
    return v is not None and not v.ok


def runs_section(page: Page) -> list[str]:
    out = ['<h2 id="runs">Task runs</h2>',
           "<p>What happened in each run, as a timeline: one lane per actor — the harness’s inputs, Stops, kills "
           "and restarts; the model’s requests with their chunks; the agent’s processes; each bash window’s "
           "processes; requests to paths the server does not serve, harmless, on a lane of their own — on one "
           "axis from the task’s start. Runs that failed are open; the others are folded.</p>",
           '<div class="legend-row">' + "".join(f"<span><strong>{esc(k)}</strong>: {esc(v)}</span>"
                                                for k, v in timeline_legend().items()) + "</div>"]
    for b in page.boards:
        out.append(f"<h3>{esc(b.label)} · adapter {esc(b.adapter)}</h3>")
        not_run = [t for t in b.tasks if t.status is RunStatus.NOT_RUN]
        for t in b.tasks:
            if t.status is not RunStatus.NOT_RUN:
                out.append(_run_section(page, t))
        if not_run:
            rows = [[f'<span id="{page.anchor(t)}">{esc(run_title(t.task, t.driver, ""))}</span>', str(t.repeat),
                     esc(t.reason or "")] for t in not_run]
            out.append(f"<h4>Not run ({len(not_run)})</h4>")
            out.append(data_table(["task", "repeat", "why"], rows, [1], css="wide", widths=["20em", "5em", ""]))
    return out


def _run_section(page: Page, t: TaskResult) -> str:
    anchor = page.anchor(t)
    v = task_verdict(t)
    status = v.value if v is not None and t.status is RunStatus.RAN else t.status.value
    css = level_class(v.value) if t.status is RunStatus.RAN and v is not None else status_class(t.status.value)
    extra = [f"{t.duration_s:.2f} s"]
    if t.attempts:
        extra.append(attempts_text(t))
    if t.mutant:
        extra.append(f"failpoint {t.mutant}")
    extra.append(f"profile fits: {fit_word(t)}")
    is_open = " open" if _run_failed(t) or t.status in (RunStatus.ERRORED, RunStatus.PROFILE_PROBLEM) else ""
    parts = [f'<details class="run" id="{anchor}"{is_open}><summary>{badge(status, css)} {esc(run_name(t))} · '
             f"{esc(' · '.join(extra))}</summary>"]
    if t.reason:
        parts.append(f"<p><strong>{esc(t.status.value if t.status is not RunStatus.RAN else 'the agent failed')}"
                     f"</strong>: {esc(t.reason)}</p>")
    if t.attempts:
        parts.append("<p>Earlier tries (not exercised, run again): " + "; ".join(
            f"{n}. {esc(a.reason)} ({a.duration_s:.2f} s)" for n, a in enumerate(t.attempts, 1)) + ".</p>")
    screen = t.evidence.get("screen") if isinstance(t.evidence, Mapping) else None
    if screen:  # a profile problem: what the terminal showed while the pattern never matched
        parts.append(f"<p>The screen:</p><pre>{esc(screen)}</pre>")
    parts += _profile_fit(t)
    reproduce = t.evidence.get("reproduce") if isinstance(t.evidence, Mapping) else None
    if reproduce:
        parts.append(f"<p>Run it again: <code>{esc(reproduce)}</code></p>")
    if t.timeline:
        parts.append(timeline(t.timeline, f"{run_name(t)}: what happened, from the task's start",
                              f"{anchor}-tl"))
        parts.append(_marks_table(t))
    elif t.status is RunStatus.RAN:
        parts.append("<p>No timeline was recorded for this run.</p>")
    if t.checks:
        parts.append(_run_checks(page, t))
    parts += _run_evidence(page, t)
    parts.append("</details>")
    return "".join(parts)


def _profile_fit(t: TaskResult) -> list[str]:
    """Each expectation of the profile the run relied on, whether it held and where it was
    seen; a misfit's screen or process tree under the table."""
    record = t.evidence.get("profile_fit") if isinstance(t.evidence, Mapping) else None
    if not isinstance(record, Mapping) or not record.get("expectations"):
        return []
    matched = {True: "matched", False: "did not fit", None: "not decided"}
    rows = [[esc(e.get("what")), f"<code>{esc(e.get('pattern') or '')}</code>", esc(e.get("expected")),
             badge(matched[e.get("matched")], {True: "pass", False: "fail", None: "unknown"}[e.get("matched")]),
             esc(e.get("seen") or "")] for e in record["expectations"]]
    out = [f"<h4>Profile fit: {esc(fit_word(t))}</h4>",
           data_table(["what", "pattern", "expected", "held", "seen"], rows, css="wide",
                      widths=["16em", "16em", "14em", "7em", ""])]
    for e in record["expectations"]:
        if e.get("screen") and not t.evidence.get("screen"):  # a profile problem's screen is shown above already
            out.append(f"<p>The screen ({esc(e.get('what'))}):</p><pre>{esc(chr(10).join(e['screen']))}</pre>")
        if e.get("holders"):
            tree = "\n".join(f"pid {h.get('pid')} · group {h.get('group')} · {h.get('command')}" for h in e["holders"])
            out.append(f"<p>Holding the model connection (signalled: group {esc(e.get('signalled_group'))}):</p>"
                       f"<pre>{esc(tree)}</pre>")
    return out


def _marks_table(t: TaskResult) -> str:
    rows = [[esc(ms_text(m.at_ms)), esc(ms_text(m.end_ms)) if m.end_ms is not None else "", esc(m.lane), esc(m.kind),
             esc(m.label), esc(m.ref or "")] for m in sorted(t.timeline, key=lambda m: m.at_ms)]
    return (f'<details class="marks"><summary>every mark of the timeline ({len(rows)}), in time order</summary>'
            + data_table(["at", "until", "lane", "kind", "what", "ref"], rows, [0, 1], css="wide",
                         widths=["6em", "6em", "8em", "7em", "", "9em"]) + "</details>")


def _run_checks(page: Page, t: TaskResult) -> str:
    rows = []
    for c in sorted(t.checks, key=lambda c: (check_order(c.check), c.check)):
        decided = c.decided_by.value if c.decided_by else ""
        if c.needs_reader:
            decided = (decided + ", " if decided else "") + "needs a log reader"
        summary = esc(c.evidence.summary)
        if c.consequence_of:  # one defect, one failure: the cause is in the same run, counted there
            summary = f"<em>a consequence of {esc(c.consequence_of)} (counted there)</em>: {summary}"
        elif c.non_strict:
            summary = f"<em>non-strict</em>: {summary}"
        rows.append([esc(check_label(c.check, c.name)), f'{badge(c.outcome.value, c.outcome.value)}',
                     esc(c.tier.value), esc(decided), summary])
    return "<h4>Checks</h4>" + data_table(["check", "outcome", "tier", "decided by", "summary"], rows, css="wide",
                                          widths=["20em", "7em", "7em", "11em", ""])


def _run_evidence(page: Page, t: TaskResult) -> list[str]:
    evidence: Mapping[str, Any] = t.evidence if isinstance(t.evidence, Mapping) else {}
    anchor = page.anchor(t)
    out = []
    failure = evidence.get("agent_failure")
    if isinstance(failure, Mapping):
        rows = [(k, esc(failure.get(k) or "")) for k in ("step", "awaited", "what")]
        out.append(f'<h4 id="{anchor}-failure">What the agent did instead</h4>' + kv_table(rows))
        exit_ = failure.get("exit")
        if isinstance(exit_, Mapping):
            out.append(_processes(page, t, [exit_], f"{anchor}-failure-exit", "The process that ended the run"))
    processes = [p for p in evidence.get("processes") or () if isinstance(p, Mapping)]
    out.append(_processes(page, t, processes, f"{anchor}-processes", "The agent’s processes"))
    records = [r for r in evidence.get("records") or () if isinstance(r, Mapping)]
    out.append(_records(t, records, f"{anchor}-records"))
    contained = evidence.get("containment")
    if isinstance(contained, Mapping):
        out.append(_containment(page, t, contained, f"{anchor}-containment"))
    network = evidence.get("network")
    if isinstance(network, Mapping):
        out.append(_network(network, f"{anchor}-network"))
    extra = [(k, esc(plain(evidence.get(k)))) for k in ("log_path", "log_error") if evidence.get(k)]
    if extra:
        out.append(kv_table(extra))
    return out


def _containment(page: Page, t: TaskResult, contained: Mapping[str, Any], element_id: str) -> str:
    """Which containment held the run, and what was still alive after the agent and its tools ended."""
    outlived = [m for m in contained.get("outlived") or () if isinstance(m, Mapping)]
    head = (f'<h4 id="{element_id}">Containment: {esc(contained.get("kind") or "?")}</h4>'
            + (f"<p>{esc(contained['why'])}</p>" if contained.get("why") else ""))
    if not outlived:
        return head + "<p>Nothing outlived the run.</p>"
    ctx = Context.of(t)
    rows = [fields_table(page, t, fields(m, ctx)) for m in outlived]
    return head + f"<p>Still alive after the agent and its tools were ended ({len(outlived)}):</p>" + "".join(rows)


def _network(network: Mapping[str, Any], element_id: str) -> str:
    """The run's network: its own namespace (and every outbound attempt it refused) or the host's, and why."""
    head = f'<h4 id="{element_id}">Network: {esc(network.get("kind") or "?")}</h4>'
    if network.get("kind") != "netns":
        return head + f"<p>{esc(network.get('why') or 'offline not enforced (no reason recorded)')}</p>"
    attempts = outbound_attempts({"network": network})
    if not attempts:
        return head + "<p>No outbound attempt: the agent reached the fake server only.</p>"
    rows = [[esc(f"+{a.get('at_ms', 0):.0f} ms"), esc(str(a.get("proto"))), esc(str(a.get("dst"))),
             esc(str(a.get("port"))), esc(str(a.get("dns_name") or ""))] for a in attempts]
    more = f", and {network['more']} more not kept" if network.get("more") else ""
    return (head + f"<p>Outbound attempts, refused at once ({len(attempts)}{esc(more)}; a note, not a check "
            "failure):</p>"
            + data_table(["at", "protocol", "destination", "port", "DNS name"], rows, [0, 3]))


def _processes(page: Page, t: TaskResult, processes: Sequence[Mapping[str, Any]], element_id: str,
               heading: str) -> str:
    if not processes:
        return f'<h4 id="{element_id}">{esc(heading)}</h4><p>None recorded.</p>'
    blocks = []
    for p in processes:
        pid = p.get("pid")
        code = (f"exit {p['returncode']}" if p.get("returncode") is not None
                else f"signal {p['signal']}" if p.get("signal") is not None else "still running")
        argv = " ".join(str(a) for a in p.get("argv") or ())
        who = page.ref_link(t, f"pid {pid}", f"pid {pid}") if pid is not None else "pid ?"
        lines = [f"<h5>{who} · {esc(p.get('role') or '')} · {esc(code)}</h5>",
                 f"<p>command line:</p><pre>{esc(argv or '(not recorded)')}</pre>"]
        for key, word in (("stdout_tail", "stdout (tail)"), ("stderr_tail", "stderr (tail)")):
            if p.get(key):
                lines.append(f"<p>{word}:</p><pre>{esc(p[key])}</pre>")
        blocks.append('<div class="member">' + "".join(lines) + "</div>")
    return f'<h4 id="{element_id}">{esc(heading)} ({len(processes)})</h4>' + "".join(blocks)


def _records(t: TaskResult, records: Sequence[Mapping[str, Any]], element_id: str) -> str:
    if not records:
        return f'<h4 id="{element_id}">The server’s records</h4><p>None recorded.</p>'
    keys = list(dict.fromkeys(k for r in records for k in r))
    rows = [[esc(plain(r.get(k))) for k in keys] for r in records]
    kinds = Counter(str(r.get("kind")) for r in records)
    outline = ", ".join(f"{n} {k}" for k, n in kinds.items())
    numeric = [i for i, k in enumerate(keys) if k in ("index", "request", "chunk", "status")]
    return (f'<details class="records" id="{element_id}"{" open" if _run_failed(t) else ""}>'
            f"<summary>The server’s records ({len(records)}: {esc(outline)})</summary>"
            + data_table(keys, rows, numeric, css="wide", widths=[""] * len(keys)) + "</details>")
