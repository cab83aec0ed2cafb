"""``write_reports`` and ``stopbench report``: what lands on disk, what is printed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from harness.cli.report import report_main
from harness.report import load_results, write_reports
from harness.report.load import parse_results
from harness.report.writer import results_text


def test_write_reports_writes_every_format_from_the_results_file(tmp_path, run, canary):
    paths = write_reports(run, tmp_path / "reports")
    assert [p.name for p in paths] == ["results.json", "junit.xml", "summary.md", "report.html"]
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == sorted(p.name for p in paths)  # no temp left
    for p in paths:
        assert canary not in p.read_text()
    assert load_results(paths[0]).tasks[0] == parse_results(json.loads(results_text(run))).tasks[0]  # redacted
    ET.parse(paths[1])
    assert paths[2].read_text().startswith("## stopbench report: reference: not conformant")
    assert paths[3].read_text().startswith("<!DOCTYPE html>")


def test_report_renders_several_results_and_prints_where(tmp_path, run, rival, capsys):
    files = []
    for name, r in (("a.json", run), ("b.json", rival)):
        (tmp_path / name).write_text(results_text(r))
        files.append(str(tmp_path / name))
    html, md, junit = tmp_path / "out" / "board.html", tmp_path / "board.md", tmp_path / "board.xml"
    assert report_main([*files, "--html", str(html), "--md", str(md), "--junit", str(junit)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("reports written:") and all(str(p) in err for p in (html, md, junit))
    assert "Leaderboard" in html.read_text() and "leaderboard" in md.read_text()
    plain = [t for r in (run, rival) for t in r.tasks if t.mutant is None]
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert len(suites) == len(plain) + 1  # and one suite for the failpoints of "reference"
    assert suites[-1].get("name") == "reference / failpoints"


def test_report_without_outputs_prints_the_summary(tmp_path, run, capsys):
    (tmp_path / "r.json").write_text(results_text(run))
    assert report_main([str(tmp_path / "r.json")]) == 0
    assert capsys.readouterr().out.startswith("## stopbench report: reference: not conformant")


def test_report_refuses_a_bad_file_by_name(tmp_path, run, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(results_text(run))
    data = json.loads(results_text(run))
    del data["latencies"][5]["agent"]
    bad.write_text(json.dumps(data))
    assert report_main([str(good), str(bad), "--html", str(tmp_path / "x.html")]) == 2
    assert f"{bad}: latencies[5]: missing field 'agent'" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_report_merge_is_reached_through_report(tmp_path, make_run, capsys):
    items = [("interrupt-cancel", "http", r) for r in range(4)]
    paths = []
    for i in (1, 2):
        path = tmp_path / f"s{i}.json"
        path.write_text(results_text(make_run([x for k, x in enumerate(items) if k % 2 == i - 1], shard=f"{i}/2")))
        paths.append(str(path))
    assert report_main(["merge", *paths, "-o", str(tmp_path / "m.json")]) == 0
    assert len(load_results(tmp_path / "m.json").tasks) == len(make_run(items).tasks)
