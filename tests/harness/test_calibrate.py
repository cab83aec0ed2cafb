"""stopbench calibrate: the calibration agent, the error table and the quick floor.

Timing assertions here are lower bounds only, true on any machine however busy: an agent that
waits D before acting is never measured below D, and a run with D = 20 ms is never measured
below the same run with D = 0. How small the error is belongs in the output of
``stopbench calibrate``, not in a test.
"""

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.calibrate import figures as calibration_figures
from harness.calibrate import stopwatch
from harness.calibrate.agent import delay_ns_from_env, parse_args
from harness.calibrate.agent_wire import ResponseParser, Step, http_request
from harness.calibrate.figures import AIM_NS, L4_LESS_START_UP, MEASURED, CalSample, error_rows, error_table
from harness.calibrate.stopwatch import quick_floor_async
from harness.cli.calibrate import main as calibrate_main

D_MS = 20.0
D_NS = int(D_MS * 1e6)
AGENT = Path(stopwatch.__file__).with_name("agent.py")


@pytest.fixture(scope="module")
def calibration():
    """One calibration at D = 0 and D = 20 ms, every task on every driver, run once for the module."""
    return asyncio.run(stopwatch.calibrate(repeat=1, delays_ms=(0.0, D_MS)))


# --- the agent's measured latency grows with D ---------------------------------------------------


@pytest.mark.slow(reason="the module's calibration, every task on every driver")
def test_every_latency_is_measured_on_every_driver_the_agent_has(calibration):
    seen = {(s.latency, s.driver) for s in calibration.samples}
    assert seen == {("L1", "inproc"), ("L2", "inproc"), ("L2", "subprocess"), ("L3", "inproc"),
                    ("L3", "subprocess"), ("L4", "subprocess")}


@pytest.mark.slow(reason="the module's calibration, every task on every driver")
def test_an_agent_that_waits_d_is_never_measured_below_d(calibration):
    """Causality, which no load can bend: the effect is never measured before the agent's own
    delay D. (How far above D is the stopwatch's error, which load does move: it is reported by
    ``stopbench calibrate``, never asserted.)"""
    slow = [s for s in calibration.samples if s.delay_ns == D_NS]
    assert {s.latency for s in slow} == set(MEASURED)
    for s in slow:
        assert s.measured_ns >= D_NS, f"{s.latency} on {s.driver}: {s.measured_ns} ns < D"
    assert all(s.measured_ns >= s.delay_ns for s in calibration.samples)


@pytest.mark.slow(reason="the module's calibration, every task on every driver")
def test_the_parts_add_up_to_the_error(calibration):
    for s in calibration.samples:
        assert s.parts, f"{s.latency} on {s.driver} has no breakdown: {s}"
        assert sum(s.parts.values()) == s.error_ns, f"{s.latency} on {s.driver}: {dict(s.parts)} vs {s.error_ns}"


# --- the error table ------------------------------------------------------------------------------


@pytest.mark.slow(reason="the module's calibration, every task on every driver")
def test_the_error_table_prints_every_latency_with_n(calibration):
    table = error_table(calibration.samples)
    lines = table.splitlines()
    assert lines[0].split()[:6] == ["latency", "driver", "n", "p50", "p99", "max"]
    rows = {(r.latency, r.driver): r for r in error_rows(calibration.samples)}
    for latency in (*MEASURED, L4_LESS_START_UP):
        assert any(key[0] == latency for key in rows), latency
    for (latency, driver), row in rows.items():
        assert row.n == 2  # one run at each D
        line = next(line for line in lines if line.startswith(latency + " ") and f" {driver} " in line)
        assert f" {row.n} " in line
    report = calibration_figures.report(calibration)
    assert "load" in report and "CPUs" in report


def test_error_rows_from_known_samples():
    samples = [CalSample("L1", "inproc", "cal-stream", d, d + e, {"reach": e}) for d, e in
               ((0, 10_000), (500_000, 20_000), (2_000_000, 30_000), (0, 40_000))]
    samples.append(CalSample("L4", "subprocess", "cal-timeout", 0, 9_000_000, {"start-up": 8_000_000, "exit": 1_000_000}))
    rows = {r.latency: r for r in error_rows(samples)}
    l1 = rows["L1"]
    assert (l1.n, l1.p50, l1.p99, l1.max, l1.below_d) == (4, 20_000, 40_000, 40_000, 0)
    assert l1.floor_p50 == 10_000  # nearest rank over the two D = 0 runs
    assert rows[L4_LESS_START_UP].p50 == 1_000_000 and rows["L4"].p50 == 9_000_000
    assert dict(rows[L4_LESS_START_UP].parts) == {"exit": 1_000_000}
    table = error_table(samples)
    assert "≤ 50.0 µs" in table and set(AIM_NS) == set(MEASURED)


def test_a_measurement_below_d_is_counted():
    rows = error_rows([CalSample("L2", "subprocess", "cal-stream", 2_000_000, 1_000_000)])
    assert rows[0].below_d == 1 and rows[0].p50 == -1_000_000


# --- the quick floor --------------------------------------------------------------------------------


@pytest.mark.slow(reason="runs of the calibration agent on every driver")
async def test_the_quick_floor_returns_every_latency():
    floor = await quick_floor_async()
    assert "error" not in floor, floor
    for latency in MEASURED:
        assert floor[latency], latency
        for figures in floor[latency].values():
            assert figures["n"] >= 1 and figures["p50_ms"] >= 0
    assert floor["delay_ms"] == 0 and len(floor["loadavg"]) == 3
    json.dumps(floor)  # goes into a results header as it is


