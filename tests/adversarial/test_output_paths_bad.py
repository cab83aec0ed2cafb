"""A bad output path is refused before any work, naming the path, with exit 2 and nothing
left behind: ``run --report-dir`` naming a file, ``report --html``/``--md``/``--junit``,
``report merge -o`` and ``gate --md`` naming a folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports"))

from report_builders import build_run  # noqa: E402

from harness import cli  # noqa: E402
from harness.model.sharding import shard_items  # noqa: E402
from harness.report.writer import results_text  # noqa: E402
from harness.run import session  # noqa: E402


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def results(tmp_path) -> Path:
    path = tmp_path / "results.json"
    path.write_text(results_text(build_run()))
    return path


def test_run_into_a_report_dir_that_is_a_file_refuses_before_any_task_run(tmp_path, monkeypatch, capsys):
    taken = tmp_path / "reports"
    taken.write_text("not a folder\n")
    started: list[object] = []
    monkeypatch.setattr(session, "run_all", lambda *a, **k: started.append(a))
    code = cli.main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(taken)])
    err = capsys.readouterr().err
    assert code == 2 and f"--report-dir {taken}: is a file, not a folder" in err
    assert started == [] and taken.read_text() == "not a folder\n" and listing(tmp_path) == ["reports"]


def test_run_whose_results_file_would_be_a_folder_refuses_before_any_task_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "results.json").mkdir()
    started: list[object] = []
    monkeypatch.setattr(session, "run_all", lambda *a, **k: started.append(a))
    code = cli.main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(tmp_path)])
    assert code == 2 and f"{tmp_path / 'results.json'}: is a folder; name a file" in capsys.readouterr().err
    assert started == [] and listing(tmp_path) == ["results.json"]


def test_run_keeping_run_folders_where_a_file_is_refuses_before_any_task_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "runs").write_text("a file\n")
    started: list[object] = []
    monkeypatch.setattr(session, "run_all", lambda *a, **k: started.append(a))
    monkeypatch.setattr(session, "quick_floor_async", lambda: started.append("the stopwatch's floor measured"))
    code = cli.main(["run", "--keep", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(tmp_path)])
    assert code == 2 and f"--keep {(tmp_path / 'runs').resolve()}: is a file, not a folder" in capsys.readouterr().err
    assert started == [] and listing(tmp_path) == ["runs"]  # refused before seconds of measuring the machine


@pytest.mark.parametrize("option", ["--html", "--md", "--junit"])
def test_report_into_a_folder_refuses_and_leaves_nothing(tmp_path, results, option, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    before = listing(tmp_path)
    good = tmp_path / "fine.md"
    code = cli.main(["report", str(results), "--md" if option != "--md" else "--junit", str(good),
                     option, str(folder)])
    assert code == 2 and f"{option} {folder}: is a folder; name a file" in capsys.readouterr().err
    assert listing(tmp_path) == before  # not even the good output: all are checked first


def test_report_into_a_path_under_a_file_refuses(tmp_path, results, capsys):
    code = cli.main(["report", str(results), "--html", str(results / "report.html")])
    assert code == 2 and f"--html {results}: is a file, not a folder" in capsys.readouterr().err


def test_merge_into_a_folder_refuses_before_reading_and_leaves_nothing(tmp_path, capsys):
    items = [(t, "http", 0) for t in ("interrupt-cancel", "interrupt-timeout")]
    paths = []
    for i in (1, 2):
        path = tmp_path / f"shard-{i}.json"
        path.write_text(results_text(build_run(shard_items(items, i, 2), shard=f"{i}/2")))
        paths.append(str(path))
    folder = tmp_path / "merged"
    folder.mkdir()
    before = listing(tmp_path)
    assert cli.main(["report", "merge", *paths, "-o", str(folder)]) == 2
    assert f"-o {folder}: is a folder; name a file" in capsys.readouterr().err
    assert listing(tmp_path) == before


def test_gate_markdown_into_a_folder_refuses_before_comparing(tmp_path, results, capsys):
    folder = tmp_path / "summary"
    folder.mkdir()
    before = listing(tmp_path)
    code = cli.main(["gate", "--baseline", str(results), "--current", str(results), "--md", str(folder)])
    captured = capsys.readouterr()
    assert code == 2 and f"--md {folder}: is a folder; name a file" in captured.err
    assert captured.out == "" and listing(tmp_path) == before
