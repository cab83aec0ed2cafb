"""Each latency's figure shows the error of stopbench's own stopwatch beside it — the floor the
run recorded (``run.machine.floor``) with the load it was measured at — in the terminal's
latency table, the Markdown summary and the HTML latency tables; a run that measured no floor
shows no such column rather than a made-up one."""

from __future__ import annotations

import dataclasses

from harness.cli import run as cli_run
from harness.model import LatencySample, RunResult
from harness.report.html import render_html
from harness.report.latency import recorded_floors
from harness.report.markdown import render_markdown
from harness.report.progress import latency_table

# A quick floor as `stopbench run` records it (ms), measured at a 1-minute load of 2.1.
FLOOR = {
    "delay_ms": 0, "loadavg": [2.1, 1.9, 1.7], "took_s": 0.66,
    "L1": {"inproc": {"n": 3, "p50_ms": 0.043, "max_ms": 0.28}},
    "L2": {"inproc": {"n": 3, "p50_ms": 0.26, "max_ms": 0.52}, "subprocess": {"n": 1, "p50_ms": 0.37, "max_ms": 0.37}},
    "L3": {"inproc": {"n": 1, "p50_ms": 1.32, "max_ms": 1.32}},
    "L4": {"subprocess": {"n": 1, "p50_ms": 26.78, "max_ms": 26.78}},
    "L4_without_start_up": {"subprocess": {"n": 1, "p50_ms": 2.16, "max_ms": 2.16}},
}


def sample(latency: str, value_ns: int, driver: str, task: str = "interrupt-cancel", repeat: int = 0) -> LatencySample:
    return LatencySample(latency, value_ns, "ref", "http", task, repeat, {"driver": driver})


SAMPLES = (*(sample("L2", 1_460_000 + k, "subprocess", repeat=k) for k in range(3)),
           *(sample("L3", 15_000_000 + k, "terminal", repeat=k) for k in range(3)),
           sample("L4", 40_000_000, "subprocess", "interrupt-timeout"),
           *(sample("L7", 210_000_000 + k, "subprocess", "interrupt-restart", k) for k in range(2)))


def run_with(floor: object) -> RunResult:
    machine = {"null_spawn_exit_ms": 44.0, "loadavg": [2.0, 2.0, 2.0], "cpus": 2, "floor": floor}
    return RunResult(run={"agent": "ref", "machine": machine}, tasks=(), latencies=SAMPLES)


def test_the_error_of_each_latency_is_its_floor_on_its_driver():
    floors = recorded_floors(run_with(FLOOR).run)
    assert floors.load == 2.1
    assert floors.error("L2", {"subprocess"}).error_ns == 370_000
    assert floors.error("L2", {"inproc", "subprocess"}).error_ns == 370_000  # the coarser of the two
    assert floors.error("L3", {"terminal"}).error_ns == 1_320_000  # a driver without one: the latency's largest
    assert floors.error("L4", {"subprocess"}).error_ns == 2_160_000  # without the calibration agent's start-up
    assert floors.error("L7", {"subprocess"}) is None  # no floor measures a resume
    assert floors.error("L2", {"subprocess"}).text() == "± 370.0 µs (floor at load 2.1)"


def test_a_merge_shows_the_coarsest_floor_of_its_shards_at_the_busiest_load():
    busy = {**FLOOR, "loadavg": [3.5, 3.0, 2.0], "L2": {"subprocess": {"n": 1, "p50_ms": 0.9, "max_ms": 0.9}}}
    header = {"merged_from": [{"shard": "1/2", "machine": {"floor": FLOOR}}, {"shard": "2/2", "machine": {"floor": busy}}]}
    error = recorded_floors(header).error("L2", {"subprocess"})
    assert (error.error_ns, error.load) == (900_000, 3.5)


def test_a_floor_that_failed_or_was_not_measured_shows_nothing():
    for floor in ({"error": "RuntimeError: no fake server", "took_s": 0.1}, None):
        run = run_with(floor)
        assert recorded_floors(run.run).error("L2", {"subprocess"}) is None
        assert "stopwatch error" not in latency_table(run.latencies, recorded_floors(run.run))
        assert "stopwatch error" not in render_markdown([run])


def test_the_terminal_table_shows_each_figure_with_its_error(capsys):
    run = run_with(FLOOR)
    cli_run._summary(run, {}, [], None)
    lines = capsys.readouterr().out.splitlines()
    (l2,) = [line for line in lines if " L2 " in line and "1.46 ms" in line]
    assert l2.endswith("± 370.0 µs (floor at load 2.1)")
    (l3,) = [line for line in lines if " L3 " in line and "15.00 ms" in line]
    assert l3.endswith("± 1.32 ms (floor at load 2.1)")
    (l7,) = [line for line in lines if " L7 " in line and "210.00 ms" in line]
    assert l7.endswith(" -")
    assert any("L4 timeout overshoot 40.00 ms ± 2.16 ms (floor at load 2.1)" in line for line in lines)
    assert any(line.startswith("stopwatch error: ") for line in lines)


def test_the_markdown_summary_shows_each_figure_with_its_error():
    text = render_markdown([run_with(FLOOR)])
    header = next(line for line in text.splitlines() if line.startswith("| agent | adapter | task | latency"))
    assert header.rstrip(" |").endswith("stopwatch error")
    (l2,) = [line for line in text.splitlines() if line.startswith("| ref | http | interrupt-cancel | L2 |")]
    assert "| 1.46 ms |" in l2 and l2.endswith("| ± 370.0 µs (floor at load 2.1) |")
    (l7,) = [line for line in text.splitlines() if "| L7 |" in line and line.startswith("| ref")]
    assert l7.endswith("| - |")
    assert "- stopwatch error: " in text


def test_the_html_latency_table_shows_each_figure_with_its_error():
    html = render_html([run_with(FLOOR)])
    table = html[html.index('id="latency-http"'):]
    table = table[:table.index("</table>")]
    assert "<th>stopwatch error</th>" in table
    (l2,) = [row for row in table.split("<tr>") if "L2 " in row]
    assert "1.46 ms" in l2 and "<td>± 370.0 µs (floor at load 2.1)</td>" in l2


def test_runs_without_a_floor_keep_their_tables_as_they_were():
    run = dataclasses.replace(run_with(FLOOR), run={"agent": "ref"})
    assert "stopwatch error" not in latency_table(run.latencies, recorded_floors(run.run))
    assert "stopwatch error" not in render_markdown([run]) and "stopwatch error" not in render_html([run])
