"""Writing the report files of one run: the results JSON and its three renderings."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.model import RunResult
from harness.model.redaction import redact
from harness.report.html import render_html
from harness.report.junit import render_junit
from harness.report.load import parse_results
from harness.report.markdown import render_markdown


def write_text(path: Path, text: str) -> Path:
    """Write through a temporary file and rename, so a reader never sees half a report.

    The temporary name is this writer's own (process and a random part): two writers of one
    file never write into each other's half-written text. It is removed if the write fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with tmp.open("x", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def output_file_problem(path: Path) -> str | None:
    """Why a report file cannot be written at ``path`` (it is a folder, a folder on its way
    is a file, or a folder cannot be written in), or None. Asked before any work is done,
    so a bad path costs nothing and leaves nothing behind."""
    if path.is_dir():
        return f"{path}: is a folder; name a file"
    return folder_problem(path.parent)


def folder_problem(folder: Path) -> str | None:
    """Why report files cannot go into ``folder`` (made if missing), or None."""
    for existing in (folder, *folder.parents):
        if existing.exists():
            if not existing.is_dir():
                return f"{folder}: {'is' if existing == folder else f'{existing} is'} a file, not a folder"
            if not os.access(existing, os.W_OK | os.X_OK):
                return f"{folder}: cannot write in {existing}"
            return None
    return None


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
        write_text(report_dir / RUN_FILES[0], text),
        *(write_text(report_dir / name, render([written])) for name, render in zip(RUN_FILES[1:], RUN_RENDERERS,
                                                                                   strict=True)),
    ]


def write_leaderboard(runs: Sequence[RunResult], report_dir: Path) -> list[Path]:
    """leaderboard.md and leaderboard.html over several agents' results (already written)."""
    written = [parse_results(json.loads(results_text(run)), report_dir / "leaderboard") for run in runs]
    return [write_text(report_dir / name, render(written))
            for name, render in zip(LEADERBOARD_FILES, (render_markdown, render_html), strict=True)]


# The files a run writes into its report folder, and those of a leaderboard of several.
RUN_FILES = ("results.json", "junit.xml", "summary.md", "report.html")
RUN_RENDERERS = (render_junit, render_markdown, render_html)
LEADERBOARD_FILES = ("leaderboard.md", "leaderboard.html")


def report_dir_problem(report_dir: Path, names: Sequence[str] = RUN_FILES) -> str | None:
    """Why a run's report files cannot be written into ``report_dir``, or None."""
    return folder_problem(report_dir) or next(
        (problem for name in names if (problem := output_file_problem(report_dir / name))), None)


def format_written(paths: Sequence[Path]) -> str:
    """The closing lines of a run or a report command: where each file went."""
    return "reports written:\n" + "\n".join(f"  {p}" for p in paths)
