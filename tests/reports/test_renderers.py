"""Renderers: golden files, plus structural checks of what each output must hold.

The golden files under ``golden/`` are the exact outputs for the synthetic runs of
``conftest.py``. After an intended change to a renderer, regenerate them with

    STOPBENCH_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/reports/test_renderers.py

and review the diff like code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_builders import HOSTILE, NO_READER, build_black_box_run

from harness.contract import CHECKS, LATENCIES, Verdict
from harness.model import Outcome, RunResult, RunStatus, Tier, task_verdict
from harness.report import render_html, render_junit, render_markdown
from harness.report.aggregate import run_name
from harness.report.latency import PERCENTILES, percentile
from harness.report.load import parse_results
from harness.report.svg import MIN_PLOT_N
from harness.report.writer import results_text

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("STOPBENCH_REGEN_GOLDEN") == "1"
RENDERERS = {"junit.xml": render_junit, "summary.md": render_markdown, "report.html": render_html}
NS = {"s": "http://www.w3.org/2000/svg"}


def as_written(*runs):
    """What renderers see in practice: the run after a trip through the results file."""
    return [parse_results(json.loads(results_text(r))) for r in runs]


@pytest.mark.parametrize("name", sorted(RENDERERS))
@pytest.mark.parametrize("case", ["single", "leaderboard", "black-box"])
def test_golden(name, case, run, rival, black_box):
    runs = {"single": (run,), "leaderboard": (run, rival), "black-box": (black_box,)}[case]
    text = RENDERERS[name](as_written(*runs))
    golden = GOLDEN / f"{case}.{name}"
    if REGENERATE:
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} missing: run with STOPBENCH_REGEN_GOLDEN=1 to create it"
    assert text == golden.read_text(encoding="utf-8"), f"{name} differs from {golden}"


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.style += data


def svgs(html: str) -> list[ET.Element]:
    return [ET.fromstring(s) for s in re.findall(r"<svg\b.*?</svg>", html, re.S)]


def timelines(html: str) -> list[ET.Element]:
    return [s for s in svgs(html) if s.get("class") == "timeline"]


def section(html: str, start: str, end: str) -> str:
    return html[html.index(start):html.index(end, html.index(start))]


def test_html_is_self_contained(run, rival):
    html = render_html(as_written(run, rival))
    parser = Tags()
    parser.feed(html)
    names = {t for t, _ in parser.tags}
    assert not names & {"script", "link", "iframe", "img", "object", "embed", "base", "form"}
    ids = {attrs["id"] for _, attrs in parser.tags if "id" in attrs}
    for tag, attrs in parser.tags:
        for key in ("src", "xlink:href", "action", "srcset"):
            assert key not in attrs, (tag, attrs)
        if "href" in attrs:  # links only within the page, each to something that is there
            assert attrs["href"].startswith("#") and attrs["href"][1:] in ids, (tag, attrs)
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)  # no event handlers
    assert "url(" not in parser.style and "@import" not in parser.style
    external = [u for u in re.findall(r"https?://[^\s\"'<>]+", html) if u != "http://www.w3.org/2000/svg"]
    assert external == []
    assert len(ids) == len([1 for _, attrs in parser.tags if "id" in attrs])  # ids are unique


def test_the_page_uses_the_full_width_with_sticky_headers(run):
    html = render_html(as_written(run))
    style = html[html.index("<style>"):html.index("</style>")]
    assert "max-width: 72em" not in style and "margin: 2em auto" not in style
    assert re.search(r"thead th \{[^}]*position: sticky", style)


def test_html_plots_only_samples_of_five_or_more_and_dots_the_rest(run):
    html = render_html(as_written(run))
    plots = svgs(html)
    pooled: dict[tuple[str, str], list[int]] = {}
    for s in run.latencies:
        pooled.setdefault((s.adapter, s.latency), []).append(s.value_ns)
    histograms = [p for p in plots if p.findall("s:rect[@class='bar']", NS)]
    quantiles = [p for p in plots if p.findall("s:polyline", NS)]
    dots = [p for p in plots if p.findall("s:circle[@class='dot']", NS)]
    large = {k: v for k, v in pooled.items() if len(v) >= MIN_PLOT_N}
    small = {k: v for k, v in pooled.items() if len(v) < MIN_PLOT_N}
    assert large and small  # the synthetic run has both
    assert len(histograms) == len(quantiles) == len(large) and len(dots) == len(small)
    for (adapter, latency), values in large.items():
        title = f"{latency} · reference · {adapter}"
        (hist,) = [h for h in histograms if h.findtext("s:title", namespaces=NS) == title]
        assert sum(int(r.get("data-count")) for r in hist.findall("s:rect", NS)) == len(values)
        (plot,) = [q for q in quantiles if q.findtext("s:title", namespaces=NS) == f"{latency} percentiles · {adapter}"]
        (line,) = plot.findall("s:polyline", NS)
        assert int(line.get("data-n")) == len(values)
        points = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
        assert [x for x, _ in points] == sorted(x for x, _ in points)  # left to right
        assert [y for _, y in points] == sorted((y for _, y in points), reverse=True)  # rising values
        markers = {int(c.get("data-percentile")): int(c.get("data-value-ns")) for c in plot.findall("s:circle", NS)}
        assert markers == {p: percentile(values, p) for p in PERCENTILES}
    for (adapter, latency), values in small.items():
        (plot,) = [d for d in dots if d.findtext("s:title", namespaces=NS) == f"{latency} · every value · {adapter}"]
        assert sorted(int(c.get("data-value-ns")) for c in plot.findall("s:circle", NS)) == sorted(values)


def test_latencies_are_defined_beside_them(run):
    html = render_html(as_written(run))
    latency = section(html, 'id="latency"', 'id="files"')
    measured = {s.latency for s in run.latencies}
    assert measured == {"L1", "L2", "L3", "L4", "L7"}
    for info in LATENCIES:  # the measured ones, and no empty row for the others
        assert (f"<dt>{info.id} — {info.title}</dt>" in latency) is (info.id in measured)
    assert "L7 resume, seen from outside" in latency  # in the table too


def test_only_measured_latencies_get_a_scoreboard_column(run):
    only_l3 = dataclasses.replace(run, latencies=tuple(s for s in run.latencies if s.latency == "L3"))
    board = section(render_html(as_written(only_l3)), 'id="scoreboard"', 'id="checks"')
    assert re.findall(r"<th[^>]*>(L\d) p50</th>", board) == ["L3"]
    assert "No latency samples." in render_html(as_written(dataclasses.replace(run, latencies=())))
    assert "What each latency measures" not in render_html(as_written(dataclasses.replace(run, latencies=())))


def test_leaderboard_ranks_the_conformant_agent_first_and_overlays_agents(run, rival):
    html = render_html(as_written(run, rival))
    board = section(html, 'id="scoreboard"', 'id="checks"')
    assert "Leaderboard" in board
    assert board.index("other-agent") < board.index("reference")
    (l3,) = [p for p in svgs(html) if p.findtext("s:title", namespaces=NS) == "L3 percentiles · http"]
    assert {pl.get("data-series") for pl in l3.findall("s:polyline", NS)} == {"reference", "other-agent"}


def fitted(task, fits: str, misfits=()):
    """``task`` with a profile_fit record that says ``fits``."""
    record = {"fits": fits, "misfits": list(misfits), "expectations": [
        {"what": m, "pattern": "(?m)^x$", "expected": "when a turn ends", "matched": False, "seen": "never matched",
         "times": 0, "screen": ["> hello", "Finished."]} for m in misfits]}
    return dataclasses.replace(task, evidence={**task.evidence, "profile_fit": record})


def test_the_leaderboard_says_whether_the_profile_fits_and_what_did_not(run, rival):
    """One misfit among an agent's runs makes its profile not fit, named; every run fitting is
    yes; a run's view shows its expectations with the misfit's screen."""
    misfit = "the queued acknowledgement"
    first = next(t for t in run.tasks if t.mutant is None and t.status is RunStatus.RAN)
    broken = RunResult(run.run, tuple(fitted(t, "no", [misfit]) if t is first else fitted(t, "yes")
                                      for t in run.tasks), run.latencies)
    fine = RunResult(rival.run, tuple(fitted(t, "yes") for t in rival.tasks), rival.latencies)
    md = render_markdown(as_written(broken, fine))
    fits = {(cells[1], cells[2]): cells[4] for line in md.splitlines()
            if (cells := line.split(" | "))[0][2:].isdigit() and cells[2] in ("http", "inproc")}
    other = "http" if first.adapter == "inproc" else "inproc"
    assert fits == {("other-agent", "http"): "yes", ("reference", first.adapter): f"no ({misfit})",
                    ("reference", other): "yes"}
    html = render_html(as_written(broken, fine))
    assert f"<td>no ({misfit})</td>" in html and "<td>yes</td>" in html
    assert f"profile fits: no ({misfit})</summary>" in html and "<pre>&gt; hello\nFinished.</pre>" in html


def test_the_scoreboard_counts_run_statuses_retries_and_shows_l7(run):
    html = render_html(as_written(run))
    board = section(html, 'id="scoreboard"', 'id="checks"')
    header = re.findall(r"<th[^>]*>([^<]*)</th>", board)
    assert header == ["agent", "version", "adapter", "verdict", "profile fits", "ran", "not run", "not exercised",
                      "errored", "profile problem", "retries", "held", "defects", "L1 p50", "L2 p50", "L3 p50", "L4 p50",
                      "L7 p50"]
    rows = re.findall(r"<tr><td>reference</td>(.*?)</tr>", board)
    cells = [re.findall(r'<td class="num">([^<]*)</td>', r) for r in rows]
    for adapter, row in zip(("inproc", "http"), cells, strict=True):
        tasks = [t for t in run.tasks if t.adapter == adapter and t.mutant is None]
        counts = [sum(t.status is s for t in tasks) for s in
                  (RunStatus.RAN, RunStatus.NOT_RUN, RunStatus.NOT_EXERCISED, RunStatus.ERRORED,
                   RunStatus.PROFILE_PROBLEM)]
        assert row[:6] == [*map(str, counts), str(sum(len(t.attempts) for t in tasks))]
        assert row[-1] != "–"  # L7 was measured on both adapters


def test_checks_are_in_the_contracts_order_with_names_and_descriptions(run):
    html = render_html(as_written(run))
    matrix = section(html, 'id="checks"', 'id="legend"')
    (first,) = re.findall(r"<h3>reference · adapter inproc.*?</table>", matrix, re.S)[:1]
    heads = re.findall(r'<th scope="col" class="check[^"]*" title="([^"]*)"><a href="#check-(\w+)">(\w+)</a>'
                       r'<span class="check-title">([^<]*)</span>', first)
    assert [h[2] for h in heads] == ["C1", "C3", "C5", "C8", "C9", "C13", "A1"]  # not the task file's order
    info = {c.id: c for c in CHECKS}
    for title, anchor, check, words in heads:
        assert anchor == info[check].anchor and info[check].description.replace("'", "&#x27;") in title
        assert words.startswith(info[check].title)
    legend = section(html, 'id="legend"', 'id="runs"')
    assert [c.id for c in CHECKS] == re.findall(r'<strong id="check-\w+">(\w+)</strong>', legend)
    assert legend.count("docs/checks.md#") == len(CHECKS)


def test_cells_say_what_their_fraction_counts(run):
    html = render_html(as_written(run))
    http = re.findall(r"<h3>reference · adapter http.*?</table>", section(html, 'id="checks"', 'id="legend"'),
                      re.S)[0]
    cells = dict(re.findall(r'<th scope="row">([^<]+)</th>(.*?)</tr>', http, re.S))
    texts = {task: re.findall(r'<td class="cell [^"]+" title="[^"]*">(?:<a [^>]*>)?([^<]+)', row)
             for task, row in cells.items()}
    assert texts["interrupt-cancel · driver subprocess"][:2] == ["3/3 pass", "3/3 fail"]  # C1, C3
    assert texts["interrupt-restart · driver subprocess"][-2] == "1/2 unknown"  # C13 (one repeat errored)
    assert set(texts["interrupt-cancel · driver terminal"]) == {"not run"}
    assert "2 ran, 1 errored" in cells["interrupt-restart · driver subprocess"]


def test_evidence_is_readable_escaped_and_points_at_the_timeline(run, canary):
    html = render_html(as_written(run))
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert "\x1b" not in html and canary not in html
    findings = section(html, 'id="findings"', 'id="legend"')
    c3 = section(findings, "C3 pending tool calls close: fail in 3 runs", "</details></li>")
    for heading in ("request (1)", "tool_result (1)", "window (1)", "process (1)"):
        assert f"<h5>{heading}</h5>" in c3
    assert "+200.0 ms from the task&#x27;s start" in c3  # stop_ns, relative to the task's start
    assert "2025-11-29 10:00:01.250 UTC" in c3  # an epoch create_time
    assert "4242 (sleeper)" in c3 and "<li>user: run the sleeper</li>" in c3  # a role; a request outlined
    assert c3.count('<details class="raw"><summary>raw JSON</summary>') == 3 * 4
    links = re.findall(r'<a href="#(run-[\w-]+-tl-[\w-]+)" title="its moment on the timeline">([^<]+)</a>', c3)
    assert {text for _, text in links} >= {"request 2", "window w1"}
    marks = {m.get("id"): m for t in timelines(html) for m in t.iter(f"{{{NS['s']}}}g") if m.get("id")}
    for target, text in links:
        assert marks[target].get("data-ref") == text.split(" (")[0]
    processes = re.findall(r'<a href="#(run-[\w-]+-processes)">command lines and output</a>', c3)
    assert processes and all(f'id="{p}"' in html for p in processes)
    (first,) = processes[:1]
    block = html[html.index(f'id="{first}"'):]
    assert "refagent run --timeout 2 &lt;script&gt;" in block[:3000] and "key=sk-sto[redacted]" in block[:3000]
    run_section = html[html.index('<details class="run" id="run-2-interrupt-cancel-0"'):]
    run_section = run_section[:run_section.index('<details class="run"', 10)]
    assert "Run it again: <code>stopbench run --agent reference --task interrupt-cancel --adapter http</code>" \
        in run_section
    assert "Containment: process-group" in run_section and "Still alive after the agent" in run_section
    assert "<td>sleep 600</td>" in run_section


def test_timelines_parse_and_their_marks_match_the_data(run):
    written = as_written(run)[0]
    html = render_html([written])
    drawn = timelines(html)
    with_marks = [t for t in written.tasks if t.timeline and t.mutant is None]
    assert len(drawn) == len(with_marks) > 0
    by_title = {svg.findtext("s:title", namespaces=NS): svg for svg in drawn}
    for task in with_marks:
        svg = by_title[f"{run_name(task)}: what happened, from the task's start"]
        t0, t1 = float(svg.get("data-t0-ms")), float(svg.get("data-t1-ms"))
        x0, x1 = float(svg.get("data-x0")), float(svg.get("data-x1"))

        def x(ms: float) -> float:
            return x0 + (x1 - x0) * (ms - t0) / (t1 - t0)  # noqa: B023

        groups = [g for g in svg.iter(f"{{{NS['s']}}}g") if "mark" in (g.get("class") or "")]
        by_data = sorted((float(g.get("data-at-ms")), g.get("data-kind"), g.get("data-lane"),
                          float(g.get("data-end-ms")) if g.get("data-end-ms") else None) for g in groups)
        assert by_data == sorted((round(m.at_ms, 3), m.kind, m.lane, None if m.end_ms is None else round(m.end_ms, 3))
                                 for m in task.timeline)
        lanes = {e.text for e in svg.iter(f"{{{NS['s']}}}text") if e.get("class") == "lane-name"}
        assert lanes == {m.lane for m in task.timeline}
        for g in groups:
            at = float(g.get("data-at-ms"))
            rect = g.find("s:rect", NS)
            line = g.find("s:line", NS)
            if rect is not None and g.get("data-kind") in ("request", "process", "window"):
                assert float(rect.get("x")) == pytest.approx(x(at), abs=0.06)
                if g.get("data-end-ms"):
                    end = float(g.get("data-end-ms"))
                    assert float(rect.get("x")) + float(rect.get("width")) == pytest.approx(max(x(end), x(at) + 2),
                                                                                        abs=0.11)
            elif line is not None:
                assert float(line.get("x1")) == pytest.approx(x(at), abs=0.06)
        assert all(0 <= float(t.get("x", 0)) <= 1000 for t in svg.iter(f"{{{NS['s']}}}text"))


def test_failed_runs_are_open_and_passing_ones_folded(run):
    written = as_written(run)[0]
    html = render_html([written])
    for t in written.tasks:
        if t.mutant is not None or t.status is RunStatus.NOT_RUN:
            continue
        anchor = f"run-{1 if t.adapter == 'inproc' else 2}-{re.sub(r'[^a-z0-9]+', '-', t.task)}-{t.repeat}"
        (tag,) = re.findall(rf'<details class="run" id="{anchor}"( open)?>', html)
        verdict = task_verdict(t)
        assert (tag == " open") == (verdict is not None and not verdict.ok), (anchor, verdict)
    assert "2 retries (1.20 s, 1.31 s)" in html  # the not-exercised run shows its retries


def test_verdict_levels_are_the_contracts(run, rival):
    single = render_html(as_written(run))
    assert '<p class="verdict lvl-not-conformant">reference: not conformant</p>' in single
    assert "NOT conformant" not in single
    conformant = render_html(as_written(rival))
    assert "other-agent: conformant</p>" in conformant
    clean = render_html(as_written(build_black_box_run(failure=False)))
    assert "blackbox: conformant (black-box)</p>" in clean
    assert render_markdown(as_written(build_black_box_run(failure=False))).startswith(
        "## stopbench report: blackbox: conformant (black-box)")
    legend = section(single, 'id="legend"', 'id="runs"')
    assert all(f">{v.value}</span>" in legend for v in Verdict)


def test_a_black_box_agent_shows_its_real_failure_first_and_the_unknowns_as_one_line(black_box):
    html = render_html(as_written(black_box))
    findings = section(html, 'id="findings"', 'id="legend"')
    items = re.findall(r'<li class="finding"><details( open)?><summary>(.*?)</summary>', findings)
    assert len(items) == 2
    (first_open, first), (second_open, second) = items
    assert "C8 exit codes tell the truth: fail in 1 run" in first and first_open == " open"
    assert f"C1, C2, C10, C11: unknown in 12 runs — {NO_READER}" in second and second_open == ""
    md = render_markdown(as_written(black_box))
    lines = [line for line in md.splitlines() if line.startswith("- **")]
    assert len(lines) == 2 and "C8 exit codes tell the truth: fail in 1 run" in lines[0]
    assert f"C1, C2, C10, C11: unknown in 12 runs** — {NO_READER}" in lines[1]


def test_junit_follows_the_verdicts_and_the_run_statuses(run, canary):
    written = as_written(run)[0]
    xml = render_junit([written])
    assert canary not in xml
    root = ET.fromstring(xml)
    plain = [t for t in written.tasks if t.mutant is None]
    ran = [t for t in plain if t.status is RunStatus.RAN]
    mandatory = [c for t in ran for c in t.checks if c.tier is Tier.MANDATORY]
    names = {t.mutant for t in written.tasks if t.mutant}
    survived = {n for n in names if all(task_verdict(t).ok for t in written.tasks if t.mutant == n)}
    assert survived == {"drop-partial-text"}
    expected = {
        "failures": sum(c.outcome is Outcome.FAIL for c in mandatory) + sum(t.reason is not None for t in ran)
        + len(survived),
        "errors": sum(c.outcome is Outcome.UNKNOWN for c in mandatory) + sum(t.status is RunStatus.ERRORED
                                                                            for t in plain),
        "skipped": sum(c.outcome is Outcome.SKIPPED for t in ran for c in t.checks)
        + sum(t.status in (RunStatus.NOT_RUN, RunStatus.NOT_EXERCISED) for t in plain),
        "tests": sum(len(t.checks) + (t.reason is not None) for t in ran) + len(plain) - len(ran) + len(names),
    }
    assert {k: int(root.get(k)) for k in expected} == expected
    assert len(root.findall("testsuite")) == len(plain) + 1
    survivor = root.find(".//testcase[@name='failpoint drop-partial-text caught']/failure")
    assert survivor is not None and "survived" in survivor.get("message")
    failure = root.find(".//testcase[@name='C3 check_c3 #0']/failure")
    assert failure is not None and "pid 4242" in failure.get("message") and '"pgid": 4242' in failure.text
    advisory = [c for c in root.iter("testcase") if c.get("name") == "C9 check_c9 #0"]
    assert all(c.find("failure") is None for c in advisory)
    assert any("advisory check: fail" in (c.findtext("system-out") or "") for c in advisory)
    not_run = root.find(".//testcase[@name='task #0 (not run)']/skipped")
    assert not_run is not None and not_run.get("message") == "not run: the profile has no terminal driver"
    errored = root.find(".//testcase[@name='task #1 (errored)']/error")
    assert errored is not None and "exec format error" in errored.get("message")
    retried = root.find(".//testcase[@name='task #2 (not exercised)']/skipped")
    assert retried is not None and retried.get("message").startswith(
        "not exercised after 3 tries: 2 retries (1.20 s, 1.31 s), then")
    suite = root.find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["verdict"] in {v.value for v in Verdict} and props["status"] == "ran"
    order = [c.get("name").split()[0] for c in suite.iter("testcase")]
    assert order == ["C1", "C3", "C5", "C8", "C9", "C13", "A1"]


def test_junit_skips_what_only_a_log_reader_could_decide(black_box):
    root = ET.fromstring(render_junit(as_written(build_black_box_run(failure=False))))
    assert int(root.get("failures")) == int(root.get("errors")) == 0
    skipped = root.findall(".//testcase/skipped")
    assert skipped and all(s.get("message").startswith("unknown: needs a log reader") for s in skipped)
    root = ET.fromstring(render_junit(as_written(black_box)))
    assert int(root.get("failures")) == 1


def test_markdown_fits_a_comment_and_escapes_html(run, rival, canary):
    md = render_markdown(as_written(run, rival))
    assert len(md.encode()) < 65536
    assert md.startswith("## stopbench leaderboard: 2 agents compared")
    assert "<script>" not in md and "\x1b" not in md and canary not in md
    latency_rows = [line for line in md.splitlines()
                    if re.match(r"\| [\w-]+ \| \w+ \| interrupt-[\w-]+ \| L\d \|", line)]
    groups = {(s.agent, s.adapter, s.task, s.latency) for r in (run, rival) for s in r.latencies}
    assert len(latency_rows) == len(groups)
    assert "- **L7** resume, seen from outside: " in md


def test_markdown_lists_failures_first_and_cuts_a_long_list(run, monkeypatch):
    from harness.report import markdown

    md = render_markdown(as_written(run))
    assert md.startswith("## stopbench report: reference: not conformant\n\n"
                         "*Not conformant*: a mandatory check failed.")
    listed = [line for line in section(md, "### What went wrong", "### Failpoints").splitlines()
              if line.startswith("- **")]
    assert "C1 every turn ends exactly once: fail in 1 run" in listed[0]
    assert "C3 pending tool calls close: fail in 3 runs" in listed[1]
    assert "interrupt-cancel · driver subprocess · adapter http · repeats 0, 1, 2" in listed[1]
    assert "not run in 6 runs" in listed[-1]
    assert len(listed) == 8
    monkeypatch.setattr(markdown, "MAX_FAILURES", 4)
    cut = [line for line in section(render_markdown(as_written(run)), "### What went wrong", "### Failpoints")
           .splitlines() if line.startswith("- ")]
    assert len(cut) == 5 and cut[-1] == "- … and 4 more (see the HTML report)"


def test_golden_files_hold_no_secret_and_no_live_markup(canary):
    for path in sorted(GOLDEN.iterdir()):
        text = path.read_text(encoding="utf-8")
        assert canary not in text and "\x1b" not in text, path
        assert "<script" not in text, path  # hostile text is escaped in every format
        if path.name.endswith(".report.html"):
            for svg in timelines(text):  # each timeline parses as XML (ET.fromstring in ``timelines``)
                assert svg.findall("s:g", NS)


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_an_empty_run_renders(name):
    text = RENDERERS[name]([RunResult({"agent": "nobody"}, (), ())])
    assert text.strip()
    if name != "junit.xml":
        assert "nobody: no task results" in text
    if name == "report.html":
        assert "No latency samples." in text
    if name == "junit.xml":
        assert ET.fromstring(text.split("\n", 1)[1]).get("tests") == "0"


def test_hostile_text_in_timeline_labels_is_escaped(run):
    html = render_html(as_written(run))
    for svg in timelines(html):
        titles = [t.text or "" for t in svg.iter(f"{{{NS['s']}}}title")]
        assert any(HOSTILE.replace("\x1b", "\\x1b") in t for t in titles)


def test_a_large_sample_makes_a_small_plot():
    from harness.report.svg import LEFT, MAX_STEPS, RIGHT, TOP, WIDTH, percentile_plot

    values = list(range(1, 100_001))
    plot = ET.fromstring(percentile_plot([("big", values)], "L1"))
    (line,) = plot.findall("s:polyline", NS)
    points = line.get("points").split()
    assert len(points) == 2 * (MAX_STEPS + 1) and int(line.get("data-n")) == len(values)
    last_x, last_y = map(float, points[-1].split(","))
    assert (last_x, last_y) == (WIDTH - RIGHT, TOP)  # the curve ends at the maximum, at 100 %
    assert float(points[0].split(",")[0]) == LEFT


def test_the_check_matrix_comes_before_what_went_wrong(run):
    """A reader of an agent with failures sees where it stands on every check first, the
    evidence after: the matrix follows the scoreboard, the findings follow the matrix."""
    html = render_html(as_written(run))
    assert html.index('id="scoreboard"') < html.index('id="checks"') < html.index('id="findings"')
    nav = re.findall(r'<a href="#([a-z]+)">', html[html.index("<nav>"):html.index("</nav>")])
    assert nav.index("checks") < nav.index("findings")


def test_a_task_run_is_named_task_driver_adapter_everywhere():
    """A variant that carries its driver (interrupt-cancel[subprocess]) on an adapter of
    another name (inproc) never reads as "interrupt-cancel[subprocess] on inproc"."""
    from harness.model import CheckResult, Evidence, TaskResult
    from harness.report.progress import scoreboard

    failed = CheckResult("C3", Outcome.FAIL, Evidence("pid 9 outlived Stop"), name="pending_tool_calls_close")
    runs = as_written(RunResult({"agent": "ref"}, (TaskResult("interrupt-cancel[subprocess]", "ref", "inproc", 0,
                                                              (failed,), driver="subprocess"),), ()))
    title = "interrupt-cancel · driver subprocess · adapter inproc"
    visible = re.sub(r"<[^>]+>", "", render_html(runs))
    assert f"{title} · repeat 0" in visible and "In " + title in visible
    assert "[subprocess]" not in visible and " on inproc" not in visible
    assert f"{title} · repeat 0" in render_markdown(runs)
    terminal = scoreboard(runs[0].tasks)
    assert f"  {title} · repeat 0: C3 pending tool calls close" in terminal and "[subprocess]" not in terminal
