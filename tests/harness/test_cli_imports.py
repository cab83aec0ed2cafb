"""`stopbench --help`, `list`, `report` and `gate` start at once because they load nothing of a
run: the drivers, the fake server (aiohttp) and the process tools are `run`'s alone. Asserted on
what is imported, not on a time (benchmarks/startup_bench.py prints the times)."""
import json
import subprocess
import sys

from harness import cli
from harness.run import runner

HEAVY = ("aiohttp", "pexpect", "pyte", "psutil", "harness.drivers", "harness.run.runner", "fake_server.server")

# In a fresh interpreter: what `import harness.cli` loads, then what `stopbench list` loads on top.
PROBE = """
import contextlib, io, json, sys
heavy = json.loads(sys.argv[1])
import harness.cli
loaded = {"import harness.cli": [m for m in heavy if m in sys.modules]}
with contextlib.redirect_stdout(io.StringIO()):
    code = harness.cli.main(["list"])
loaded["stopbench list"] = [m for m in heavy if m in sys.modules]
print(json.dumps({"code": code, "loaded": loaded}))
"""


def test_importing_the_command_and_listing_load_nothing_of_a_run():
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["code"] == 0
    assert answer["loaded"] == {"import harness.cli": [], "stopbench list": []}


def test_the_retries_default_in_the_help_is_the_runners():
    assert cli.DEFAULT_RETRIES == runner.DEFAULT_RETRIES


def test_the_drivers_named_in_the_help_are_the_registered_ones():
    from harness.model.drivers import DRIVERS

    assert cli.DRIVER_NAMES == ", ".join(DRIVERS)
