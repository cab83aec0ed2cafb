"""Unusable results files are refused with the file, the item and the problem named."""

from __future__ import annotations

import json

import pytest

from harness.report import ResultsError, load_results
from harness.report.writer import results_text


def damaged(tmp_path, run, damage):
    data = json.loads(results_text(run))
    damage(data)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("damage,item,problem", [
    (lambda d: d["tasks"][1]["checks"][2].pop("outcome"), "tasks[1].checks[2]", "missing field 'outcome'"),
    (lambda d: d["tasks"][4].update(checks=[{"check": "C1"}]), "tasks[4].checks[0]", "missing field"),
    (lambda d: d["tasks"][0]["checks"][0].update(tier="optional"), "tasks[0].checks[0]", "'optional'"),
    (lambda d: d["tasks"].__setitem__(2, "oops"), "tasks[2]", "expected a JSON object"),
    (lambda d: d["latencies"][3].update(value_ns="12ms"), "latencies[3]", "value_ns must be an integer"),
    (lambda d: d["latencies"][0].pop("task"), "latencies[0]", "missing field 'task'"),
    (lambda d: d.update(tasks={}), None, "'tasks' must be a JSON array"),
    (lambda d: d.update(format="junit"), None, "not a stopbench results file"),
])
def test_damage_is_located(tmp_path, run, damage, item, problem):
    path = damaged(tmp_path, run, damage)
    with pytest.raises(ResultsError) as caught:
        load_results(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert problem in message
    if item:
        assert f": {item}: " in message


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"format": "stopbench-results",\n  "version": 1,, }')
    with pytest.raises(ResultsError, match=r"line 2 column 16: not JSON"):
        load_results(path)


def test_round_trip_keeps_everything(tmp_path, make_run):
    clean = make_run(broken=False)
    path = tmp_path / "r.json"
    path.write_text(results_text(clean))
    assert load_results(path) == clean


def test_secrets_are_redacted_on_write_and_on_read(tmp_path, run, canary):
    written = results_text(run)
    assert canary not in written
    assert "sk-sto[redacted]" in written and '"Authorization": "[redacted]"' in written
    leaked = tmp_path / "leaky.json"
    leaked.write_text(json.dumps(run.to_json()))  # as another tool might have written it
    assert canary in leaked.read_text()
    assert canary not in json.dumps(load_results(leaked).to_json())
