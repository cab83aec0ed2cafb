# Quick start: `make eval` (the main job) and `make test` (the tests).
# Both create or reuse a local virtualenv in .venv and install the project into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stopbench-installed

.PHONY: eval test test-fast lint typecheck layers bench stress agents leaderboard docs clean browser

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $(STAMP)

# Headless Chromium for the browser test of the HTML report (tests/reports/test_browser.py),
# and for nothing else: `make test` asks for it, `make eval` never does. Installed from
# Debian's packages when it is missing and this is root on a Debian-like machine; never fails
# (without it that one test is skipped, saying why).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium for the HTML report's browser test"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	      >/dev/null 2>&1 || echo "could not install chromium: the browser test will be skipped"; \
	  else echo "no chromium (and cannot install it here): the browser test will be skipped"; fi; }

eval: $(STAMP)
	$(VENV)/bin/stopbench run --agent reference --jobs 2 --report-dir reports

# Tests run on every core (pytest-xdist): most of them wait on an agent, a server or a beacon,
# and none depends on the machine being quiet. TEST_WORKERS=0 runs them in one process.
TEST_WORKERS ?= auto
test: lint typecheck layers browser $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS)
	PYTHON=$(PYTHON) bash scripts/wheel_check.sh

# The fast lane, after every edit: every test not marked slow (pytest -m "not slow"), well
# under a minute; `make test` runs them all, the conformance suite and the wheel check too.
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS)

lint: $(STAMP)
	$(VENV)/bin/ruff check harness fake_server reference_agent tests benchmarks conftest.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The import contracts in pyproject.toml ([tool.importlinter]): data flows one way.
layers: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache

bench: $(STAMP)
	$(PY) benchmarks/fake_server_bench.py
	$(PY) benchmarks/fake_server_bench.py --concurrent
	$(PY) benchmarks/startup_bench.py
	$(PY) benchmarks/window_bench.py
	$(PY) benchmarks/netns_bench.py
	$(PY) benchmarks/refagent_bench.py
	$(VENV)/bin/stopbench calibrate

# The tests and a repeated conformance run under CPU hogs (cores + 1): failures and verdict
# flips that only show under load. STRESS_ARGS="--quick" for a short run, "--repeat N" for N.
stress: $(STAMP)
	$(PY) benchmarks/stress.py $(STRESS_ARGS)

# Real agents: install the pinned CLIs that have built-in profiles into the cache
# (~/.cache/stopbench/agents), score each in turn (full evidence in reports/agents/NAME/), publish
# each run's trimmed copy into the tracked leaderboard/results/NAME@VERSION.json (replacing that
# release's earlier one) and render the leaderboard. AGENTS may name releases: claude-code@2.1.332.
# A run cut short or failed by the harness (exit 2) stops here, unpublished.
# begin generated: agents (make docs, from the [install] tables of harness/agents/profiles/*.toml)
AGENTS ?= aider claude-agent-acp claude-code cline codex-acp codex continue copilot \
          gemini-cli gptme kilo kimi-cli llm mini-swe-agent opencode openhands \
          pi qwen-code
# end generated: agents
agents: $(STAMP)
	for a in $(AGENTS); do $(VENV)/bin/stopbench agents install $$a || exit 2; done
	rc=0; for a in $(AGENTS); do \
	  $(VENV)/bin/stopbench run --agent $$a --report-dir reports/agents/$$a; r=$$?; \
	  test $$r -le 1 || exit $$r; test $$r -eq 0 || rc=1; \
	  $(VENV)/bin/stopbench report publish reports/agents/$$a/results.json --into leaderboard/results || exit 2; \
	done; $(RENDER_LEADERBOARD) && exit $$rc

# The leaderboard's Markdown (tracked) from the tracked published results, in a fixed file
# order; the HTML beside the other reports (an artifact, not tracked). Deterministic: with no
# new results it rewrites the same bytes.
# (`agents` runs it inline, not through $(MAKE): `make -n agents` must run nothing; the files are
# listed by the shell when it runs, so those `agents` has just published are in.)
RENDER_LEADERBOARD = $(VENV)/bin/stopbench report $$(LC_ALL=C ls -d leaderboard/results/*.json) \
	--md leaderboard/README.md --html reports/leaderboard.html
leaderboard: $(STAMP)
	$(RENDER_LEADERBOARD)

# The docs' tables of agents and tasks, their list of readers and AGENTS above, from the profiles,
# the task files and the registered readers (harness/agents/docs.py); a test fails while they differ.
docs: $(STAMP)
	$(PY) -m harness.agents.docs

clean:
	rm -rf $(VENV) reports/*.json reports/*.html reports/*.xml reports/summary.md
