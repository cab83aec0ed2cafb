"""The published leaderboard: ``stopbench report publish`` keeps what the renderers read,
later runs replace task runs one (task, driver, adapter) at a time, and regenerating the
Markdown from the tracked files changes nothing unless a results file did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from harness.cli.report import publish_main, report_main
from harness.model import CheckResult, Evidence, LatencySample, Outcome, RunResult, TaskResult, TimelineMark
from harness.model.redaction import redact
from harness.report import load_results, render_markdown
from harness.report.publish import PublishError, merged, published
from harness.report.writer import results_text

REPO = Path(__file__).resolve().parents[2]
VALIDATOR = jsonschema.Draft202012Validator(json.loads((REPO / "harness/report/results.schema.json").read_text()))
KEY = "sk-stopbench-0123456789abcdef0123456789abcdef"


def _task(task: str, driver: str, outcome: Outcome, summary: str = "") -> TaskResult:
    evidence = {"processes": [{"pid": 7, "role": "run", "stdout_tail": f"key {KEY}"}],
                "records": [{"index": 1, "kind": "request"}], "reproduce": f"stopbench run --task {task}",
                "profile_fit": {"fits": "no", "misfits": ["prompt"], "expectations": [
                    {"what": "prompt", "pattern": ">", "expected": "at start", "matched": False, "seen": "$",
                     "times": 0, "screen": ["$ " + "x" * 70] * 24}]}}
    check = CheckResult("C3", outcome, Evidence(summary or f"{task} {outcome.value}", ({"pid": 7, "kind": "window"},)))
    return TaskResult(task=task, agent="tiny", adapter="http", repeat=1, checks=(check,), driver=driver,
                      started="2026-01-01T00:00:00+00:00", duration_s=1.5, evidence=evidence,
                      timeline=(TimelineMark("harness", "stop", 10.0, "Stop"),))


def _run(version: str, tasks: tuple[TaskResult, ...], l2_ns: int = 5_000_000, started: str = "2026-01-01") -> RunResult:
    samples = tuple(LatencySample("L2", l2_ns + i, "tiny", "http", t.task, 1, {"driver": t.driver})
                    for i, t in enumerate(tasks))
    head = {"agent": "tiny", "agent_version": version, "profile": None, "stopbench_version": "0.1.0", "host": "h",
            "python": "3.11.9",
            "started": started, "ended": started, "adapters": ["http"], "tasks": sorted({t.task for t in tasks}),
            "repeat": 1, "shard": None, "argv": ["stopbench", "run"]}
    return RunResult(run=head, tasks=tasks, latencies=samples)


def _write(path: Path, run: RunResult) -> Path:
    path.write_text(results_text(run))
    return path


def test_a_published_file_renders_the_leaderboard_its_run_did_without_the_bulk_or_the_key():
    run = _run("1.0", (_task("interrupt-cancel", "subprocess", Outcome.FAIL),
                       _task("exit-codes", "subprocess", Outcome.PASS)))
    text = results_text(published(run))
    back = load_results_text(text)
    assert KEY not in text and "key [redacted]" not in text  # the process tails are not kept at all
    assert all(not t.timeline and not t.checks[0].evidence.items and "processes" not in t.evidence
               for t in back.tasks)
    assert back.tasks[0].evidence["reproduce"] == "stopbench run --task interrupt-cancel"
    fit = back.tasks[0].evidence["profile_fit"]
    assert fit["misfits"] == ["prompt"] and "screen" not in fit["expectations"][0]
    VALIDATOR.validate(json.loads(text))
    board = render_markdown([back, _run("2.0", (_task("exit-codes", "subprocess", Outcome.PASS),))])
    original = render_markdown([run, _run("2.0", (_task("exit-codes", "subprocess", Outcome.PASS),))])
    assert board.split("### Results files")[0] == original.split("### Results files")[0]


def test_a_published_file_keeps_no_key_a_kept_field_carried():
    run = _run("1.0", (_task("interrupt-cancel", "subprocess", Outcome.FAIL, summary=f"leaked {KEY}"),))
    text = results_text(published(run))
    assert KEY not in text and "leaked sk-sto[redacted]" in text


def test_a_later_run_replaces_only_the_task_runs_it_holds():
    base = _run("1.0", (_task("interrupt-cancel", "subprocess", Outcome.FAIL),
                        _task("interrupt-cancel", "terminal", Outcome.FAIL),
                        _task("exit-codes", "subprocess", Outcome.FAIL)), l2_ns=1_000)
    later = _run("1.0", (_task("interrupt-cancel", "subprocess", Outcome.PASS),), l2_ns=9_000, started="2026-01-02")
    out = merged(base, [later], ["later.json"])
    assert sorted((t.task, t.driver, t.checks[0].outcome.value) for t in out.tasks) == [
        ("exit-codes", "subprocess", "fail"), ("interrupt-cancel", "subprocess", "pass"),
        ("interrupt-cancel", "terminal", "fail")]
    assert sorted((s.task, s.detail["driver"], s.value_ns) for s in out.latencies) == [
        ("exit-codes", "subprocess", 1_002), ("interrupt-cancel", "subprocess", 9_000),
        ("interrupt-cancel", "terminal", 1_001)]
    assert out.run["published"]["replaced"][0]["task_runs"] == ["interrupt-cancel (subprocess, http)"]
    assert out.run["published"]["replaced"][0]["started"] == "2026-01-02"


def test_a_later_run_of_another_release_is_refused_by_name():
    base = _run("1.0", (_task("exit-codes", "subprocess", Outcome.FAIL),))
    with pytest.raises(PublishError, match=r"new\.json: agent_version '2\.0' is not the first file's \('1\.0'\)"):
        merged(base, [_run("2.0", (_task("exit-codes", "subprocess", Outcome.PASS),))], ["new.json"])


def load_results_text(text: str) -> RunResult:
    from harness.report.load import parse_results
    return parse_results(json.loads(text))


def _regenerate(files: list[Path], md: Path, seed: str) -> bytes:
    """The leaderboard's command (``make leaderboard``), in a process of its own: a hash seed
    of its own, so an order that came from a set's iteration would show."""
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run([sys.executable, "-m", "harness", "report", *map(str, sorted(files)), "--md", str(md)],
                   check=True, cwd=REPO, env=env, capture_output=True, timeout=60)
    return md.read_bytes()


