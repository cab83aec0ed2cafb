"""The checked-in JSON Schema describes what the harness writes, and the docs describe the schema."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import jsonschema
import pytest

from harness.contract import LATENCY_IDS, Verdict
from harness.model import RESULTS_FORMAT, RESULTS_VERSION, DecidedBy, Outcome, RunResult, RunStatus, Tier
from harness.model.fit import FitLog
from harness.model.sharding import shard_items
from harness.report.shard import merge
from harness.report.writer import ResultsCheckpoint, results_text

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "harness/report/results.schema.json").read_text())
DOC = (ROOT / "docs/results.md").read_text()


@pytest.fixture(scope="module")
def validator():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


def test_written_results_validate(validator, run, rival):
    for r in (run, rival):
        validator.validate(json.loads(results_text(r)))


def test_a_profile_fit_record_validates_and_the_schema_holds_it_to_its_shape(validator, run):
    """The record the drivers keep (harness.model.fit), every kind of entry, is what the schema describes."""
    fit = FitLog()
    fit.matched("the prompt", "(?m)^> $", "when the agent is ready for input", "on the rendered screen")
    fit.undecided("the turn's end", "Done", "when a turn ends", "the step stopped waiting before it showed")
    fit.missed("the queued acknowledgement", "queued:", "when input is typed while a turn runs", "never matched",
               screen=["  > later"])
    fit.missed("the signalled process holds the model connection", "SIGINT to the agent's process group",
               "at a Stop while the model streams", "did not get it", signalled_group=10,
               holders=[{"pid": 11, "group": 11, "command": "agent --inner"}])
    first = dataclasses.replace(run.tasks[0], evidence={**run.tasks[0].evidence, "profile_fit": fit.to_json()})
    results = json.loads(results_text(RunResult(run.run, (first, *run.tasks[1:]), run.latencies)))
    validator.validate(results)
    results["tasks"][0]["evidence"]["profile_fit"]["fits"] = "maybe"
    with pytest.raises(jsonschema.ValidationError, match="'maybe' is not one of"):
        validator.validate(results)


def test_merged_results_validate(validator, make_run):
    items = [(t, a, r) for t in ("interrupt-cancel", "interrupt-timeout") for a in ("inproc", "http") for r in range(2)]
    shards = [make_run(shard_items(items, i, 2), repeat=2, shard=f"{i}/2") for i in (1, 2)]
    validator.validate(json.loads(results_text(merge(shards))))


@pytest.mark.parametrize("path,value", [
    (("tasks", 0, "checks", 0, "outcome"), "maybe"),
    (("tasks", 0, "checks", 0, "tier"), "optional"),
    (("latencies", 0, "value_ns"), 1.5),
    (("latencies", 0, "latency"), "L9"),
    (("run", "shard"), "two of three"),
    (("version",), 3),
    (("tasks", 0, "status"), "finished"),
    (("tasks", 0, "timeline", 0, "at_ms"), "12 ms"),
    (("verdict",), "conformant-ish"),
])
def test_schema_rejects_what_readers_refuse(validator, run, path, value):
    data = json.loads(results_text(run))
    target = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    assert list(validator.iter_errors(data))


def test_schema_enumerations_follow_the_model():
    defs = SCHEMA["$defs"]
    assert SCHEMA["properties"]["format"]["const"] == RESULTS_FORMAT
    assert SCHEMA["properties"]["version"]["const"] == RESULTS_VERSION
    assert defs["check"]["properties"]["outcome"]["enum"] == [o.value for o in Outcome]
    assert defs["check"]["properties"]["tier"]["enum"] == [t.value for t in Tier]
    assert defs["latency"]["properties"]["latency"]["enum"] == list(LATENCY_IDS)
    assert defs["task"]["properties"]["status"]["enum"] == [s.value for s in RunStatus]
    assert defs["check"]["properties"]["decided_by"]["enum"] == [d.value for d in DecidedBy] + [None]
    assert SCHEMA["properties"]["verdict"]["enum"] == [v.value for v in Verdict]
    assert set(defs["task"]["required"]) == set(json.loads(results_text_of_one_task()))


def results_text_of_one_task() -> str:
    from harness.model import TaskResult

    return json.dumps(TaskResult("t", "a", "http", 0, ()).to_json())


def test_every_schema_field_is_documented():
    documented = set(re.findall(r"`([a-z_]+)`", DOC))
    fields = set()
    for part in (SCHEMA, *SCHEMA["$defs"].values()):
        fields |= set(part.get("properties", {}))
    fields |= set(SCHEMA["$defs"]["check"]["properties"]["evidence"]["properties"])
    assert fields - documented == set()


def test_the_checkpoint_after_each_task_run_is_the_results_text(run, canary):
    """The file rewritten after every task run, growing, is exactly the final writer's text:
    parts serialized once are reused, the header (verdict, incomplete) is always new."""
    checkpoint = ResultsCheckpoint()
    for n in range(len(run.tasks) + 1):
        grown = RunResult({**run.run, "incomplete": f"in progress: {n} done", "api_key": canary},
                          run.tasks[:n], run.latencies[: n * 2])
        assert checkpoint.text(grown) == results_text(grown)
    assert canary not in checkpoint.text(grown)
