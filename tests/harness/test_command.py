"""The stopbench command: exit codes (0 conformant, 1 not, 2 usage), listing, results files,
and a mutant run end to end on the quickest task."""

import json

import pytest

from harness.cli import main
from harness.model import RunResult
from harness.profiles import BUILTIN_DIR
from harness.tasks import TASKS_DIR


def test_list_shows_tasks_checks_and_agents(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "interrupt-cancel" in out and "C13  no_secret_leaks" in out and "reference" in out


@pytest.mark.parametrize("argv, message", [
    (["run", "--task", "no-such-task"], "unknown task 'no-such-task'"),
    (["run", "--agent", "no-such-agent"], "no built-in profile"),
    (["run", "--agent", "/nowhere/agent.toml"], "file not found"),
    (["run", "--repeat", "0"], "--repeat must be at least 1"),
    (["run", "--failpoint", "seq-gap"], "--failpoint needs --mutants"),
    (["run", "--adapter", "carrier-pigeon"], "has no adapter 'carrier-pigeon'"),
    (["run", "--shard", "3/2"], "need 1 <= i <= n"),
    (["run", "--mutants", "--failpoint", "no-such-failpoint"], "unknown failpoint"),
])
def test_usage_errors_exit_2_naming_the_problem(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow(reason="a stopbench run of the reference agent")
def test_a_conformant_run_exits_0_and_writes_results(tmp_path, capsys):
    code = main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    run = RunResult.from_json(json.loads((tmp_path / "results.json").read_text()))
    assert [t.task for t in run.tasks] == ["exit-codes"] and run.conformant
    assert run.run["agent"] == "reference" and run.run["argv"][:2] == ["stopbench", "run"]
    assert "verdict: conformant" in out and str(tmp_path / "results.json") in out


@pytest.mark.slow(reason="a stopbench run of an agent")
def test_a_broken_agent_exits_1_with_the_failed_check(tmp_path, capsys):
    profile = tmp_path / "leaky.toml"
    text = (BUILTIN_DIR / "reference.toml").read_text().replace('name = "reference"', 'name = "leaky"')
    profile.write_text(text.replace("[env]\n", '[env]\nREFAGENT_FAILPOINTS = "leak-api-key"\n'))
    code = main(["run", "--agent", str(profile), "--task", "exit-codes", "--adapter", "http",
                 "--report-dir", str(tmp_path / "reports")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL" in out and "verdict: not conformant" in out
    results = (tmp_path / "reports" / "results.json").read_text()
    assert "sk-stopbench-" not in results  # the canary itself never reaches a report


@pytest.mark.slow(reason="a stopbench run with mutants")
def test_mutants_run_reports_the_score_and_marks_mutant_results(tmp_path, capsys):
    code = main(["run", "--mutants", "--failpoint", "leak-api-key", "--task", "exit-codes", "--adapter", "http",
                 "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "mutation score: 1/1" in out and "leak-api-key" in out
    run = RunResult.from_json(json.loads((tmp_path / "results.json").read_text()))
    assert {t.mutant for t in run.tasks} == {None, "leak-api-key"}
    assert run.run["mutation"]["mutants"]["leak-api-key"]["failed"] == ["C13"]
    assert run.conformant  # the clean agent, in the same run


@pytest.mark.slow(reason="a stopbench run of the reference agent")
def test_a_shard_runs_its_share_of_the_items(tmp_path, capsys):
    code = main(["run", "--task", "exit-codes", "--shard", "2/2", "--report-dir", str(tmp_path)])
    assert code == 0, capsys.readouterr().out
    run = RunResult.from_json(json.loads(next(tmp_path.glob("*.json")).read_text()))
    assert len(run.tasks) == 1 and run.run["shard"] == "2/2"


def test_a_broken_task_folder_is_a_usage_error_naming_the_file(tmp_path, capsys):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "task.toml").write_text('name = "bad"\ndrivers = ["subprocess"]\n')
    assert main(["run", "--tasks-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bad/task.toml: scenario" in err or "bad/task.toml: checks" in err


@pytest.mark.slow(reason="a stopbench run interrupted mid-way")
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_mid_run_keeps_every_finished_task_run_and_cleans_up(tmp_path, signame):
    """The run is cut short inside its second task run: the first is in the results, the run
    is marked incomplete with the reason, the reports are rendered, nothing is left, exit 2."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    import psutil

    from harness.containment.procs import ProcRef, kill_all, leftovers, reset_signals

    # The second task holds its window (a minute) until the signal: it is mid-run however slowly
    # this machine gets there, while a task that ends by itself could be over by then.
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR / "exit-codes", tasks / "exit-codes")
    (tasks / "holds-a-window").mkdir()
    (tasks / "holds-a-window" / "scenario.toml").write_text(
        'name = "holds-a-window"\n[[responses]]\n[[responses.frames]]\n'
        'shell = { window = { id = "w1", depth = 1, fanout = 1, ignore_term = true, escape = true, hold_s = 60 } }\n')
    (tasks / "holds-a-window" / "task.toml").write_text(
        'name = "holds-a-window"\ndrivers = ["subprocess"]\n[checks]\nmandatory = ["C13"]\n'
        '[[steps]]\ndo = "send"\ntext = "Run the long job."\n'
        '[[steps]]\ndo = "wait"\nfor = "window"\nwindow = "w1"\n[[steps]]\ndo = "settle"\n')
    report_dir = tmp_path / "report"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--tasks-dir", str(tasks), "--adapter", "http",
                             "--report-dir", str(report_dir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=reset_signals)   # a suite run in the background inherits SIGINT ignored
    family: list[ProcRef] = []
    try:
        harness = psutil.Process(proc.pid)
        deadline = time.monotonic() + 60  # failsafe; the loop ends when the tool window's tree is up
        while time.monotonic() < deadline and _windows_under(harness) < 4:
            time.sleep(0.01)  # root, child, TERM-ignorer, setsid escapee
        family = [ProcRef.of(p.pid) for p in harness.children(recursive=True)]
        assert family, "the task never started its agent"
        proc.send_signal(getattr(signal, signame))
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 2 and b"incomplete" in out, out.decode()
        assert leftovers(family) == []
        run = RunResult.from_json(json.loads((report_dir / "results.json").read_text()))
        assert signame in run.run["incomplete"]
        assert [t.task for t in run.tasks] == ["exit-codes"]
        assert (report_dir / "report.html").is_file()
    finally:
        proc.kill()
        kill_all(family)


@pytest.mark.slow(reason="two stopbench runs, the first interrupted")
def test_resume_continues_an_incomplete_run_without_redoing_finished_work(tmp_path, capsys):
    assert main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(tmp_path / "a")]) == 0
    first = RunResult.from_json(json.loads((tmp_path / "a" / "results.json").read_text()))
    code = main(["run", "--task", "exit-codes", "--adapter", "http", "--repeat", "2", "--report-dir",
                 str(tmp_path / "b"), "--resume", str(tmp_path / "a" / "results.json")])
    assert code == 0, capsys.readouterr().out
    second = RunResult.from_json(json.loads((tmp_path / "b" / "results.json").read_text()))
    assert [(t.repeat, t.started) for t in second.tasks][0] == (1, first.tasks[0].started)
    assert [t.repeat for t in second.tasks] == [1, 2]


def test_list_into_a_closed_pipe_is_quiet():
    import subprocess
    import sys

    out = subprocess.run(f"{sys.executable} -m harness list | head -1", shell=True, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "tasks:" and "Traceback" not in out.stderr and "Error" not in out.stderr


def _windows_under(process) -> int:
    """How many tool-window processes run under ``process`` (vanishing ones ignored)."""
    import psutil

    count = 0
    for child in process.children(recursive=True):
        try:
            count += "fake_server.window" in " ".join(child.cmdline())
        except psutil.Error:
            continue
    return count
