# Quick start: `make eval` (the main job) and `make test` (the tests).
# Both create or reuse a local virtualenv in .venv and install the project into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stopbench-installed

.PHONY: eval test lint typecheck bench stress clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

eval: $(STAMP)
	$(VENV)/bin/stopbench run --agent reference --report-dir reports

test: lint typecheck $(STAMP)
	$(PY) -m pytest -q
	PYTHON=$(PYTHON) bash scripts/wheel_check.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check harness fake_server reference_agent tests benchmarks conftest.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/fake_server_bench.py
	$(PY) benchmarks/refagent_bench.py

# The tests and a repeated conformance run under CPU hogs (cores + 1): failures and verdict
# flips that only show under load. STRESS_ARGS="--quick" for a short run, "--repeat N" for N.
stress: $(STAMP)
	$(PY) benchmarks/stress.py $(STRESS_ARGS)

clean:
	rm -rf $(VENV) reports/*.json reports/*.html reports/*.xml reports/summary.md
