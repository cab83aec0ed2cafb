"""Writing the report files of one run: the results JSON and its three renderings."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
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


class ResultsCheckpoint:
    """``results_text`` of a run that grows by one task run at a time, each task run and
    latency sample serialized once: rewriting results.json after every task run (so a
    killed harness leaves a readable file) then costs what is new, not the whole run again
    — which grew with the square of the run's length and held the event loop for seconds.
    The text is exactly ``results_text``'s (a test compares them)."""

    def __init__(self) -> None:
        self._done: dict[int, tuple[object, str]] = {}  # id → (the value, kept alive; its text)

    def text(self, run: RunResult) -> str:
        tasks = [self._item(t, t.to_json) for t in run.tasks]
        samples = [self._item(s, s.to_json) for s in run.latencies]
        fields = [f"  {json.dumps(k)}: {_nested(redact(v), 1)}" for k, v in run.head_json().items()]
        fields += [f'  "tasks": {_array(tasks)}', f'  "latencies": {_array(samples)}']
        if run.concurrent:
            apart = [self._item(s, s.to_json) for s in run.concurrent]
            fields.append(f'  "concurrent_latencies": {_array(apart)}')
        return "{\n" + ",\n".join(fields) + "\n}\n"

    def _item(self, value: object, to_json: Callable[[], object]) -> str:
        kept = self._done.get(id(value))
        if kept is None or kept[0] is not value:
            kept = (value, _nested(redact(to_json()), 2))
            self._done[id(value)] = kept
        return kept[1]


def _nested(value: object, depth: int) -> str:
    """``value`` as ``json.dumps(..., indent=2)`` writes it ``depth`` levels down (JSON text
    holds no raw newline but those of its layout, so indenting after each is exact)."""
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


def _array(items: list[str]) -> str:
    return "[\n" + ",\n".join("    " + i for i in items) + "\n  ]" if items else "[]"


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
