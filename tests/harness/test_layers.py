"""The one-way house, as a person sees it: a CI job that only renders or gates results loads
no driver, reader, installer or run module, and none of the process tools they need.
(The full layer contracts are pyproject.toml's [tool.importlinter], run by `make test`.)"""

import json
import subprocess
import sys

PROBE = """
import json, sys
import harness.report, harness.report.gate, harness.report.diff, harness.report.shard
print(json.dumps(sorted(m for m in sys.modules)))
"""
NOT_FOR_A_REPORT = ("harness.run", "harness.drivers", "harness.readers", "harness.agents", "harness.checks",
                    "harness.tasks", "harness.calibrate", "harness.containment", "harness.offline", "harness.profiles",
                    "fake_server", "pexpect", "pyte", "psutil", "aiohttp")
# The fake server's record format is the model's evidence, plain values: that much of the server it reads.
RECORD_FORMAT = ("fake_server", "fake_server.records", "fake_server.canonical")


def test_importing_the_reports_loads_nothing_that_runs_an_agent():
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    loaded = json.loads(proc.stdout)
    assert [m for m in loaded if m.startswith(NOT_FOR_A_REPORT) and m not in RECORD_FORMAT] == []
    assert "harness.model" in loaded  # what a report does read
