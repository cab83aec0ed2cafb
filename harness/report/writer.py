"""Writing the report files of one run: the results JSON and its three renderings."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from harness.model import RunResult
from harness.report.html import render_html
from harness.report.junit import render_junit
from harness.report.load import parse_results
from harness.report.markdown import render_markdown
from harness.secrets import redact


def write_text(path: Path, text: str) -> Path:
    """Write through a temporary file and rename, so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def results_text(run: RunResult) -> str:
    return json.dumps(redact(run.to_json()), indent=2, ensure_ascii=False) + "\n"


def write_reports(run: RunResult, report_dir: Path) -> list[Path]:
    """results.json, junit.xml, summary.md and report.html in ``report_dir``; their paths.

    The renderings are made from the redacted JSON as written, so they show exactly what
    the results file holds.
    """
    report_dir = Path(report_dir)
    text = results_text(run)
    written = parse_results(json.loads(text), report_dir / "results.json")
    return [
        write_text(report_dir / "results.json", text),
        write_text(report_dir / "junit.xml", render_junit([written])),
        write_text(report_dir / "summary.md", render_markdown([written])),
        write_text(report_dir / "report.html", render_html([written])),
    ]


def write_leaderboard(runs: Sequence[RunResult], report_dir: Path) -> list[Path]:
    """leaderboard.html and leaderboard.md over several agents' results (already written)."""
    written = [parse_results(json.loads(results_text(run)), report_dir / "leaderboard") for run in runs]
    return [
        write_text(report_dir / "leaderboard.md", render_markdown(written)),
        write_text(report_dir / "leaderboard.html", render_html(written)),
    ]


def format_written(paths: Sequence[Path]) -> str:
    """The closing lines of a run or a report command: where each file went."""
    return "reports written:\n" + "\n".join(f"  {p}" for p in paths)
