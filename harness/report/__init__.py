"""Reports, CI gate and shards: everything that reads the results JSON.

Renderers (JUnit XML, Markdown, HTML), the gate and the diff read a ``RunResult`` and nothing else,
so any results file — from this machine, a CI artifact or a merge of shards — renders
and gates the same way.
"""

from harness.report.gate import compare
from harness.report.gate_text import format_gate, format_gate_markdown
from harness.report.html import render_html
from harness.report.junit import render_junit
from harness.report.load import ResultsError, load_results, parse_results
from harness.report.markdown import render_markdown
from harness.report.shard import comparable, merge
from harness.report.writer import format_written, write_reports

__all__ = [
    "ResultsError",
    "comparable",
    "compare",
    "format_gate",
    "format_gate_markdown",
    "format_written",
    "load_results",
    "merge",
    "parse_results",
    "render_html",
    "render_junit",
    "render_markdown",
    "write_reports",
]
