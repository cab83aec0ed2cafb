#!/usr/bin/env bash
# The steps of the stopbench GitHub Action (action.yml), one function each, so that the suite
# can run them in order outside GitHub (tests/harness/test_action.py). Usage:
#
#   scripts/action.sh STEP        # setup, install-stopbench, install-agent, run, summary, gate, conclude
#
# Inputs come from the environment, as action.yml passes them:
#   STOPBENCH_AGENT       a built-in profile name[@version], or the path of a profile TOML (required)
#   STOPBENCH_INSTALL     shell command that installs the agent of a profile path (optional)
#   STOPBENCH_TASKS       tasks to run, comma- or space-separated (default: every task)
#   STOPBENCH_REPEAT      runs of each task (default 1)
#   STOPBENCH_JOBS        task runs at once (default 1)
#   STOPBENCH_BASELINE    a results.json to gate against (optional; a path that does not exist
#                         yet is said in the summary and not gated)
#   STOPBENCH_REPORT_DIR  where the reports go (default stopbench-reports)
#   STOPBENCH_FAIL_ON     not-conformant (default): a run that is not conformant fails the job;
#                         regression: only the gate (a check or latency worse than the baseline)
#   STOPBENCH_SOURCE      what install-stopbench installs with pip (the action's own checkout)
#   RUN_EXIT_CODE, GATE_EXIT_CODE   the outputs of the run and gate steps, for conclude
# and GitHub's own: GITHUB_OUTPUT, GITHUB_ENV, GITHUB_STEP_SUMMARY.
#
# Every step but conclude records what happened and exits 0 when it could do its work, so the
# summary, the gate and the upload all happen after a failing run; conclude gives the verdict.
# A step exits 2 on a bad input or a failed install, naming it.
set -euo pipefail

report_dir=${STOPBENCH_REPORT_DIR:-stopbench-reports}
python=${STOPBENCH_PYTHON:-python3}

fail() { echo "::error title=stopbench::$*" >&2; exit 2; }
output() { echo "$1=$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"; }
say() { echo "$*" >>"${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is not set}"; }
is_profile_path() { [[ $STOPBENCH_AGENT == *.toml ]]; }
agent_name() { echo "${STOPBENCH_AGENT%%@*}"; }
agent_version() { [[ $STOPBENCH_AGENT == *@* ]] && echo "${STOPBENCH_AGENT#*@}" || true; }

# Checks the inputs before anything is installed, and names the caches: the agent's install
# (STOPBENCH_CACHE) is keyed on the agent, its version, its profile and its install command.
step_setup() {
  [[ -n ${STOPBENCH_AGENT:-} ]] || fail "input 'agent' is empty: name a built-in agent (e.g. codex@0.130.0) or a profile TOML"
  local name value
  for name in STOPBENCH_REPEAT STOPBENCH_JOBS; do
    value=${!name:-1}
    [[ $value =~ ^[1-9][0-9]*$ ]] || fail "input '$(tr '[:upper:]' '[:lower:]' <<<"${name#STOPBENCH_}")' must be a whole number of at least 1, got '$value'"
  done
  case ${STOPBENCH_FAIL_ON:-not-conformant} in
    not-conformant|regression) ;;
    *) fail "input 'fail-on' must be not-conformant or regression, got '$STOPBENCH_FAIL_ON'" ;;
  esac
  if is_profile_path; then
    [[ -f $STOPBENCH_AGENT ]] || fail "input 'agent': no profile file $STOPBENCH_AGENT (relative to $(pwd))"
  elif [[ -n ${STOPBENCH_INSTALL:-} ]]; then
    fail "input 'install' is for a profile path; a built-in agent ($(agent_name)) is installed by stopbench itself"
  fi
  local cache=${STOPBENCH_CACHE:-$HOME/.cache/stopbench}
  local fingerprint
  fingerprint=$({ echo "$STOPBENCH_AGENT"; echo "${STOPBENCH_INSTALL:-}"; ! is_profile_path || cat "$STOPBENCH_AGENT"; } \
                | sha256sum | cut -c1-16)
  echo "STOPBENCH_CACHE=$cache" >>"${GITHUB_ENV:?GITHUB_ENV is not set}"
  output agent-cache-path "$cache"
  output agent-cache-key "stopbench-agent-$(uname -s)-$(basename "$(agent_name)" .toml)-$fingerprint"
}

# stopbench itself, from the action's own checkout (pip's cache is kept by action.yml).
step_install_stopbench() {
  "$python" -m pip install --disable-pip-version-check "${STOPBENCH_SOURCE:?STOPBENCH_SOURCE is not set}" \
    || fail "could not install stopbench from $STOPBENCH_SOURCE"
  stopbench --version
}

