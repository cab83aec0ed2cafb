"""Sharding the task × repeat work, and merging shard results back into one run."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from harness.cli.report import merge_main
from harness.model import Outcome
from harness.model.sharding import ShardError, parse_shard, shard_items
from harness.report import comparable, load_results, merge
from harness.report.writer import results_text

TASKS = ("interrupt-cancel", "interrupt-timeout", "interrupt-restart")
ITEMS = [(t, a, r) for t in TASKS for a in ("inproc", "http") for r in range(3)]


@pytest.mark.parametrize("spec,expected", [("1/3", (1, 3)), ("3/3", (3, 3)), (" 2 / 5 ", (2, 5)), ("1/1", (1, 1))])
def test_parse_shard(spec, expected):
    assert parse_shard(spec) == expected


@pytest.mark.parametrize("spec", ["0/3", "4/3", "1/0", "1-3", "", "a/b", "1/3/4"])
def test_parse_shard_refuses_nonsense(spec):
    with pytest.raises(ShardError, match="shard"):
        parse_shard(spec)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 25])
def test_shards_partition_the_items_evenly_in_their_order(count):
    shards = [shard_items(ITEMS, i, count) for i in range(1, count + 1)]
    flat = [item for shard in shards for item in shard]
    assert sorted(flat) == sorted(ITEMS)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    for shard in shards:
        assert shard == [item for item in ITEMS if item in shard]


def test_the_split_does_not_depend_on_the_input_order():
    reordered = list(reversed(ITEMS))
    for i in (1, 2, 3):
        assert sorted(shard_items(ITEMS, i, 3)) == sorted(shard_items(reordered, i, 3))


def test_the_split_is_the_same_in_every_process():
    """No hash randomisation: two interpreters with different hash seeds cut the same shards."""
    code = ("import json, sys; from harness.model.sharding import shard_items; "
            "items = [{'task': t, 'tags': sorted({'a', 'b', t})} for t in 'abcdefghij']; "
            "print(json.dumps([shard_items(items, i, 3) for i in (1, 2, 3)]))")
    outputs = {
        subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                       capture_output=True, text=True, check=True, timeout=60).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_an_item_that_names_itself_is_cut_on_its_key():
    @dataclasses.dataclass(frozen=True)
    class Work:
        path: str  # differs between machines
        name: str

        @property
        def key(self) -> str:
            return self.name

    here = [Work(f"/home/a/{n}", n) for n in "pqrstu"]
    there = [Work(f"/builds/b/{n}", n) for n in "pqrstu"]
    for i in (1, 2):
        assert [w.name for w in shard_items(here, i, 2)] == [w.name for w in shard_items(there, i, 2)]


def shards_of(make_run, count: int, **kwargs):
    return [make_run(shard_items(ITEMS, i, count), shard=f"{i}/{count}", timing_seed=100 + i,
                     host=f"runner-{i}", **kwargs) for i in range(1, count + 1)]


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_merging_the_shards_equals_the_unsharded_run(make_run, count):
    whole = make_run(ITEMS, timing_seed=1)
    shards = shards_of(make_run, count)
    merged = merge(list(reversed(shards)))
    assert comparable(merged) == comparable(whole)
    assert merged.run["shard"] is None
    assert merged.run["argv"] == whole.run["argv"]
    assert [m["shard"] for m in merged.run["merged_from"]] == [f"{i}/{count}" for i in range(1, count + 1)]
    assert merged.run["host"] == ", ".join(sorted(f"runner-{i}" for i in range(1, count + 1)))
    assert len(merged.latencies) == len(whole.latencies)
    assert comparable(whole) != comparable(make_run(ITEMS[1:], timing_seed=1))  # the comparison can fail


def test_comparison_ignores_evidence_text_but_not_verdicts(make_run):
    whole = make_run(ITEMS)
    first = whole.tasks[0]
    reworded = dataclasses.replace(first, checks=tuple(
        dataclasses.replace(c, evidence=dataclasses.replace(c.evidence, summary="pid 99 gone")) for c in first.checks))
    assert comparable(dataclasses.replace(whole, tasks=(reworded, *whole.tasks[1:]))) == comparable(whole)
    flipped = dataclasses.replace(first, checks=(dataclasses.replace(first.checks[0], outcome=Outcome.FAIL),
                                                 *first.checks[1:]))
    assert comparable(dataclasses.replace(whole, tasks=(flipped, *whole.tasks[1:]))) != comparable(whole)


def test_merge_recomputes_the_mutation_score_of_the_whole_run(make_run):
    from harness.model.mutation import mutation_summary

    failpoints = {"skip-tree-kill": ["C3"], "drop-partial-text": ["C5"]}

    def scored(run):
        return dataclasses.replace(run, run={**run.run, "mutation": mutation_summary(run.tasks, failpoints)})

    whole = scored(make_run(ITEMS))
    shards = [scored(s) for s in shards_of(make_run, 4)]
    assert {json.dumps(s.run["mutation"], sort_keys=True) for s in shards} != {json.dumps(whole.run["mutation"],
                                                                                     sort_keys=True)}
    merged = merge(shards)
    assert merged.run["mutation"] == whole.run["mutation"]
    assert comparable(merged) == comparable(whole)


def test_merge_keeps_each_shards_timings(make_run):
    shards = shards_of(make_run, 2)
    merged = merge(shards)
    assert sorted(s.value_ns for s in merged.latencies) == sorted(s.value_ns for r in shards for s in r.latencies)


def test_merge_refuses_what_is_not_one_complete_run(make_run):
    one, two, three = shards_of(make_run, 3)
    with pytest.raises(ShardError, match=r"missing shard\(s\) 2/3"):
        merge([one, three])
    with pytest.raises(ShardError, match="shard 1/3 given twice") as caught:
        merge([one, two, three, one])
    assert caught.value.index == 3
    other = dataclasses.replace(two, run={**two.run, "agent_version": "0.2.0"})
    with pytest.raises(ShardError, match="agent_version='0.2.0'.*not shards of one run"):
        merge([one, other, three])
    with pytest.raises(ShardError, match="different splits"):
        merge([one, *shards_of(make_run, 2)])
    overlapping = dataclasses.replace(two, tasks=two.tasks + one.tasks[:1])
    with pytest.raises(ShardError, match=r"is in shards 1/3 and 2/3"):
        merge([one, overlapping, three])
    with pytest.raises(ShardError, match="not a shard result"):
        merge([make_run(ITEMS)])


def test_merge_main_writes_the_merged_file(tmp_path, make_run, capsys):
    paths = []
    for shard in shards_of(make_run, 3):
        path = tmp_path / f"shard-{shard.run['shard'].replace('/', '-')}.json"
        path.write_text(results_text(shard))
        paths.append(str(path))
    out = tmp_path / "merged" / "results.json"
    assert merge_main([*paths, "-o", str(out)]) == 0
    assert str(out) in capsys.readouterr().err
    whole = tmp_path / "whole.json"
    whole.write_text(results_text(make_run(ITEMS)))  # written, so redacted like the merge
    assert comparable(load_results(out)) == comparable(load_results(whole))
    assert json.loads(out.read_text())["run"]["shard"] is None


def test_merge_main_names_the_file_at_fault(tmp_path, make_run, capsys):
    one, two, _ = shards_of(make_run, 3)
    paths = []
    for name, shard in (("a.json", one), ("b.json", one)):
        (tmp_path / name).write_text(results_text(shard))
        paths.append(str(tmp_path / name))
    assert merge_main([*paths, "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert f"{paths[1]}: shard 1/3 given twice" in err
    assert not (tmp_path / "out.json").exists()
