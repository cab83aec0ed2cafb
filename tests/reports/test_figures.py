"""The report's figures read plainly: one time unit along each axis, and a harmless probe (a
404 to a path the fake server does not serve) drawn apart from an error."""

from __future__ import annotations

import re

from fake_server.records import Error, Request
from harness.model import Observation, TimelineMark
from harness.report.svg import dot_plot, histogram, percentile_plot, timeline
from harness.run.timeline import timeline as marks_of

UNIT = re.compile(r"[\d.]+ (µs|ms|s)$")


def tick_units(svg: str) -> set[str]:
    """The units of the axis ticks that carry one (counts and percentiles carry none)."""
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', svg)
    return {m.group(1) for t in ticks if (m := UNIT.search(t))}


def test_each_axis_of_a_latency_plot_uses_one_unit():
    values = [400_000, 650_000, 900_000, 1_300_000, 2_000_000]  # from µs into ms
    for svg in (histogram(values, "L3"), percentile_plot([("a", values)], "L3"),
                dot_plot([("a", values[:3]), ("b", values[3:])], "L3")):
        assert tick_units(svg) == {"ms"}, svg
    assert "0.400 ms" in histogram(values, "L3") and "2.00 ms" in histogram(values, "L3")


def test_a_timeline_axis_uses_one_unit_and_says_which():
    marks = (TimelineMark("harness", "input", 5.0, "hello"),
             TimelineMark("agent", "process", 1.0, "run pid 7: exit 0", end_ms=1500.0, ref="pid 7"))
    svg = timeline(marks, "run", "r")
    assert tick_units(svg) == {"ms"} and ">ms from the task's start</text>" in svg
    long = timeline((*marks, TimelineMark("agent", "settled", 25_000.0, "settled")), "run", "r")
    assert tick_units(long) == {"s"} and ">s from the task's start</text>" in long


def test_a_probe_of_an_unserved_path_is_drawn_apart_from_an_error():
    start = 1_000_000_000
    records = (Error(mono_ns=start + 2_000_000, path="/v1/models", method="GET", status=404,
                     problem="Invalid URL (GET /v1/models)"),
               Request(mono_ns=start + 3_000_000, request=1, status=200, api="chat", path="/v1/chat/completions",
                       headers={}),
               Error(mono_ns=start + 4_000_000, request=2, problem="no scripted response left"))
    obs = Observation(task="t", agent="a", adapter="http", driver="subprocess", api_key="k", records=records)
    marks = marks_of(obs, start)
    probe = next(m for m in marks if m.kind == "probe")
    error = next(m for m in marks if m.kind == "error")
    assert (probe.lane, probe.at_ms) == ("probes", 2.0) and "GET /v1/models → 404" in probe.label
    assert error.lane == "model" and "no scripted response left" in error.label
    svg = timeline(marks, "run", "r")
    drawn = dict(re.findall(r'<g class="mark k-(probe|error)".*?<title>.*?</title>(.*?)</g>', svg, re.S))
    assert 'fill="none" stroke="#999"' in drawn["probe"] and "#d62728" not in drawn["probe"]
    assert 'stroke="#d62728"' in drawn["error"]
    assert re.findall(r'class="lane-name"[^>]*>([^<]*)<', svg) == ["model", "probes"]
