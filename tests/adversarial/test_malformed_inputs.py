"""Malformed inputs of every kind a person writes — profiles, tasks, scenarios, results files,
command-line options — each refused with an error that names the file (or option), the item
and the problem: never a traceback, never a run that fails later and blames the agent, and
the input left exactly as it was.

The loaders are called directly (fast); a few options go through a real ``stopbench``
process, where a traceback would show.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fake_server.scenario import ScenarioError
from fake_server.scenario_loader import load_scenario
from harness.checks import REGISTRY
from harness.cli import main
from harness.datafile import DataFileError
from harness.profiles import load_profile
from harness.report.load import ResultsError, load_results
from harness.tasks import load_task


@dataclass(frozen=True)
class Bad:
    """One malformed file: its text (or bytes), the item the error must name, and a fragment
    of the problem it must state."""

    name: str
    text: str | bytes
    item: str | None
    problem: str


# --- profiles -----------------------------------------------------------------------------

CMD = '["agent", "{prompt}"]'


def profile(top: str = "", headless: str = "", extra: str = "", command: str = CMD) -> str:
    return f'name = "p"\n{top}\n[headless]\ncommand = {command}\n{headless}\n{extra}\n'


TUI = '[interactive]\ncommand = ["agent"]\nprompt_regex = "> "\n'

PROFILES = [
    Bad("toml-syntax", 'name = \n', "toml", "Invalid value"),
    Bad("not-utf8", b'name = "p"\n\xff\xfe\n', "file", "not UTF-8"),
    Bad("unknown-top-key", profile('colour = "red"'), "colour", "unknown key"),
    Bad("name-missing", '[headless]\ncommand = ["a", "{prompt}"]\n', "name", "required"),
    Bad("name-not-string", profile().replace('name = "p"', "name = 3"), "name", "must be a string"),
    Bad("name-with-space", profile().replace('name = "p"', 'name = "a b"'), "name", "plain identifier"),
    Bad("description-number", profile("description = 3"), "description", "must be a string"),
    Bad("log-reader-unknown", profile('log_reader = "sqlite"'), "log_reader", "is not one of"),
    Bad("wire-api-unknown", profile('wire_api = "grpc"'), "wire_api", "is not one of"),
    Bad("adapters-empty", profile("adapters = []"), "adapters", "at least one adapter"),
    Bad("adapters-string", profile('adapters = "http"'), "adapters", "list of strings"),
    Bad("adapters-numbers", profile("adapters = [1]"), "adapters", "list of strings"),
    Bad("adapters-twice", profile('adapters = ["http", "http"]'), "adapters", "listed twice"),
    Bad("model-number", profile("model = 5"), "model", "must be a string"),
    Bad("fresh-home-string", profile('fresh_home = "yes"'), "fresh_home", "true or false"),
    Bad("streams-number", profile("streams = 1"), "streams", "true or false"),
    Bad("sequential-tools-string", profile('sequential_tools = "no"'), "sequential_tools", "true or false"),
    Bad("agent-number", profile("agent = 3"), "agent", "must be a string"),
    Bad("agent-not-in-the-catalog", profile('agent = "nosuch"'), "agent", "not an agent of the catalog"),
    Bad("model-empty", profile('model = ""'), "model", "not a model name"),
    Bad("adapter-blank", profile('adapters = [" "]'), "adapters", "not a plain name"),
    Bad("program-empty", profile(command='["", "{prompt}"]'), "headless.command", "the program, is empty"),
    Bad("failpoints-env-not-a-name", profile(extra='[failpoints]\nenv = "FAIL POINTS"'), "failpoints.env",
        "not an environment variable name"),
    Bad("version-command-string", profile('version_command = "agent --version"'), "version_command",
        "list of strings"),
    Bad("stop-signal-unknown", profile(extra='[stop]\nsignal = "SIGNOPE"'), "stop.signal", "not a signal name"),
    Bad("stop-signal-number", profile(extra="[stop]\nsignal = 2"), "stop.signal", "must be a string"),
    Bad("stop-not-table", profile('stop = "SIGINT"'), "stop", "must be a table"),
    Bad("stop-unknown-key", profile(extra='[stop]\nsig = "SIGINT"'), "stop.sig", "unknown key in [stop]"),
    Bad("watchdog-signal-unknown", profile(extra='[watchdog]\nsignal = "TERM"'), "watchdog.signal",
        "not a signal name"),
    Bad("no-driver-section", 'name = "p"\n', "headless", "at least one of"),
    Bad("headless-not-table", 'name = "p"\nheadless = "agent"\n', "headless", "must be a table"),
    Bad("command-missing", 'name = "p"\n[headless]\nstdin = "y"\n', "headless.command", "required"),
    Bad("command-empty", profile(command="[]"), "headless.command", "required"),
    Bad("command-string", profile(command='"agent {prompt}"'), "headless.command", "list of strings"),
    Bad("command-without-prompt", profile(command='["agent"]'), "headless.command", "must pass {prompt}"),
    Bad("command-nul", profile(command='["agent", "a\\u0000", "{prompt}"]'), "headless.command", "NUL"),
    Bad("placeholder-typo", profile(command='["agent", "{promt}"]'), "headless.command",
        "unknown placeholder {promt}"),
    Bad("template-unbalanced", profile(command='["agent", "{prompt}", "{"]'), "headless.command", "bad template"),
    Bad("timeout-options-string", profile(headless='timeout_options = "--timeout"'), "headless.timeout_options",
        "list of strings"),
    Bad("exit-code-reason-typo", profile(headless="exit_codes = { completd = 0 }"), "headless.exit_codes.completd",
        "not a settlement reason"),
    Bad("exit-code-256", profile(headless="exit_codes = { aborted = 256 }"), "headless.exit_codes.aborted",
        "from 0 to 255"),
    Bad("exit-code-negative", profile(headless="exit_codes = { error = -1 }"), "headless.exit_codes.error",
        "from 0 to 255"),
    Bad("exit-code-string", profile(headless='exit_codes = { error = "2" }'), "headless.exit_codes.error",
        "from 0 to 255"),
    Bad("exit-code-bool", profile(headless="exit_codes = { completed = true }"), "headless.exit_codes.completed",
        "from 0 to 255"),
    Bad("exit-codes-not-table", profile(headless='exit_codes = "0"'), "headless.exit_codes", "must be a table"),
    Bad("stdin-number", profile(headless="stdin = 3"), "headless.stdin", "must be a string"),
    Bad("stdin-unknown-placeholder", profile(headless='stdin = "{nope}"'), "headless.stdin",
        "unknown placeholder {nope}"),
    Bad("no-resume-empty", profile(headless='no_resume = " "'), "headless.no_resume", "a reason"),
    Bad("no-resume-with-resume-options", profile(headless='no_resume = "tui"\nresume_options = ["-c"]'),
        "headless.no_resume", "only for a command without resume_options"),
    Bad("headless-unknown-key", profile(headless='colour = "red"'), "headless.colour", "unknown key in [headless]"),
    Bad("adapter-options-string", profile(headless='adapter_options = { http = "--x" }'),
        "headless.adapter_options.http", "list of strings"),
    Bad("timeout-in-command", profile(command='["agent", "--timeout", "{timeout}", "{prompt}"]'),
        "headless.command", "{timeout} has a value only in the timeout_options"),
    Bad("timeout-in-first-options", profile(headless='first_options = ["--for={timeout}"]'),
        "headless.first_options", "{timeout} has a value only"),
    Bad("timeout-in-resume-options", profile(headless='resume_options = ["-c", "{timeout}"]'),
        "headless.resume_options", "{timeout} has a value only"),
    Bad("prompt-in-env", profile(extra='[env]\nP = "{prompt}"'), "env.P", "{prompt} has a value only in [headless]"),
    Bad("prompt-in-file", profile(extra='[[files]]\npath = "{home}/p"\ncontent = "{prompt}"'), "files[1].content",
        "{prompt} has a value only"),
    Bad("session-id-in-command", profile(command='["agent", "{session_id}", "{prompt}"]'), "headless.command",
        "{session_id} has a value only in the resume_options"),
    Bad("options-in-env", profile(extra='[env]\nO = "{options}"'), "env.O", "stands alone"),
    Bad("options-inside-an-element", profile(command='["agent", "--x={options}", "{prompt}"]'), "headless.command",
        "stands alone"),
    Bad("agent-bin-without-agent", profile(command='["{agent_bin}", "{prompt}"]'), "headless.command",
        "need agent = NAME"),
    Bad("budget-nan", profile(extra="[timeouts]\nturn = nan"), "timeouts.turn", "above 0 and at most 3600"),
    Bad("budget-inf", profile(extra="[timeouts]\nstartup = inf"), "timeouts.startup", "above 0 and at most 3600"),
    Bad("budget-1e300", profile(extra="[timeouts]\nsettle = 1e300"), "timeouts.settle", "above 0 and at most 3600"),
    Bad("budget-zero", profile(extra="[timeouts]\nturn = 0"), "timeouts.turn", "above 0"),
    Bad("budget-negative", profile(extra="[timeouts]\nturn = -5"), "timeouts.turn", "above 0"),
    Bad("budget-string", profile(extra='[timeouts]\nturn = "60"'), "timeouts.turn", "number of seconds"),
    Bad("budget-bool", profile(extra="[timeouts]\nturn = true"), "timeouts.turn", "number of seconds"),
    Bad("budget-unknown", profile(extra="[timeouts]\nboot = 5"), "timeouts.boot", "unknown key in [timeouts]"),
    Bad("env-number", profile(extra="[env]\nKEY = 3"), "env.KEY", "must be a string"),
    Bad("env-name-with-equals", profile(extra='[env]\n"A=B" = "x"'), "env.A=B", "not an environment variable name"),
    Bad("env-name-empty", profile(extra='[env]\n"" = "x"'), "env.", "not an environment variable name"),
    Bad("env-value-nul", profile(extra='[env]\nK = "a\\u0000b"'), "env.K", "NUL"),
    Bad("adapter-env-name-with-space", profile(extra='[adapter_env.http]\n"A B" = "x"'), "adapter_env.http.A B",
        "not an environment variable name"),
    Bad("env-not-table", profile('env = "K=v"'), "env", "must be a table"),
    Bad("env-unknown-placeholder", profile(extra='[env]\nK = "{nope}"'), "env.K", "unknown placeholder {nope}"),
    Bad("adapter-env-unknown-adapter", profile(extra='[adapter_env.grpc]\nK = "v"'), "adapter_env.grpc",
        "not one of the profile's adapters"),
    Bad("adapter-env-number", profile(extra="[adapter_env.http]\nK = 1"), "adapter_env.http.K", "must be a string"),
    Bad("files-table", profile('files = { path = "{home}/a", content = "" }'), "files", "array of [[files]]"),
    Bad("file-without-content", profile(extra='[[files]]\npath = "{home}/a"'), "files[1]", "'path' and 'content'"),
    Bad("file-outside-home", profile(extra='[[files]]\npath = "/etc/a"\ncontent = ""'), "files[1].path",
        "must start with {home}/"),
    Bad("file-climbs-out", profile(extra='[[files]]\npath = "{home}/../x"\ncontent = ""'), "files[1].path", "'..'"),
    Bad("file-twice", profile(extra='[[files]]\npath = "{home}/a"\ncontent = ""\n[[files]]\npath = "{home}/a"\n'
                                    'content = "x"'), "files[2].path", "earlier [[files]] entry"),
    Bad("file-unknown-key", profile(extra='[[files]]\npath = "{home}/a"\ncontent = ""\nmode = "600"'),
        "files[1].mode", "unknown key"),
    Bad("file-into-own-home", profile("fresh_home = false", extra='[[files]]\npath = "{home}/.bashrc"\n'
                                                                  'content = "export K={api_key}"'),
        "files[1]", "into your own HOME"),
    Bad("file-unknown-placeholder", profile(extra='[[files]]\npath = "{home}/a"\ncontent = "{nope}"'),
        "files[1].content", "unknown placeholder {nope}"),
    Bad("stderr-regex-without-id", profile(extra='[session]\nstderr_regex = "session (\\\\S+)"'),
        "session.stderr_regex", "named group(s) id"),
    Bad("stderr-regex-broken", profile(extra='[session]\nstderr_regex = "("'), "session.stderr_regex",
        "bad regular expression"),
    Bad("log-glob-number", profile(extra="[session]\nlog_glob = 3"), "session.log_glob", "must be a string"),
    Bad("log-glob-unknown-placeholder", profile(extra='[session]\nlog_glob = "{home}/{nope}/*"'), "session.log_glob",
        "unknown placeholder {nope}"),
    Bad("factory-not-a-spec", profile(extra='[inproc]\nfactory = "not a spec"'), "inproc.factory",
        "module.path:function"),
    Bad("interactive-without-prompt-regex", 'name = "p"\n[interactive]\ncommand = ["a"]\nturn_ended_regex = "x"\n',
        "interactive.prompt_regex", "required"),
    Bad("interactive-without-turn-end", f'name = "p"\n{TUI}', "interactive.turn_ended_regex", "required"),
    Bad("interactive-match-on-unknown", f'name = "p"\n{TUI}turn_ended_regex = "x"\nmatch_on = "pixels"\n',
        "interactive.match_on", "one of stream, screen"),
    Bad("interactive-stop-key-unknown", f'name = "p"\n{TUI}turn_ended_regex = "x"\nstop_keys = ["f1"]\n',
        "interactive.stop_keys", "not a known key"),
    Bad("interactive-turn-end-group-unknown", f'name = "p"\n{TUI}turn_ended_regex = "(?P<stopped>x)"\n',
        "interactive.turn_ended_regex", "unknown group 'stopped'"),
    Bad("interactive-prompt-regex-broken", 'name = "p"\n[interactive]\ncommand = ["a"]\nprompt_regex = "["\n'
                                           'turn_ended_regex = "x"\n', "interactive.prompt_regex",
        "bad regular expression"),
    Bad("interactive-prompt-placeholder", 'name = "p"\n[interactive]\ncommand = ["a", "{prompt}"]\n'
                                          'prompt_regex = "> "\nturn_ended_regex = "x"\n', "interactive.command",
        "{prompt} has a value only in [headless]"),
    Bad("finish-action-both", profile(extra='[finish_action]\ntool = "done"\nshell = "exit"'), "finish_action",
        "exactly one of"),
    Bad("finish-action-unknown-key", profile(extra='[finish_action]\ntool = "done"\nwhen = "x"'),
        "finish_action.when", "unknown key in [finish_action]"),
    Bad("finish-action-empty-tool", profile(extra='[finish_action]\ntool = ""'), "finish_action.tool",
        "non-empty string"),
    Bad("finish-action-shell-arguments", profile(extra='[finish_action]\nshell = "exit"\narguments = { a = 1 }'),
        "finish_action.arguments", "belongs to a 'tool' action"),
    Bad("shell-fence-not-a-language", profile(extra='[shell]\nfence = "ba sh"'), "shell.fence",
        "fence language"),
    Bad("not-run-without-reason", profile(extra='[not_run]\ninbox = ""'), "not_run.inbox", "must say why"),
    Bad("failpoints-list-command-string", profile(extra='[failpoints]\nlist_command = "agent fp"'),
        "failpoints.list_command", "list of strings"),
    Bad("repair-number", profile(extra="[repair]\noutcome_unknown = 3"), "repair.outcome_unknown",
        "must be a string"),
]


# --- tasks --------------------------------------------------------------------------------

SCENARIO = 'name = "s"\n[[responses]]\n[[responses.frames]]\ntext = "hi"\n'
HEAD = 'name = "t"\ndrivers = ["subprocess"]\n[checks]\nmandatory = ["C1"]\n'
SEND = '[[steps]]\ndo = "send"\ntext = "x"\n'


def task(*steps: str, head: str = HEAD) -> str:
    return head + "".join(steps)


def step(do: str, **fields: str) -> str:
    return f'[[steps]]\ndo = "{do}"\n' + "".join(f"{k} = {v}\n" for k, v in fields.items())


WAIT_REQUEST = step("wait", **{"for": '"request"', "request": "1"})
TERMINAL = HEAD.replace('["subprocess"]', '["terminal"]')
INPROC = HEAD.replace('["subprocess"]', '["inproc"]')

TASKS = [
    Bad("toml-syntax", 'name = "t"\ndrivers = [\n', "toml", "Invalid"),
    Bad("not-utf8", b'name = "t"\n\xff\n', "file", "not UTF-8"),
    Bad("unknown-key", task(SEND, head='colour = "red"\n' + HEAD), "colour", "unknown key"),
    Bad("name-missing", task(SEND, head=HEAD.replace('name = "t"\n', "")), "name", "required"),
    Bad("name-upper-case", task(SEND, head=HEAD.replace('"t"', '"T"')), "name", "lower-case"),
    Bad("name-not-the-folder", task(SEND, head=HEAD.replace('"t"', '"u"')), "name", "differs from its folder"),
    Bad("drivers-missing", task(SEND, head=HEAD.replace('drivers = ["subprocess"]\n', "")), "drivers", "required"),
    Bad("drivers-empty", task(SEND, head=HEAD.replace('["subprocess"]', "[]")), "drivers", "required"),
    Bad("driver-unknown", task(SEND, head=HEAD.replace('["subprocess"]', '["warp"]')), "drivers", "not a driver"),
    Bad("driver-twice", task(SEND, head=HEAD.replace('["subprocess"]', '["subprocess", "subprocess"]')), "drivers",
        "listed twice"),
    Bad("drivers-string", task(SEND, head=HEAD.replace('["subprocess"]', '"subprocess"')), "drivers", "required"),
    Bad("adapters-string", task(SEND, head='adapters = "http"\n' + HEAD), "adapters", "list of adapter names"),
    Bad("scenario-number", task(SEND, head="scenario = 3\n" + HEAD), "scenario", "must be a file name"),
    Bad("scenario-missing", task(SEND, head='scenario = "other.toml"\n' + HEAD), "scenario", "not found"),
    Bad("description-number", task(SEND, head="description = 3\n" + HEAD), "description", "must be a string"),
    Bad("checks-missing", 'name = "t"\ndrivers = ["subprocess"]\n' + SEND, "checks", "required"),
    Bad("tier-unknown", task(SEND, head=HEAD.replace("mandatory", "urgent")), "checks.urgent", "not a tier"),
    Bad("checks-all-empty", task(SEND, head=HEAD.replace('["C1"]', "[]")), "checks", "required"),
    Bad("tier-string", task(SEND, head=HEAD.replace('["C1"]', '"C1"')), "checks.mandatory", "list of check IDs"),
    Bad("check-unknown", task(SEND, head=HEAD.replace("C1", "C99")), "checks.mandatory", "unknown check 'C99'"),
    Bad("check-twice", task(SEND, head=HEAD + 'advisory = ["C1"]\n'), "checks.advisory", "listed twice"),
    Bad("notes-string", task(SEND, head='notes = "x"\n' + HEAD), "notes", "table of check ID"),
    Bad("note-for-an-absent-check", task(SEND, head=HEAD + '[notes]\nC2 = "why"\n'), "notes.C2",
        "not one of the task's checks"),
    Bad("note-number", task(SEND, head=HEAD + "[notes]\nC1 = 3\n"), "notes.C1", "must say why"),
    Bad("steps-missing", task(), "steps", "at least one [[steps]]"),
    Bad("steps-empty", HEAD.replace("[checks]", "steps = []\n[checks]"), "steps", "at least one [[steps]]"),
    Bad("step-without-do", task('[[steps]]\ntext = "x"\n'), "steps[1]", "each step needs do"),
    Bad("step-unknown", task(step("dance")), "steps[1].do", "is not a step"),
    Bad("send-without-text", task(step("send")), "steps[1].text", "required by 'send'"),
    Bad("send-text-number", task(step("send", text="3")), "steps[1].text", "wrong type int"),
    Bad("send-text-blank", task(step("send", text='"  "')), "steps[1].text", "must say something"),
    Bad("send-text-nul", task(step("send", text='"a\\u0000b"')), "steps[1].text", "NUL"),
    Bad("send-unknown-field", task(step("send", text='"x"', volume="11")), "steps[1].volume", "takes no 'volume'"),
    Bad("send-timeout-nan", task(step("send", text='"x"', timeout="nan")), "steps[1].timeout", "at most 600"),
    Bad("send-timeout-inf", task(step("send", text='"x"', timeout="inf")), "steps[1].timeout", "at most 600"),
    Bad("send-timeout-1e300", task(step("send", text='"x"', timeout="1e300")), "steps[1].timeout", "at most 600"),
    Bad("send-timeout-zero", task(step("send", text='"x"', timeout="0")), "steps[1].timeout", "above 0"),
    Bad("send-timeout-negative", task(step("send", text='"x"', timeout="-1")), "steps[1].timeout", "above 0"),
    Bad("send-timeout-string", task(step("send", text='"x"', timeout='"2"')), "steps[1].timeout", "wrong type str"),
    Bad("send-timeout-on-a-terminal", task(step("send", text='"x"', timeout="2"), head=TERMINAL), "steps[1].timeout",
        "hand one to the agent (subprocess), not terminal"),
    Bad("send-expect-unknown", task(step("send", text='"x"', expect='"maybe"')), "steps[1].expect", "one of"),
    Bad("wait-for-the-moon", task(SEND, step("wait", **{"for": '"moon"'})), "steps[2].for", "not a beacon"),
    Bad("wait-chunk-without-chunk", task(SEND, step("wait", **{"for": '"chunk"', "request": "1"})), "steps[2].chunk",
        "required when waiting for 'chunk'"),
    Bad("wait-request-zero", task(SEND, step("wait", **{"for": '"request"', "request": "0"})), "steps[2].request",
        "numbers start at 1"),
    Bad("wait-request-bool", task(SEND, step("wait", **{"for": '"request"', "request": "true"})),
        "steps[2].request", "wrong type bool"),
    Bad("wait-for-a-window-no-frame-opens", task(SEND, step("wait", **{"for": '"window"', "window": '"w1"'})),
        "steps[2].window", "no frame of the scenario opens window 'w1'"),
    Bad("wait-for-a-chunk-past-the-end", task(SEND, step("wait", **{"for": '"chunk"', "request": "1", "chunk": "9"})),
        "steps[2].chunk", "past the end"),
    Bad("wait-with-a-key-its-beacon-does-not-read",
        task(SEND, step("wait", **{"for": '"request"', "request": "1", "chunk": "1"})), "steps[2].chunk",
        "reads no 'chunk'"),
    Bad("stop-without-wait", task(SEND, step("stop")), "steps[2]", "must follow a 'wait'"),
    Bad("stop-source-unknown", task(SEND, WAIT_REQUEST, step("stop", source='"robot"')), "steps[3].source", "one of"),
    Bad("stop-phase-unknown", task(SEND, WAIT_REQUEST, step("stop", phase='"x"')), "steps[3].phase", "one of"),
    Bad("kill-in-process", task(SEND, WAIT_REQUEST, step("kill"), head=INPROC), "steps[3]", "cannot SIGKILL"),
    Bad("kill-at-unknown", task(SEND, WAIT_REQUEST, step("kill", at='"noon"')), "steps[3].at", "one of"),
    Bad("settle-before-send", task(step("settle")), "steps[1]", "before any 'send'"),
    Bad("damage-kind-unknown", task(SEND, step("damage", kind='"shred"')), "steps[2].kind", "one of"),
    Bad("restart-expect-unknown", task(SEND, step("restart", expect='"maybe"')), "steps[2].expect", "one of"),
    Bad("restart-text-blank", task(SEND, step("restart", text='""')), "steps[2].text", "must say something"),
    Bad("restart-in-process", task(SEND, step("restart"), head=INPROC), "steps[2]", "cannot restart"),
    Bad("queue-headless", task(SEND, step("queue", text='"y"')), "steps[2]", "subprocess driver takes no input while a turn runs"),
    Bad("queue-name-twice", task(SEND, step("queue", text='"a"', **{"as": '"q"'}),
                                 step("queue", text='"b"', **{"as": '"q"'}), head=TERMINAL), "steps[3].as",
        "names an earlier queue step"),
    Bad("cancel-an-unknown-queue-item", task(SEND, step("cancel-queued", item='"q"')), "steps[2].item",
        "names no earlier queue step"),
]
# A broken scenario is named by the task (item "scenario") with the scenario's own file and item.
TASK_SCENARIOS = [
    Bad("scenario-toml-syntax", 'name = "s"\n[[responses]\n', "scenario", "scenario.toml: toml:"),
    Bad("scenario-interval-nan", SCENARIO + "interval_s = nan\n", "scenario",
        "scenario.toml: responses[0].frames[0].interval_s"),
]


# --- scenarios ----------------------------------------------------------------------------


def frame(body: str) -> str:
    return f'name = "s"\n[[responses]]\n[[responses.frames]]\n{body}\n'


def window(fields: str) -> str:
    return frame(f"shell = {{ window = {{ id = \"w\", {fields} }} }}")


F0 = "responses[0].frames[0]"
SCENARIOS = [
    Bad("toml-syntax", 'name = "s"\n[[responses]\n', "toml", ""),
    Bad("not-utf8", b'name = "s"\n\xff\n', "file", "not UTF-8"),
    Bad("name-missing", '[[responses]]\n[[responses.frames]]\ntext = "a"\n', "scenario", "'name' is required"),
    Bad("name-number", frame('text = "a"').replace('name = "s"', "name = 3"), "scenario.name", "non-empty string"),
    Bad("model-number", 'model = 3\n' + frame('text = "a"'), "scenario.model", "non-empty string"),
    Bad("unknown-key", 'bogus = 1\n' + frame('text = "a"'), "scenario", "unknown key(s) bogus"),
    Bad("responses-missing", 'name = "s"\n', "responses", "at least one"),
    Bad("responses-empty", 'name = "s"\nresponses = []\n', "responses", "at least one"),
    Bad("response-not-a-table", 'name = "s"\nresponses = [1]\n', "responses[0]", "must be a table"),
    Bad("response-unknown-key", 'name = "s"\n[[responses]]\nwhen = 1\n[[responses.frames]]\ntext = "a"\n',
        "responses[0]", "unknown key(s) when"),
    Bad("frames-missing", 'name = "s"\n[[responses]]\nrepeat = true\n', "responses[0]", "at least one"),
    Bad("frames-empty", 'name = "s"\n[[responses]]\nframes = []\n', "responses[0]", "at least one"),
    Bad("frame-two-kinds", frame('text = "a"\npause = 1'), F0, "exactly one"),
    Bad("frame-no-kind", frame('txt = "a"'), F0, "found: none"),
    Bad("frame-option-of-another-kind", frame('text = "a"\nretry_after = 1'), F0, "unknown key(s) retry_after"),
    Bad("text-empty", frame('text = ""'), f"{F0}.text", "non-empty string"),
    Bad("text-number", frame("text = 3"), f"{F0}.text", "non-empty string"),
    Bad("chunk-zero", frame('text = "a"\nchunk = 0'), f"{F0}.chunk", ">= 1"),
    Bad("chunk-fraction", frame('text = "a"\nchunk = 1.5'), f"{F0}.chunk", "an integer"),
    Bad("chunk-bool", frame('text = "a"\nchunk = true'), f"{F0}.chunk", "an integer"),
    Bad("interval-nan", frame('text = "a"\ninterval_s = nan'), f"{F0}.interval_s", "from 0 to 600"),
    Bad("interval-inf", frame('text = "a"\ninterval_s = inf'), f"{F0}.interval_s", "from 0 to 600"),
    Bad("interval-1e300", frame('text = "a"\ninterval_s = 1e300'), f"{F0}.interval_s", "from 0 to 600"),
    Bad("interval-negative", frame('text = "a"\ninterval_s = -1'), f"{F0}.interval_s", "from 0 to 600"),
    Bad("interval-string", frame('text = "a"\ninterval_s = "0.1"'), f"{F0}.interval_s", "from 0 to 600"),
    Bad("reasoning-interval-nan", frame('reasoning = "a"\ninterval_s = nan'), f"{F0}.interval_s", "from 0 to 600"),
    Bad("pause-nan", frame("pause = nan"), f"{F0}.pause", "from 0 to 600"),
    Bad("pause-negative", frame("pause = -1"), f"{F0}.pause", "from 0 to 600"),
    Bad("pause-1e300", frame("pause = 1e300"), f"{F0}.pause", "from 0 to 600"),
    Bad("pause-string", frame('pause = "1"'), f"{F0}.pause", "from 0 to 600"),
    Bad("stall-false", frame("stall = false"), f"{F0}.stall", "must be true"),
    Bad("disconnect-number", frame("disconnect = 1"), f"{F0}.disconnect", "must be true"),
    Bad("stall-not-last", frame('stall = true\n[[responses.frames]]\ntext = "a"'), F0, "last frame"),
    Bad("finish-not-last", frame('finish = true\n[[responses.frames]]\ntext = "a"'), F0, "last frame"),
    Bad("error-kind-unknown", frame('error = "oops"'), f"{F0}.error", "must be one of"),
    Bad("error-message-empty", frame('error = "server_error"\nmessage = ""'), f"{F0}.message", "non-empty string"),
    Bad("http-status-unknown", frame("http_error = 418"), f"{F0}.http_error", "must be one of"),
    Bad("http-status-a-float", frame("http_error = 429.0"), f"{F0}.http_error", "must be one of"),
    Bad("shell-table-without-window", frame("shell = { }"), f"{F0}.shell", "'window' is required"),
    Bad("http-error-not-alone", frame('text = "a"\n[[responses.frames]]\nhttp_error = 500'),
        "responses[0].frames[1]", "only frame"),
    Bad("retry-after-minus-inf", frame("http_error = 429\nretry_after = -inf"), f"{F0}.retry_after", "from 0 to 600"),
    Bad("retry-after-nan", frame("http_error = 429\nretry_after = nan"), f"{F0}.retry_after", "from 0 to 600"),
    Bad("finish-reason-unknown", frame('finish = "done"'), f"{F0}.finish", "must be true or one of"),
    Bad("usage-unknown-key", frame("finish = true\nusage = { tokens = 1 }"), f"{F0}.usage", "unknown key(s) tokens"),
    Bad("usage-negative", frame("finish = true\nusage = { input_tokens = -1 }"), f"{F0}.usage.input_tokens", ">= 0"),
    Bad("usage-nan", frame("finish = true\nusage = { output_tokens = nan }"), f"{F0}.usage.output_tokens",
        "an integer"),
    Bad("tool-call-without-name", frame('tool_call = { arguments = "{}" }'), f"{F0}.tool_call", "'name' is required"),
    Bad("tool-call-arguments-not-json", frame('tool_call = { name = "f", arguments = "{" }'),
        f"{F0}.tool_call.arguments", "not valid JSON"),
    Bad("tool-call-arguments-an-array", frame('tool_call = { name = "f", arguments = "[1]" }'),
        f"{F0}.tool_call.arguments", "JSON object"),
    Bad("tool-call-arguments-number", frame('tool_call = { name = "f", arguments = 3 }'),
        f"{F0}.tool_call.arguments", "a table or a JSON object string"),
    Bad("tool-call-unknown-key", frame('tool_call = { name = "f", id = "x" }'), f"{F0}.tool_call", "unknown key(s) id"),
    Bad("shell-empty", frame('shell = ""'), f"{F0}.shell", "non-empty command"),
    Bad("shell-extra-string", frame('shell = "ls"\nextra = "x"'), f"{F0}.extra", "must be a table"),
    Bad("window-id-with-space", window('id = "a b"').replace('id = "w", ', ""), f"{F0}.shell.window.id", "letters"),
    Bad("window-id-missing", frame("shell = { window = { depth = 1 } }"), f"{F0}.shell.window", "'id' is required"),
    Bad("window-hold-nan", window("hold_s = nan"), f"{F0}.shell.window.hold_s", "from 0 to 600"),
    Bad("window-hold-601", window("hold_s = 601"), f"{F0}.shell.window.hold_s", "from 0 to 600"),
    Bad("window-depth-6", window("depth = 6"), f"{F0}.shell.window", "at most 5"),
    Bad("window-fanout-zero", window("fanout = 0"), f"{F0}.shell.window.fanout", ">= 1"),
    Bad("window-depth-fraction", window("depth = 1.5"), f"{F0}.shell.window.depth", "an integer"),
    Bad("window-ignore-term-string", window('ignore_term = "yes"'), f"{F0}.shell.window.ignore_term",
        "true or false"),
    Bad("window-unknown-key", window("size = 3"), f"{F0}.shell.window", "unknown key(s) size"),
    Bad("match-last-unknown", 'name = "s"\n[[responses]]\nmatch = { last = "bot" }\n[[responses.frames]]\ntext = "a"\n',
        "responses[0].match.last", "must be one of"),
    Bad("match-tools-string", 'name = "s"\n[[responses]]\nmatch = { tools = "yes" }\n[[responses.frames]]\n'
                              'text = "a"\n', "responses[0].match.tools", "true or false"),
    Bad("match-contains-empty", 'name = "s"\n[[responses]]\nmatch = { contains = "" }\n[[responses.frames]]\n'
                                'text = "a"\n', "responses[0].match.contains", "non-empty string"),
    Bad("match-unknown-key", 'name = "s"\n[[responses]]\nmatch = { first = "user" }\n[[responses.frames]]\n'
                             'text = "a"\n', "responses[0].match", "unknown key(s) first"),
    Bad("repeat-string", 'name = "s"\n[[responses]]\nrepeat = "yes"\n[[responses.frames]]\ntext = "a"\n',
        "responses[0].repeat", "true or false"),
    Bad("shell-tool-without-name", 'shell_tool = { field = "cmd" }\n' + frame('text = "a"'), "shell_tool",
        "'name' is required"),
    Bad("shell-tool-argv-string", 'shell_tool = { name = "sh", argv = "yes" }\n' + frame('text = "a"'),
        "shell_tool.argv", "true or false"),
    Bad("side-requests-string", 'side_requests = "title"\n' + frame('text = "a"'), "side_requests",
        "array of strings"),
    Bad("side-request-blank", 'side_requests = [" "]\n' + frame('text = "a"'), "side_requests[0]",
        "non-empty string"),
    Bad("shell-fence-not-a-language", 'shell_fence = "ba sh"\n' + frame('text = "a"'), "scenario.shell_fence",
        "fence language"),
    Bad("finish-action-both", 'finish_action = { tool = "done", shell = "exit" }\n' + frame('text = "a"'),
        "finish_action", "exactly one of"),
]


# --- results files (what their loader refuses today) --------------------------------------

RESULTS_HEAD = '{"format": "stopbench-results", "version": 2, '
TASK_JSON = '{"task": "t", "agent": "a", "adapter": "http", "repeat": 1, "status": "ran", '
LATENCY_JSON = '{"latency": "L1", "agent": "a", "adapter": "http", "task": "t", "repeat": 0, "value_ns": '
RESULTS = [
    Bad("truncated", '{"format": "stopbench-results", "vers', "line 1 column 33", "not JSON"),
    Bad("not-utf8", b'{"format": "\xff"}', None, "cannot read"),
    Bad("an-array", "[]", None, "expected a JSON object"),
    Bad("another-format", '{"format": "junit"}', None, "not a stopbench results file"),
    Bad("version-unknown", '{"format": "stopbench-results", "version": 99}', None, "version 99 is not supported"),
    Bad("run-not-an-object", RESULTS_HEAD + '"run": [], "tasks": [], "latencies": []}', None, "'run' must be"),
    Bad("tasks-not-an-array", RESULTS_HEAD + '"run": {}, "tasks": {}, "latencies": []}', None, "'tasks' must be"),
    Bad("latencies-not-an-array", RESULTS_HEAD + '"run": {}, "tasks": [], "latencies": 1}', None,
        "'latencies' must be"),
    Bad("task-without-agent", RESULTS_HEAD + '"run": {}, "tasks": [{"task": "t", "status": "ran"}], "latencies": []}',
        "tasks[0]", "missing field 'agent'"),
    Bad("run-agent-an-object", RESULTS_HEAD + '"run": {"agent": {"name": "a"}}, "tasks": [], "latencies": []}', "run",
        "'agent' must be a string"),
    Bad("repeat-a-word", RESULTS_HEAD + '"run": {}, "tasks": [' + TASK_JSON.replace('"repeat": 1', '"repeat": "one"')
        + '"checks": []}], "latencies": []}', "tasks[0]", "repeat must be an integer"),
    Bad("checks-a-string", RESULTS_HEAD + '"run": {}, "tasks": [' + TASK_JSON + '"checks": "C1"}], "latencies": []}',
        "tasks[0]", "'checks' must be a JSON array"),
    Bad("task-a-number", RESULTS_HEAD + '"run": {}, "tasks": [1], "latencies": []}', "tasks[0]",
        "expected a JSON object"),
    Bad("check-a-number", RESULTS_HEAD + '"run": {}, "tasks": [' + TASK_JSON + '"checks": [3]}], "latencies": []}',
        "tasks[0].checks[0]", "expected a JSON object"),
    Bad("status-unknown", RESULTS_HEAD + '"run": {}, "tasks": [' + TASK_JSON + '"checks": [], "status": "weird"}], '
                                         '"latencies": []}', "tasks[0]", "'weird' is not a valid RunStatus"),
    Bad("latency-a-number", RESULTS_HEAD + '"run": {}, "tasks": [], "latencies": [5]}', "latencies[0]",
        "expected a JSON object"),
    Bad("latency-value-a-string", RESULTS_HEAD + '"run": {}, "tasks": [], "latencies": [' + LATENCY_JSON + '"abc"}]}',
        "latencies[0]", "value_ns must be an integer"),
    Bad("latency-value-nan", RESULTS_HEAD + '"run": {}, "tasks": [], "latencies": [' + LATENCY_JSON + 'NaN}]}',
        "latencies[0]", "value_ns must be an integer"),
]


# --- the tests ----------------------------------------------------------------------------


def _write(path: Path, text: str | bytes) -> bytes:
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _refused(error: DataFileError | ScenarioError | ResultsError, path: Path, case: Bad) -> None:
    """The error names the file, the item and the problem, in one line a person can act on."""
    assert str(error).startswith(f"{path}: "), str(error)
    assert error.item == case.item, str(error)
    assert case.problem in error.problem, str(error)
    assert "Traceback" not in str(error) and "\n" not in str(error)


# Each kind of file read alone: the name it is written under, its loader, the error it raises.
READERS = {
    "profile": ("p.toml", load_profile, DataFileError),
    "scenario": ("scenario.toml", load_scenario, ScenarioError),
    "results": ("results.json", load_results, ResultsError),
}
FILES = ([("profile", c) for c in PROFILES] + [("scenario", c) for c in SCENARIOS]
         + [("results", c) for c in RESULTS])


@pytest.mark.parametrize("kind, case", FILES, ids=[f"{kind}-{c.name}" for kind, c in FILES])
def test_a_malformed_file_is_refused_naming_file_and_item(tmp_path, kind, case):
    name, read, error = READERS[kind]
    path = tmp_path / name
    before = _write(path, case.text)
    with pytest.raises(error) as err:
        read(path)
    _refused(err.value, path, case)
    assert _tree(tmp_path) == {name: before}


@pytest.mark.parametrize("case", TASKS + TASK_SCENARIOS, ids=[c.name for c in TASKS + TASK_SCENARIOS])
def test_a_malformed_task_is_refused_naming_file_and_item(tmp_path, case):
    folder = tmp_path / "t"
    scenario = case.text if case in TASK_SCENARIOS else SCENARIO
    text = task(SEND) if case in TASK_SCENARIOS else case.text
    _write(folder / "task.toml", text)
    _write(folder / "scenario.toml", scenario)
    before = _tree(tmp_path)
    with pytest.raises(DataFileError) as err:
        load_task(folder, known_checks=set(REGISTRY))
    _refused(err.value, folder / "task.toml", case)
    assert _tree(tmp_path) == before


# --- command-line options -----------------------------------------------------------------

BAD_PROFILE = 'name = "b"\n[headless]\ncommand = ["a", "{prompt}"]\nexit_codes = { completd = 0 }\n'
BAD_TASK = task(step("send", text='"x"', timeout="nan"))

OPTIONS = [
    (["run", "--repeat", "0"], "--repeat must be at least 1"),
    (["run", "--jobs", "0"], "--jobs must be at least 1"),
    (["run", "--retries", "-1"], "--retries must be 0 or more"),
    (["run", "--shard", "5/4"], "shard '5/4': need 1 <= i <= n"),
    (["run", "--shard", "x"], "shard must look like i/n"),
    (["run", "--agent", "nosuch"], "nosuch: agent: no built-in profile of that name"),
    (["run", "--agent", "{dir}/missing.toml"], "{dir}/missing.toml: agent: file not found"),
    (["run", "--agent", "{dir}/bad.toml"], "{dir}/bad.toml: headless.exit_codes.completd: 'completd' is not a"),
    (["run", "--agent", "{dir}/unknown-agent.toml"], "{dir}/unknown-agent.toml: agent: 'nosuch' is not an agent"),
    (["run", "--task", "nosuch"], "unknown task 'nosuch'"),
    (["run", "--adapter", "nosuch"], "agent 'reference' has no adapter 'nosuch'"),
    (["run", "--driver", "warp"], "unknown driver 'warp'"),
    (["run", "--tasks-dir", "{dir}/none"], "no tasks found under {dir}/none"),
    (["run", "--tasks-dir", "{dir}/tasks"], "{dir}/tasks/t/task.toml: steps[1].timeout: must be a number"),
    (["list", "--tasks-dir", "{dir}/tasks"], "{dir}/tasks/t/task.toml: steps[1].timeout"),
    (["run", "--failpoint", "x"], "--failpoint needs --mutants"),
    (["run", "--agents", "installed", "--agent", "reference"], "--agents installed chooses the agents itself"),
    (["run", "--resume", "{dir}/missing.json"], "{dir}/missing.json: no such file"),
    (["run", "--repeat", "abc"], "argument --repeat: invalid int value: 'abc'"),
    (["run", "--agents", "all"], "argument --agents: invalid choice: 'all'"),
    (["warp"], "argument COMMAND: invalid choice: 'warp'"),
    (["serve", "--port", "70000"], "argument --port: a port is 0 (any free port) to 65535, not 70000"),
    (["serve", "--port", "-1"], "argument --port: a port is 0"),
    (["serve", "--port", "http"], "argument --port: not a port number: 'http'"),
    (["agents", "doctor", "{dir}/bad.toml"], "{dir}/bad.toml: headless.exit_codes.completd"),
    (["report", "{dir}/missing.json"], "{dir}/missing.json: no such file"),
    (["gate", "--baseline", "{dir}/missing.json"], "{dir}/missing.json: no such file"),
]


@pytest.fixture
def inputs(tmp_path):
    _write(tmp_path / "bad.toml", BAD_PROFILE)
    _write(tmp_path / "unknown-agent.toml", profile('agent = "nosuch"'))
    _write(tmp_path / "tasks" / "t" / "task.toml", BAD_TASK)
    _write(tmp_path / "tasks" / "t" / "scenario.toml", SCENARIO)
    return tmp_path


@pytest.mark.parametrize("argv, message", OPTIONS, ids=[" ".join(a) for a, _ in OPTIONS])
def test_a_bad_option_exits_2_naming_it(inputs, capsys, argv, message):
    before = _tree(inputs)
    argv = [a.replace("{dir}", str(inputs)) for a in argv]
    if argv[0] == "run":
        argv += ["--report-dir", str(inputs / "reports")]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert message.replace("{dir}", str(inputs)) in err and "Traceback" not in err
    assert _tree(inputs) == before


@pytest.mark.parametrize("argv, message", [
    (["run", "--agent", "{dir}/bad.toml"], "'completd' is not a settlement reason"),
    (["serve", "--port", "99999"], "a port is 0 (any free port) to 65535"),
    (["run", "--tasks-dir", "{dir}/tasks"], "steps[1].timeout: must be a number of seconds"),
])
@pytest.mark.slow(reason="starts the real command, a process each")
def test_a_bad_option_to_the_real_command_is_one_line_not_a_traceback(inputs, argv, message):
    argv = [a.replace("{dir}", str(inputs)) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "harness", *argv, *(["--report-dir", str(inputs / "r")]
                                                                     if argv[0] == "run" else [])],
                          capture_output=True, text=True, timeout=60, cwd=inputs)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (inputs / "r").exists()

