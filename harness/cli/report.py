"""``stopbench report``, ``stopbench report merge`` and ``stopbench gate``.

Exit codes: 0 done (for the gate: no regression), 1 the gate found a regression,
2 unusable input — a message on stderr names the file and the problem.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from harness.cli.usage import Parser
from harness.report.diff import diff, diff_json, format_diff, format_diff_markdown
from harness.report.gate import compare
from harness.report.gate_text import format_gate, format_gate_markdown
from harness.report.html import render_html
from harness.report.junit import render_junit
from harness.report.load import ResultsError, load_results
from harness.report.markdown import render_markdown
from harness.report.publish import PublishError, merged, published, published_name
from harness.report.shard import ShardError, merge
from harness.report.writer import folder_problem, format_written, output_file_problem, results_text, write_text


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def _output_problem(outputs: Sequence[tuple[str, Path | None]]) -> str | None:
    """The first output option whose path cannot be written, named with its option: asked
    before any file is read or written, so a bad path costs nothing and leaves nothing."""
    return next((f"{option} {problem}" for option, path in outputs
                 if path is not None and (problem := output_file_problem(path))), None)


def report_main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    if argv[:1] == ["publish"]:
        return publish_main(argv[1:])
    prog = "stopbench report"
    parser = Parser(
        prog=prog,
        description="Render results files (several: a leaderboard). With no output option, "
                    "the Markdown summary goes to stdout. ('stopbench report merge' joins shards; "
                    "'stopbench report publish' writes a leaderboard's trimmed copy of a run.)",
    )
    parser.add_argument("results", nargs="+", type=Path, help="results.json files")
    parser.add_argument("--html", type=Path, help="write the self-contained HTML report here")
    parser.add_argument("--md", type=Path, help="write the Markdown summary here")
    parser.add_argument("--junit", type=Path, help="write JUnit XML here")
    args = parser.parse_args(argv)
    problem = _output_problem([("--html", args.html), ("--md", args.md), ("--junit", args.junit)])
    if problem:
        return _fail(prog, problem)
    try:
        runs = [load_results(p) for p in args.results]
    except ResultsError as exc:
        return _fail(prog, str(exc))
    outputs = [(args.html, render_html), (args.md, render_markdown), (args.junit, render_junit)]
    if not any(path for path, _ in outputs):
        sys.stdout.write(render_markdown(runs))
        return 0
    written = [write_text(path, render(runs)) for path, render in outputs if path]
    print(format_written(written), file=sys.stderr)
    return 0


def merge_main(argv: Sequence[str]) -> int:
    prog = "stopbench report merge"
    parser = Parser(prog=prog, description="Join the shard results of one run into one file.")
    parser.add_argument("shards", nargs="+", type=Path, help="results.json of each shard (any order)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="merged results file to write")
    args = parser.parse_args(list(argv))
    problem = _output_problem([("-o", args.output)])
    if problem:
        return _fail(prog, problem)
    try:
        shards = [load_results(p) for p in args.shards]
        merged = merge(shards)
    except ResultsError as exc:
        return _fail(prog, str(exc))
    except ShardError as exc:
        where = f"{args.shards[exc.index]}: " if exc.index is not None else ""
        return _fail(prog, where + exc.problem)
    write_text(args.output, results_text(merged))
    print(f"merged {len(shards)} shards ({len(merged.tasks)} task results, {len(merged.latencies)} latency "
          f"samples)\n{format_written([args.output])}", file=sys.stderr)
    return 0


def publish_main(argv: Sequence[str]) -> int:
    prog = "stopbench report publish"
    parser = Parser(prog=prog, description="Write what a tracked leaderboard keeps of a run (docs/results.md, "
                                           "'Published results files') into a folder, as NAME@VERSION.json.")
    parser.add_argument("results", type=Path, help="the run's results.json")
    parser.add_argument("later", nargs="*", type=Path,
                        help="results of the same release measured later: each task run they hold (task, driver, "
                             "adapter) replaces the first file's")
    parser.add_argument("--into", type=Path, required=True, metavar="DIR", help="the leaderboard's results folder")
    parser.add_argument("--note", default="", help="a sentence the leaderboard shows first, under Notes "
                                                   "(what a reader must know about how it was measured)")
    args = parser.parse_args(list(argv))
    problem = folder_problem(args.into)
    if problem:
        return _fail(prog, f"--into {problem}")
    try:
        base, later = load_results(args.results), [load_results(p) for p in args.later]
        run = published(merged(base, later, [str(p) for p in args.later]), args.note)
    except (ResultsError, PublishError) as exc:
        return _fail(prog, str(exc))
    target = args.into / published_name(run)
    problem = output_file_problem(target)
    if problem:
        return _fail(prog, problem)
    write_text(target, results_text(run))
    print(format_written([target]), file=sys.stderr)
    return 0


def gate_main(argv: Sequence[str]) -> int:
    prog = "stopbench gate"
    parser = Parser(
        prog=prog,
        description="Compare a run with a stored baseline. Exit 1 on a check that went from pass to fail "
                    "(not as another's consequence) or a statistically real latency regression, 0 otherwise, "
                    "2 on unusable input.",
    )
    parser.add_argument("--baseline", type=Path, required=True, help="baseline results.json")
    parser.add_argument("--current", type=Path, default=Path("reports/results.json"),
                        help="current results.json (default: %(default)s)")
    parser.add_argument("--tolerance", type=float, default=0.10,
                        help="median slowdown tolerated, as a fraction (default: %(default)s)")
    parser.add_argument("--alpha", type=float, default=0.01,
                        help="significance level of the Mann-Whitney U test (default: %(default)s)")
    parser.add_argument("--md", type=Path, help="also write the comparison as Markdown here (a CI step summary)")
    parser.add_argument("--advisory", action="store_true",
                        help="also fail on an advisory check that went from pass to fail (shown, not gated, "
                             "by default)")
    args = parser.parse_args(list(argv))
    if args.tolerance < 0:
        return _fail(prog, f"--tolerance must be >= 0, got {args.tolerance}")
    if not 0 < args.alpha < 0.5:
        return _fail(prog, f"--alpha must be between 0 and 0.5, got {args.alpha}")
    problem = _output_problem([("--md", args.md)])
    if problem:
        return _fail(prog, problem)
    try:
        baseline, current = load_results(args.baseline), load_results(args.current)
    except ResultsError as exc:
        return _fail(prog, str(exc))
    result = compare(baseline, current, tolerance=args.tolerance, alpha=args.alpha, advisory=args.advisory)
    if not result.checks and not result.latencies:
        return _fail(prog, f"{args.baseline} and {args.current} have no task results or latency samples to compare")
    sys.stdout.write(format_gate(result))
    if args.md:
        write_text(args.md, format_gate_markdown(result))
    return 1 if result.failed else 0


def diff_main(argv: Sequence[str]) -> int:
    prog = "stopbench diff"
    parser = Parser(
        prog=prog,
        description="What changed between two results files (e.g. two releases of one agent): per task, "
                    "driver, adapter and check — fixed, newly broken, newly undecidable, unchanged — and the "
                    "latencies side by side. Exit 1 on anything newly broken, 0 otherwise, 2 on unusable input.",
    )
    parser.add_argument("base", type=Path, help="the earlier results.json")
    parser.add_argument("new", type=Path, help="the later results.json")
    parser.add_argument("--md", type=Path, metavar="FILE", help="also write the diff as Markdown here")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the diff as JSON here (every row)")
    args = parser.parse_args(list(argv))
    problem = _output_problem([("--md", args.md), ("--json", args.json)])
    if problem:
        return _fail(prog, problem)
    try:
        base, new = load_results(args.base), load_results(args.new)
    except ResultsError as exc:
        return _fail(prog, str(exc))
    result = diff(base, new)
    if not result.checks and not result.latencies:
        return _fail(prog, f"{args.base} and {args.new} have no task results or latency samples to compare")
    names = (str(args.base), str(args.new))
    sys.stdout.write(format_diff(result, *names))
    if args.md:
        write_text(args.md, format_diff_markdown(result, *names))
    if args.json:
        write_text(args.json, diff_json(result, *names))
    return result.exit_code
