"""Small pieces of markup every section uses, and the anchors that link the sections together.

Every piece of text from the results goes through ``esc``; the only links are to anchors in
the page, which ``Page`` knows for every task run and every moment on its timeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from harness.model import TaskResult
from harness.report.aggregate import Scoreboard, check_title, run_name
from harness.report.svg import timeline_ids


def esc(value: Any) -> str:
    return escape(str(value))


def level_class(text: str) -> str:
    return "lvl-" + "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-").replace("--", "-")


def status_class(status: str) -> str:
    return status.replace(" ", "-")


def badge(text: str, css: str) -> str:
    return f'<span class="badge {esc(css)}">{esc(text)}</span>'


def data_table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = (), *,
               css: str = "", titles: Sequence[str] = (), widths: Sequence[str] = ()) -> str:
    """A table whose cells are markup already escaped; the header is text. ``widths`` (CSS
    lengths, "" for the rest) make it a fixed-layout table that never outgrows the page."""
    numeric = set(numeric)
    head = "".join(
        f'<th{" class=num" if i in numeric else ""}{_title_attr(titles[i] if i < len(titles) else "")}>{esc(h)}</th>'
        for i, h in enumerate(header))
    body = "\n".join(
        "<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    if widths:
        css = f"{css} fixed".strip()
    cols = ("<colgroup>" + "".join(f'<col style="width: {w}">' if w else "<col>" for w in widths) + "</colgroup>"
            if widths else "")
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}>{cols}\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def kv_table(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table of a label (text) and a value (markup already escaped)."""
    return '<table class="kv">' + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _title_attr(text: str) -> str:
    return f' title="{esc(text)}"' if text else ""


def check_label(check: str, name: str = "") -> str:
    title = check_title(check, name)
    return f"{check} {title}".strip()


class Page:
    """What every section needs to link into the rest of the page."""

    def __init__(self, boards: Sequence[Scoreboard]):
        self.boards = boards
        self.ids: dict[int, dict[str, str]] = {}  # id(task) -> ref -> element id on its timeline
        self.anchors: dict[int, str] = {}  # id(task) -> the run's anchor
        for b in boards:
            for i, t in enumerate(b.tasks):
                anchor = b.anchors[i]
                self.anchors[id(t)] = anchor
                self.ids[id(t)] = timeline_ids(t.timeline, f"{anchor}-tl")

    def anchor(self, task: TaskResult) -> str:
        return self.anchors[id(task)]

    def run_link(self, task: TaskResult, text: str | None = None) -> str:
        return f'<a href="#{self.anchor(task)}">{esc(text or run_name(task))}</a>'

    def ref_link(self, task: TaskResult, ref: str | None, text: str) -> str:
        target = self.ids.get(id(task), {}).get(ref or "")
        return f'<a href="#{target}" title="its moment on the timeline">{esc(text)}</a>' if target else esc(text)
