"""``stopbench calibrate``: the error and floor of stopbench's own stopwatch on this machine.

Exit codes: 0 the figures were measured (whatever they are: a busy machine is reported, not
failed), 2 a usage error, a calibration run that did not produce its figures, or SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from harness.calibrate.figures import quick_table, report
from harness.calibrate.stopwatch import DELAYS_MS, CalibrationError, calibrate, quick_floor_async
from harness.cli.signals import Interrupted, run_until_signalled
from harness.cli.usage import Parser
from harness.model.drivers import DRIVERS

T = TypeVar("T")
EXIT_OK, EXIT_FAILED = 0, 2


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="stopbench calibrate",
        description="Time stopbench's calibration agent, whose effect after Stop is delayed by a known D, "
                    "through the ordinary drivers, and print measured − D per latency and driver: the error "
                    "and floor of stopbench's own stopwatch, with the machine's load.")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each task for each D (default 5)")
    parser.add_argument("--delays", default=",".join(f"{d:g}" for d in DELAYS_MS),
                        help="the values of D in ms, comma-separated (default %(default)s)")
    parser.add_argument("--driver", action="append", default=[],
                        help="only these drivers (inproc, subprocess; default both)")
    parser.add_argument("--json", metavar="PATH", help="also write every sample and the table as JSON")
    parser.add_argument("--quick", action="store_true",
                        help="only the quick floor (D = 0, a few runs) that `stopbench run` puts in its header, "
                             "as a table (--json PATH: also as JSON)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    try:
        delays = [float(d) for d in args.delays.split(",") if d.strip()]
    except ValueError:
        parser.error(f"--delays must be numbers of milliseconds, got {args.delays!r}")
    if not delays or any(not d >= 0 for d in delays):
        parser.error("--delays needs at least one value, each >= 0")
    drivers = [d.strip() for value in args.driver for d in value.split(",") if d.strip()]
    # The calibration agent has a headless and an in-process mode (harness/calibrate/calibrate.toml).
    unknown = [d for d in drivers if d not in DRIVERS or DRIVERS[d].section not in ("headless", "inproc")]
    if unknown:
        parser.error(f"the calibration agent runs on inproc and subprocess, not {unknown[0]!r}")
    try:
        if args.quick:
            floor = run_until_signalled(quick_floor_async())
            if "error" in floor:
                print(f"stopbench calibrate: the quick floor could not be measured: {floor['error']}", file=sys.stderr)
                return EXIT_FAILED
            print(quick_table(floor), end="")
            if args.json:
                _write_json(args.json, floor)
            return EXIT_OK
        cal = run_until_signalled(calibrate(repeat=args.repeat, delays_ms=delays, drivers=drivers or None,
                                         progress=_progress))
    except CalibrationError as exc:
        _clear_progress()
        print(f"stopbench calibrate: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Interrupted as exc:
        _clear_progress()
        print(f"stopbench calibrate: {exc}", file=sys.stderr)
        return EXIT_FAILED
    _clear_progress()
    print(report(cal), end="")
    if args.json:
        _write_json(args.json, cal.to_json())
    return EXIT_OK


def _write_json(path: str, data: object) -> None:
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written: {path}")


def _progress(n: int, total: int, label: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[Kcalibrating {n}/{total}: {label}")
        sys.stderr.flush()


def _clear_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