# The agent: a built-in one through `stopbench agents install` (pinned, or @version), into
# STOPBENCH_CACHE, where a cached install is found and kept; a profile's through its command.
step_install_agent() {
  if is_profile_path; then
    if [[ -n ${STOPBENCH_INSTALL:-} ]]; then
      echo "installing the agent of $STOPBENCH_AGENT: $STOPBENCH_INSTALL"
      bash -euo pipefail -c "$STOPBENCH_INSTALL" || fail "the install command of input 'install' failed: $STOPBENCH_INSTALL"
    fi
    return 0
  fi
  local name version real
  name=$(agent_name)
  version=$(agent_version)
  real=$(stopbench list --json | "$python" -c '
import json, sys
agents = {a["name"]: a for a in json.load(sys.stdin)["agents"]}
if sys.argv[1] not in agents:
    sys.exit("built-in agents: " + ", ".join(agents))
print(agents[sys.argv[1]].get("agent") or "")' "$name") || fail "input 'agent': no built-in agent '$name'"
  if [[ -z $real ]]; then
    echo "$name comes with stopbench: nothing to install"
    return 0
  fi
  stopbench agents install "$name" ${version:+--version "$version"} || fail "could not install $STOPBENCH_AGENT"
}

# The run. Its exit code is an output (0 conformant, 1 not conformant or incomplete, 2 a
# harness or usage error), never this step's: the summary, the gate and the upload come next.
step_run() {
  local args=(--agent "$STOPBENCH_AGENT" --repeat "${STOPBENCH_REPEAT:-1}" --jobs "${STOPBENCH_JOBS:-1}"
              --report-dir "$report_dir")
  local task tasks=${STOPBENCH_TASKS:-}
  for task in ${tasks//,/ }; do args+=(--task "$task"); done
  local code=0
  stopbench run "${args[@]}" || code=$?
  output exit-code "$code"
  local verdict=""
  if [[ -f $report_dir/results.json ]]; then
    verdict=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["verdict"])' "$report_dir/results.json")
  fi
  output verdict "$verdict"
  output report-dir "$report_dir"
}

# The run's Markdown summary on the job's page.
step_summary() {
  if [[ -f $report_dir/summary.md ]]; then
    cat "$report_dir/summary.md" >>"$GITHUB_STEP_SUMMARY"
  else
    say "## stopbench: no report"
    say ""
    say "The run wrote no summary into \`$report_dir\` (exit code ${RUN_EXIT_CODE:-unknown}); its log says why."
  fi
}

# The gate against the baseline, its table written into the report folder (so the upload
# that follows carries it) and onto the job's page. Its exit code is an output.
step_gate() {
  if [[ -z ${STOPBENCH_BASELINE:-} ]]; then
    output gate-exit-code ""
    return 0
  fi
  if [[ ! -f $STOPBENCH_BASELINE ]]; then
    say ""
    say "**Not gated:** no baseline at \`$STOPBENCH_BASELINE\` yet."
    output gate-exit-code ""
    return 0
  fi
  if [[ ! -f $report_dir/results.json ]]; then
    say ""
    say "**Not gated:** the run left no \`results.json\`."
    output gate-exit-code ""
    return 0
  fi
  local code=0
  stopbench gate --baseline "$STOPBENCH_BASELINE" --current "$report_dir/results.json" --md "$report_dir/gate.md" \
    || code=$?
  if [[ -f $report_dir/gate.md ]]; then
    say ""
    cat "$report_dir/gate.md" >>"$GITHUB_STEP_SUMMARY"
  fi
  output gate-exit-code "$code"
}

# The job's outcome: 2 when the run or the gate could not do their work, 1 on a regression
# against the baseline, or on a run that is not conformant (unless fail-on is regression).
step_conclude() {
  local run=${RUN_EXIT_CODE:-} gate=${GATE_EXIT_CODE:-}
  if [[ $run == 2 || $gate == 2 || -z $run ]]; then
    fail "stopbench could not complete (run exit ${run:-none}, gate exit ${gate:-none}): see the run's log"
  fi
  if [[ $gate == 1 ]]; then
    echo "::error title=stopbench::worse than the baseline: see the gate table in the job summary" >&2
    exit 1
  fi
  if [[ $run == 1 && ${STOPBENCH_FAIL_ON:-not-conformant} == not-conformant ]]; then
    echo "::error title=stopbench::the agent is not conformant: see the job summary and the report artifact" >&2
    exit 1
  fi
  echo "stopbench: run exit $run, gate exit ${gate:-not gated}"
}

case ${1:-} in
  setup) step_setup ;;
  install-stopbench) step_install_stopbench ;;
  install-agent) step_install_agent ;;
  run) step_run ;;
  summary) step_summary ;;
  gate) step_gate ;;
  conclude) step_conclude ;;
  *) echo "usage: $0 setup|install-stopbench|install-agent|run|summary|gate|conclude" >&2; exit 2 ;;
esac
