"""``report merge`` joins only shards of one run: shards cut from different ``--task``
selections are refused, naming the difference; and a merged run compares equal to the
unsharded run although each shard ran on a machine of its own load."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports"))

from report_builders import build_run  # noqa: E402

from harness import cli  # noqa: E402
from harness.model.sharding import shard_items  # noqa: E402
from harness.report import comparable, merge  # noqa: E402
from harness.run import session  # noqa: E402


async def _no_floor() -> int:
    return 0  # the stopwatch's floor is not what these tests measure

ITEMS = [(t, a, r) for t in ("interrupt-cancel", "interrupt-timeout") for a in ("inproc", "http") for r in range(2)]


def machine(load: float) -> dict:
    return {"null_spawn_exit_ms": 20.0 * (1 + load), "null_signal_exit_ms": 1.0, "loadavg": [load, load, load],
            "cpus": 2, "floor": 1000}


def on_machine(run, load: float):
    return dataclasses.replace(run, run={**run.run, "machine": machine(load)})


def test_merged_shards_equal_the_unsharded_run_whatever_each_machine_was(tmp_path):
    whole = on_machine(build_run(ITEMS, repeat=2, timing_seed=1), 0.1)
    shards = [on_machine(build_run(shard_items(ITEMS, i, 2), repeat=2, shard=f"{i}/2", timing_seed=1), load)
              for i, load in ((1, 0.5), (2, 3.0))]
    merged = merge(shards)
    assert comparable(merged) == comparable(whole)
    assert [m["machine"]["loadavg"][0] for m in merged.run["merged_from"]] == [0.5, 3.0]


@pytest.fixture
def runs_nothing(monkeypatch):
    """``stopbench run`` up to its task runs, which it skips: the results hold the run's header."""
    async def run_all(profile, todo, **kwargs):
        return None

    monkeypatch.setattr(session, "run_all", run_all)
    monkeypatch.setattr(session, "null_agent_costs", dict)
    monkeypatch.setattr(session, "quick_floor_async", _no_floor)


def shard(tmp_path: Path, index: int, tasks: str) -> str:
    folder = tmp_path / f"shard-{index}"
    cli.main(["run", "--task", tasks, "--adapter", "http", "--repeat", "2", "--shard", f"{index}/2",
              "--report-dir", str(folder)])
    return str(folder / "results.json")


def test_shards_of_different_task_selections_are_refused_naming_the_difference(tmp_path, runs_nothing, capsys):
    one = shard(tmp_path, 1, "exit-codes")
    two = shard(tmp_path, 2, "exit-codes,interrupt-cancel")
    capsys.readouterr()
    out = tmp_path / "merged.json"
    assert cli.main(["report", "merge", one, two, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{two}: shard 2/2 has selection.tasks=['exit-codes', 'interrupt-cancel'], shard 1/2 has " \
           "['exit-codes']: not shards of one run" in err
    assert not out.exists()


def test_shards_of_one_selection_record_the_whole_runs_selection(tmp_path, runs_nothing):
    one, two = shard(tmp_path, 1, "exit-codes,interrupt-cancel"), shard(tmp_path, 2, "exit-codes,interrupt-cancel")
    headers = [json.loads(Path(p).read_text())["run"] for p in (one, two)]
    assert headers[0]["selection"] == headers[1]["selection"]
    assert headers[0]["selection"]["tasks"] == ["exit-codes", "interrupt-cancel"]
    assert headers[0]["digests"] == headers[1]["digests"]
    assert cli.main(["report", "merge", one, two, "-o", str(tmp_path / "merged.json")]) == 0
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["run"]["selection"] == headers[0]["selection"] and "machine" not in merged["run"]