# --- the command ------------------------------------------------------------------------------------


QUICK_FLOOR = {"delay_ms": 0,
               "L1": {"inproc": {"n": 3, "p50_ms": 0.1249, "max_ms": 0.1437,
                                 "parts_ms": {"reach": 0.0013, "late": 0.1142, "shut": 0.009}}},
               "L4": {"subprocess": {"n": 1, "p50_ms": 35.5139, "max_ms": 35.5139}},
               "loadavg": [0.5, 0.25, 0.125], "wakeup_p50_ms": 0.0118, "took_s": 0.705, "agent": "calibrate",
               "note": "no agent can be measured below these figures on this machine"}


def test_calibrate_quick_prints_the_floor_as_a_table(monkeypatch, capsys, tmp_path):
    async def floor():
        return QUICK_FLOOR

    monkeypatch.setattr("harness.cli.calibrate.quick_floor_async", floor)
    assert calibrate_main(["--quick", "--json", str(tmp_path / "floor.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("stopbench calibrate --quick: the floor of stopbench's own stopwatch (D = 0) in 0.7 s; "
                               "load 0.50 0.25 0.12; wake-up of an idle process p50 11.8 µs")
    assert lines[2].split() == ["latency", "driver", "n", "p50", "max", "made", "of", "(p50", "each)"]
    assert lines[3].split() == ["L1", "inproc", "3", "124.9", "µs", "143.7", "µs", "reach", "1.3", "µs,", "late",
                                "114.2", "µs,", "shut", "9.0", "µs"]
    assert lines[4].split() == ["L4", "subprocess", "1", "35.51", "ms", "35.51", "ms", "-"]
    assert lines[6] == QUICK_FLOOR["note"]
    assert json.loads((tmp_path / "floor.json").read_text()) == QUICK_FLOOR


def test_calibrate_quick_says_why_the_floor_could_not_be_measured(monkeypatch, capsys):
    async def floor():
        return {"error": "CalibrationError: no sample", "took_s": 0.1}

    monkeypatch.setattr("harness.cli.calibrate.quick_floor_async", floor)
    assert calibrate_main(["--quick"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "the quick floor could not be measured: CalibrationError: no sample" in err


def test_calibrate_refuses_bad_options(capsys):
    for argv in (["--repeat", "0"], ["--delays", "x"], ["--delays", "-1"], ["--driver", "terminal"]):
        with pytest.raises(SystemExit) as exc:
            calibrate_main(argv)
        assert exc.value.code == 2, argv
    assert "calibrate" in capsys.readouterr().err


# --- the agent itself -----------------------------------------------------------------------------


def test_the_headless_agent_needs_nothing_but_the_standard_library(tmp_path):
    """Run as the profile runs it (-I -S: no site-packages, no project on the path)."""
    out = subprocess.run([sys.executable, "-I", "-S", str(AGENT), "--version"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("stopbench-calibration-agent")


def test_loading_the_in_process_agent_loads_nothing_of_the_harness():
    code = ("import sys, harness.calibrate.agent_inproc; "
            "print(sorted(m for m in sys.modules if m.startswith(('harness', 'fake_server'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(sorted(["harness", "harness.calibrate", "harness.calibrate.agent",
                                             "harness.calibrate.agent_inproc", "harness.calibrate.agent_tool_group",
                                             "harness.calibrate.agent_wire"]))


def test_the_agent_reads_a_chunked_sse_stream_split_anywhere():
    events = [{"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
              {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {
                  "name": "bash", "arguments": '{"command":'}}]}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ' "ls"}'}}]},
                            "finish_reason": "tool_calls"}]}]
    body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
    chunked = b""
    for i in range(0, len(body), 7):
        piece = body[i:i + 7]
        chunked += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n" + chunked + b"0\r\n\r\n"
    parser, step = ResponseParser(), Step()
    for i in range(0, len(wire), 5):
        for payload in parser.feed(wire[i:i + 5]):
            step.feed(payload)
    assert parser.status == 200 and parser.done
    assert step.text == "Hello" and step.finish_reason == "tool_calls"
    assert step.calls[0] == {"id": "c1", "name": "bash", "arguments": '{"command": "ls"}'}
    assert step.message()["tool_calls"][0]["function"]["name"] == "bash"


def test_the_agent_keeps_an_error_body():
    parser = ResponseParser()
    parser.feed(b'HTTP/1.1 500 Internal Server Error\r\nContent-Length: 17\r\n\r\n{"error": "nope"}')
    assert parser.status == 500 and parser.raw_body == b'{"error": "nope"}'


def test_the_agent_request_and_options():
    (host, port), data = http_request("http://127.0.0.1:8123/v1", "/chat/completions", {"a": 1}, "sk-x")
    assert (host, port) == ("127.0.0.1", 8123)
    assert data.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and data.endswith(b'{"a": 1}')
    opts = parse_args(["--timeout", "0.5", "--base-url", "http://h:1/v1", "--", "do", "it"])
    assert opts["timeout"] == 0.5 and opts["prompt"] == "do it" and opts["model"] == "stopbench-1"
    with pytest.raises(SystemExit):
        parse_args(["--timeout", "0", "--base-url", "http://h:1", "x"])


def test_the_delay_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("STOPBENCH_CAL_DELAY_MS", "0.5")
    assert delay_ns_from_env() == 500_000
    monkeypatch.delenv("STOPBENCH_CAL_DELAY_MS")
    assert delay_ns_from_env() == 0
    monkeypatch.setenv("STOPBENCH_CAL_DELAY_MS", "-1")
    with pytest.raises(ValueError):
        delay_ns_from_env()
