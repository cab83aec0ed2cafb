"""Renderers: golden files, plus structural checks of what each output must hold.

The golden files under ``golden/`` are the exact outputs for the synthetic runs of
``conftest.py``. After an intended change to a renderer, regenerate them with

    STOPBENCH_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/reports/test_renderers.py

and review the diff like code.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.report.latency import PERCENTILES, percentile
from harness.model import Outcome, Tier
from harness.report import render_html, render_junit, render_markdown
from harness.report.load import parse_results
from harness.report.writer import results_text

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("STOPBENCH_REGEN_GOLDEN") == "1"
RENDERERS = {"junit.xml": render_junit, "summary.md": render_markdown, "report.html": render_html}


def as_written(*runs):
    """What renderers see in practice: the run after a trip through the results file."""
    import json

    return [parse_results(json.loads(results_text(r))) for r in runs]


@pytest.mark.parametrize("name", sorted(RENDERERS))
@pytest.mark.parametrize("case", ["single", "leaderboard"])
def test_golden(name, case, run, rival):
    runs = as_written(run) if case == "single" else as_written(run, rival)
    text = RENDERERS[name](runs)
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


NS = {"s": "http://www.w3.org/2000/svg"}


def test_html_is_self_contained(run, rival):
    html = render_html(as_written(run, rival))
    parser = Tags()
    parser.feed(html)
    names = {t for t, _ in parser.tags}
    assert not names & {"script", "link", "iframe", "img", "object", "embed"}
    for tag, attrs in parser.tags:
        for key in ("src", "href", "xlink:href", "action"):
            assert key not in attrs, (tag, attrs)
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)  # no event handlers
    assert "url(" not in parser.style and "@import" not in parser.style
    external = [u for u in re.findall(r"https?://[^\s\"'<>]+", html) if u != "http://www.w3.org/2000/svg"]
    assert external == []


def test_html_plots_match_the_samples(run):
    html = render_html(as_written(run))
    plots = svgs(html)
    pooled: dict[tuple[str, str], list[int]] = {}
    for s in run.latencies:
        pooled.setdefault((s.adapter, s.latency), []).append(s.value_ns)
    histograms = [p for p in plots if p.findall("s:rect", NS)]
    quantiles = [p for p in plots if p.findall("s:polyline", NS)]
    assert len(histograms) == len(quantiles) == len(pooled)
    for (adapter, latency), values in pooled.items():
        (hist,) = [h for h in histograms if h.findtext("s:title", namespaces=NS).startswith(f"{latency} · ")
                   and h.findtext("s:title", namespaces=NS).endswith(f"· {adapter}")]
        assert sum(int(r.get("data-count")) for r in hist.findall("s:rect", NS)) == len(values)
        (plot,) = [q for q in quantiles if q.findtext("s:title", namespaces=NS) == f"{latency} percentiles · {adapter}"]
        (line,) = plot.findall("s:polyline", NS)
        assert int(line.get("data-n")) == len(values)
        points = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
        assert [x for x, _ in points] == sorted(x for x, _ in points)  # left to right
        assert [y for _, y in points] == sorted((y for _, y in points), reverse=True)  # rising values
        markers = {int(c.get("data-percentile")): int(c.get("data-value-ns")) for c in plot.findall("s:circle", NS)}
        assert markers == {p: percentile(values, p) for p in PERCENTILES}


def test_leaderboard_ranks_the_conformant_agent_first_and_overlays_agents(run, rival):
    html = render_html(as_written(run, rival))
    board = html[html.index('id="scoreboard"'):html.index('id="checks"')]
    assert "Leaderboard" in board
    assert board.index("other-agent") < board.index("reference")
    (l3,) = [p for p in svgs(html) if p.findtext("s:title", namespaces=NS) == "L3 percentiles · http"]
    assert {pl.get("data-series") for pl in l3.findall("s:polyline", NS)} == {"reference", "other-agent"}


def test_html_shows_escaped_evidence_grouped_by_kind(run, canary):
    html = render_html(as_written(run))
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert "\x1b" not in html
    failure = html[html.index("interrupt-cancel #0: C3"):]
    failure = failure[:failure.index("</details>")]
    for heading in ("request (1)", "tool_result (1)", "process (1)"):
        assert f"<h4>{heading}</h4>" in failure
    assert "4242" in failure and "/v1/chat/completions" in failure
    assert canary not in html


def test_junit_counts_follow_the_verdicts(run, canary):
    xml = render_junit(as_written(run))
    assert canary not in xml
    root = ET.fromstring(xml)
    plain = [t for t in run.tasks if t.mutant is None]
    mandatory = [c for t in plain for c in t.checks if c.tier is Tier.MANDATORY]
    names = {t.mutant for t in run.tasks if t.mutant}
    survived = {n for n in names if all(t.conformant for t in run.tasks if t.mutant == n)}
    assert survived == {"drop-partial-text"}
    expected = {
        "failures": sum(c.outcome is Outcome.FAIL for c in mandatory) + len(survived),
        "errors": sum(c.outcome is Outcome.UNKNOWN for c in mandatory) + sum(t.error is not None for t in plain),
        "skipped": sum(c.outcome is Outcome.SKIPPED for t in plain for c in t.checks),
        "tests": sum(len(t.checks) + (t.error is not None) for t in plain) + len(names),
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


def test_markdown_fits_a_comment_and_escapes_html(run, rival, canary):
    md = render_markdown(as_written(run, rival))
    assert len(md.encode()) < 65536
    assert md.startswith("## stopbench leaderboard: 2 agents compared")
    assert "<script>" not in md and "\x1b" not in md and canary not in md
    latency_rows = [line for line in md.splitlines() if re.match(r"\| [\w-]+ \| \w+ \| interrupt-[\w-]+ \| L\d \|", line)]
    groups = {(s.agent, s.adapter, s.task, s.latency) for r in (run, rival) for s in r.latencies}
    assert len(latency_rows) == len(groups)


def test_markdown_folds_repeats_and_cuts_a_long_failure_list(run, monkeypatch):
    from harness.report import markdown

    md = render_markdown(as_written(run))
    assert md.startswith("## stopbench report: reference: NOT conformant")
    assert "C3 check_c3** (mandatory) fail in #0, #1, #2 of 3" in md
    listed = [line for line in md.splitlines() if line.startswith("- **")]
    assert len(listed) == 6
    monkeypatch.setattr(markdown, "MAX_FAILURES", 4)
    cut = [line for line in render_markdown(as_written(run)).splitlines() if line.startswith("- ")]
    assert len(cut) == 5 and cut[-1] == "- … and 2 more (see the HTML report)"


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_an_empty_run_renders(name):
    from harness.model import RunResult

    text = RENDERERS[name]([RunResult({"agent": "nobody"}, (), ())])
    assert text.strip()
    if name != "junit.xml":
        assert "nobody: no task results" in text
    if name == "report.html":
        assert "No latency samples." in text
    if name == "junit.xml":
        assert ET.fromstring(text.split("\n", 1)[1]).get("tests") == "0"


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
