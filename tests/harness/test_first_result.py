"""A run shows its first task run's result before it measures the machine: the null agent's
costs and the stopwatch's floor are taken right after the first task run, between it and the
rest, and a run cut short before then says they were not measured."""

from __future__ import annotations

import json

from harness import cli
from harness.cli.signals import Interrupted
from harness.run import session

RUN = ["run", "--task", "exit-codes", "--driver", "subprocess"]  # three task runs: one per adapter


def test_the_machine_is_measured_after_the_first_task_run_and_before_the_rest(tmp_path, monkeypatch):
    events: list[object] = []

    async def run_all(profile, todo, **kwargs):
        events.append([item.adapter for item in todo])

    async def floor():
        events.append("floor")
        return {"L2": {"subprocess": {"p50_ms": 0.3}}}

    def null_costs():
        events.append("null agent")
        return {"null_spawn_exit_ms": 20.0, "loadavg": [0.5, 0.5, 0.5], "cpus": 2}

    monkeypatch.setattr(session, "run_all", run_all)
    monkeypatch.setattr(session, "null_agent_costs", null_costs)
    monkeypatch.setattr(session, "quick_floor_async", floor)
    cli.main([*RUN, "--report-dir", str(tmp_path)])
    assert events == [["inproc"], "null agent", "floor", ["http", "openai-sdk"]]
    machine = json.loads((tmp_path / "results.json").read_text())["run"]["machine"]
    assert machine["null_spawn_exit_ms"] == 20.0 and machine["floor"] == {"L2": {"subprocess": {"p50_ms": 0.3}}}
    assert "not_measured" not in machine


def test_a_run_cut_short_in_its_first_task_run_says_the_machine_was_not_measured(tmp_path, monkeypatch):
    measured: list[str] = []

    async def run_all(profile, todo, **kwargs):
        raise Interrupted("SIGINT received")

    monkeypatch.setattr(session, "run_all", run_all)
    monkeypatch.setattr(session, "null_agent_costs", lambda: measured.append("null agent"))
    monkeypatch.setattr(session, "quick_floor_async", lambda: measured.append("floor"))
    assert cli.main([*RUN, "--report-dir", str(tmp_path)]) == 2
    results = json.loads((tmp_path / "results.json").read_text())
    assert measured == [] and results["run"]["incomplete"]
    machine = results["run"]["machine"]
    assert "first task run" in machine["not_measured"] and machine["cpus"] and len(machine["loadavg"]) == 3