def test_regenerating_the_leaderboard_with_no_new_results_changes_no_byte(tmp_path, capsys):
    folder, sources = tmp_path / "results", []
    for version, outcome in (("1.0", Outcome.FAIL), ("2.0", Outcome.PASS)):
        tasks = (_task("interrupt-cancel", "subprocess", outcome), _task("exit-codes", "subprocess", Outcome.PASS))
        sources.append(_write(tmp_path / f"run-{version}.json", _run(version, tasks)))
    note = ["--note", "measured before a fix"]
    assert publish_main([str(sources[0]), "--into", str(folder), *note]) == 0
    assert publish_main([str(sources[1]), "--into", str(folder)]) == 0
    assert "tiny@1.0.json" in capsys.readouterr().err
    files = sorted(folder.glob("*.json"))
    assert [f.name for f in files] == ["tiny@1.0.json", "tiny@2.0.json"]
    md = tmp_path / "README.md"
    first = _regenerate(files, md, "1")
    assert _regenerate(files, md, "2") == first
    assert b"- **tiny@1.0** (file 1): measured before a fix" in first
    # A new result does change it: the comparison above could fail.
    _write(tmp_path / "run-3.0.json", _run("3.0", (_task("exit-codes", "subprocess", Outcome.FAIL),)))
    assert publish_main([str(tmp_path / "run-3.0.json"), "--into", str(folder)]) == 0
    assert _regenerate(sorted(folder.glob("*.json")), md, "1") != first


def test_publish_refuses_a_later_file_of_another_release_and_writes_nothing(tmp_path, capsys):
    a = _write(tmp_path / "a.json", _run("1.0", (_task("exit-codes", "subprocess", Outcome.FAIL),)))
    b = _write(tmp_path / "b.json", _run("2.0", (_task("exit-codes", "subprocess", Outcome.FAIL),)))
    assert publish_main([str(a), str(b), "--into", str(tmp_path / "out")]) == 2
    assert f"{b}: agent_version '2.0'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_tracked_leaderboard_is_what_its_results_render_and_holds_no_secret(tmp_path):
    files = sorted((REPO / "leaderboard" / "results").glob("*.json"))
    assert files, "leaderboard/results holds no published results"
    for f in files:
        data = json.loads(f.read_text())
        assert redact(data) == data, f"{f.name}: holds a key-shaped string or a secret field"
        VALIDATOR.validate(data)
        assert f.name == f"{data['run']['agent']}@{data['run']['agent_version']}.json"
    out = tmp_path / "README.md"
    assert report_main([*map(str, files), "--md", str(out)]) == 0
    assert out.read_text() == (REPO / "leaderboard" / "README.md").read_text(), "run: make leaderboard"
    assert load_results(files[0]).tasks


def test_a_published_file_names_no_folder_of_the_machine_it_ran_on():
    """A tracked leaderboard says where in a run, not where on someone's disk: run folders
    become <run folder>/, and a merged file is named by its folder and name alone."""
    from harness.model import CheckResult, Evidence, Outcome, RunResult, TaskResult, Tier
    from harness.report.publish import merged, published

    kept = "/tmp/findings-x/runs/log-torn-tail_subprocess_-http-r1-try1/home/.x/s.jsonl:8: not JSON"
    made = "/tmp/stopbench-o1-2-ab_c/home/trajectory.json"
    check = CheckResult("C2", Outcome.FAIL, Evidence(f"the session log could not be read: {kept}"), Tier.MANDATORY)
    task = TaskResult("log-torn-tail", "a", "http", 1, (check,), driver="subprocess", reason=f"saved {made}",
                      evidence={"log_error": kept})
    run = RunResult({"agent": "a", "agent_version": "1"}, (task,), ())
    out = published(merged(run, [run], ["/tmp/recheck-a/results.json"]))
    text = json.dumps(out.to_json())
    assert "/tmp/" not in text
    assert "<run folder>/home/.x/s.jsonl:8" in text and "recheck-a/results.json" in text
