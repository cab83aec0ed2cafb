"""The gate does not call a loaded run a regression: both runs' machine load is shown next
to every latency verdict, and where the machines differ no latency is judged — each row
says "not comparable: machine differs", and the gate says how they differ."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports"))

from report_builders import build_run  # noqa: E402

from harness import cli  # noqa: E402
from harness.cli.report import gate_main  # noqa: E402
from harness.model import RunResult  # noqa: E402
from harness.report import compare, format_gate  # noqa: E402
from harness.report.writer import results_text  # noqa: E402
from harness.run import session  # noqa: E402


async def _no_floor() -> int:
    return 0  # the stopwatch's floor is not what these tests measure

NOT_COMPARABLE = "not comparable: machine differs"
RESTARTS = [("interrupt-restart", a, r) for a in ("inproc", "http") for r in range(10)]  # L7, one sample each


def on(load: float, *, scale: float, seed: int, spawn_ms: float = 20.0) -> RunResult:
    """The same code's run (L7 scaled by ``scale``) on a 2-CPU machine with ``load`` (1-minute)."""
    run = build_run(RESTARTS, repeat=10, broken=False, timing_seed=seed, scale=scale)
    machine = {"null_spawn_exit_ms": spawn_ms, "null_signal_exit_ms": 1.0, "loadavg": [load, load, load],
               "cpus": 2, "floor": 1000, "loadavg_end": [load, load, load]}
    return dataclasses.replace(run, run={**run.run, "machine": machine})


def test_a_quiet_baseline_against_a_run_under_three_hogs_is_not_a_regression(tmp_path, capsys):
    quiet, hogged = on(0.1, scale=1.0, seed=1), on(3.1, scale=1.8, seed=2)
    result = compare(quiet, hogged)
    assert result.latencies and not result.failed
    assert {r.verdict for r in result.latencies} == {NOT_COMPARABLE}
    assert result.machine_differs == "load per CPU 0.05 vs 1.55"
    text = format_gate(result)
    latency_lines = [line for line in text.splitlines() if " L7 " in line]
    assert len(latency_lines) == 2 and all("0.05/1.55" in line and NOT_COMPARABLE in line for line in latency_lines)
    assert "REGRESSION" not in text and "machine differs (load per CPU 0.05 vs 1.55)" in text
    for name, run in (("base.json", quiet), ("cur.json", hogged)):
        (tmp_path / name).write_text(results_text(run))
    assert gate_main(["--baseline", str(tmp_path / "base.json"), "--current", str(tmp_path / "cur.json")]) == 0
    assert "latencies not comparable: machine differs" in capsys.readouterr().out


def test_a_null_agent_that_costs_twice_as_much_is_a_different_machine():
    result = compare(on(0.1, scale=1.0, seed=1), on(0.2, scale=1.8, seed=2, spawn_ms=45.0))
    assert result.machine_differs == "a null agent's spawn to exit 20 ms vs 45 ms" and not result.failed


def test_on_alike_machines_a_slowdown_is_still_a_regression_with_the_loads_shown():
    result = compare(on(0.1, scale=1.0, seed=1), on(0.3, scale=1.8, seed=2))
    assert result.machine_differs is None and result.failed
    assert {r.verdict for r in result.latencies} == {"REGRESSION: slower beyond tolerance"}
    lines = [line for line in format_gate(result).splitlines() if " L7 " in line]
    assert len(lines) == 2 and all("0.05/0.15" in line for line in lines)


@pytest.mark.parametrize("load_end", [0.1, 3.1])
def test_a_load_that_comes_mid_run_counts(load_end):
    quiet = on(0.1, scale=1.0, seed=1)
    late = on(0.1, scale=1.8, seed=2)
    late = dataclasses.replace(late, run={**late.run, "machine": {**late.run["machine"], "loadavg_end": [load_end] * 3}})
    assert (compare(quiet, late).machine_differs is not None) == (load_end > 1)


def test_a_run_records_its_load_when_it_ends(tmp_path, monkeypatch):
    async def run_all(profile, todo, **kwargs):
        return None

    monkeypatch.setattr(session, "run_all", run_all)
    monkeypatch.setattr(session, "null_agent_costs", lambda: {"loadavg": [0.0, 0.0, 0.0], "cpus": 2})
    monkeypatch.setattr(session, "quick_floor_async", _no_floor)
    cli.main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(tmp_path)])
    machine = RunResult.from_json(json.loads((tmp_path / "results.json").read_text())).run["machine"]
    assert machine["loadavg"] == [0.0, 0.0, 0.0] and len(machine["loadavg_end"]) == 3
