"""``python -m harness`` and the ``stopbench`` command.

SIGINT and SIGTERM are handled from the first instruction: importing the command takes a
while, and a signal meanwhile cuts the run short like one at any other moment (exit 2, no
traceback, nothing left behind); a signal while the process shuts down is ignored.
"""

import signal
import sys

from harness.cli.signals import STOP_SIGNALS, Interrupted, install

EXIT_CUT_SHORT = 2


def main() -> int:
    install()
    try:
        from harness.cli import main as cli_main

        return cli_main()
    except Interrupted as exc:
        print(f"stopbench: cut short ({exc})", file=sys.stderr)
        return EXIT_CUT_SHORT
    finally:
        # The exit code is decided: the interpreter's shutdown, which puts the default
        # handlers back, must not be killed by a late signal (a double Ctrl-C) into another.
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


if __name__ == "__main__":
    sys.exit(main())
