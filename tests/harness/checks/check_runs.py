"""Hand-made task runs for the checker tests: each builds a run that keeps the contract and,
given fault names, the same run broken the way one failpoint of the reference agent (or one
kind of real agent) breaks it.
"""

from __future__ import annotations

import base64
import json

from harness.contract import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN
from harness.model import Conventions, WindowObservation
from tests.harness.checks.observations import CANARY, LogBuilder, RunBuilder, call, chat, msg

SYSTEM = msg("system", "You are a coding agent.")
RESUME_NOTE = "Session resumed. Files may have changed since; read them again before editing."
UNKNOWN_TEXT = TOOL_OUTCOME_UNKNOWN + ": the command may have run; verify before retrying."
NOT_STARTED_TEXT = TOOL_NOT_STARTED + ": never ran."
# One real agent's wording for every interrupted call, whatever became of it.
INTERRUPTED = "[Tool execution was interrupted]"


def _faults(given: tuple[str, ...], known: set[str]) -> set[str]:
    unknown = set(given) - known
    assert not unknown, f"unknown fault(s) {unknown}"
    return set(given)


def _first_request(run: RunBuilder, text: str, *, logged: bool = True, wrapping: str = "") -> tuple[list[dict], int]:
    """Turn 1 opens with ``text`` and its model request arrives (on disk first unless not
    ``logged``), the text followed by the agent's own ``wrapping``. Returns the history sent
    and the request's number."""
    run.user(text)
    run.log.event("turn_started", turn=1, input=text, inbox=[])
    history = [SYSTEM, msg("user", text + wrapping)]
    if logged:
        run.log.event("model_request", turn=1, step=1, request=chat(history))
    return history, run.records.request(history)


def _answered_turn(run: RunBuilder, turn: int, history: list[dict], text: str, reply: str) -> list[dict]:
    """A plain completed turn: user text in, assistant reply out. Returns the new history."""
    run.user(text)
    log = run.log
    history = history + [msg("user", text)]
    log.event("turn_started", turn=turn, input=text, inbox=[])
    log.event("model_request", turn=turn, step=1, request=chat(history))
    n = run.records.request(history)
    run.records.response(n, text=reply)
    run.records.stream(n, [reply])
    log.event("assistant_message", turn=turn, step=1, text=reply, tool_calls=[], finish_reason="stop",
              interrupted=False)
    log.event("step_settled", turn=turn, step=1)
    log.event("turn_ended", turn=turn, reason="completed")
    return history + [msg("assistant", reply)]


def stop_in_tool(*faults: str) -> RunBuilder:
    """interrupt-cancel: Stop while bash window w1 runs, then an ordinary follow-up turn."""
    f = _faults(faults, {"tree-survives", "slow-kill", "result-not-aborted", "no-result", "drop-text",
                         "keep-going", "window-after-stop", "double-settle", "no-settle", "error-settle",
                         "no-stop-requested", "exit-0", "no-window", "no-follow-up", "result-not-sent"})
    run = RunBuilder()
    log, rec = run.log, run.records
    history, n1 = _first_request(run, "Run the migration.")
    c1 = call("c1", "python -m fake_server.window --id w1")
    rec.response(n1, text="Running it now.", tool_calls=[c1])
    rec.stream(n1, ["Running ", "it now."])
    log.event("assistant_message", turn=1, step=1, text="" if "drop-text" in f else "Running it now.",
              tool_calls=[c1], finish_reason="tool_calls", interrupted=False)
    log.event("tool_call", turn=1, step=1, call_id="c1", name="bash", arguments={"command": "w1"})
    log.event("tool_started", turn=1, call_id="c1", pid=501, pgid=501)
    if "no-window" not in f:
        rec.window("w1", [501, 502, 503])
    stop = run.stop("tool", window=None if "no-window" in f else "w1", how="signal:SIGINT")
    if "keep-going" in f:
        rec.request(history + [msg("assistant", "Running it now.", [c1]), msg("tool", "aborted", tool_call_id="c1")])
    if "window-after-stop" in f:
        rec.window("w2", [601])
    if "no-stop-requested" not in f:
        log.event("stop_requested", turn=1, source="user")
    if "no-result" not in f:
        log.event("tool_result", turn=1, call_id="c1", output="[aborted]", exit_code=None,
                  aborted="result-not-aborted" not in f)
    log.event("step_settled", turn=1, step=1)
    if "no-settle" not in f:
        if "error-settle" in f:
            log.event("turn_ended", turn=1, reason="error", error="stream read failed")
            run.settle("error")
        else:
            log.event("turn_ended", turn=1, reason="aborted", source="user")
            run.settle("aborted", "user")
    if "double-settle" in f:
        log.event("turn_ended", turn=1, reason="aborted", source="user")
    survivors = ({"pid": 503, "role": "escapee"},) if "tree-survives" in f else ()
    gone = None if survivors else stop.mono_ns + (2_100_000_000 if "slow-kill" in f else 40_000_000)
    if "no-window" not in f:
        run.windows.append(WindowObservation("w1", tuple({"pid": p, "role": "node"} for p in (501, 502, 503)),
                                             stop_ns=stop.mono_ns, gone_ns=gone, survivors=survivors))
    run.exit("stopped", 0 if "exit-0" in f else 3, started_ns=run.inputs[0].mono_ns, ended_ns=run.clock.tick())
    if "no-follow-up" in f:
        return run
    kept = "" if "drop-text" in f else "Running it now."
    history += [msg("assistant", kept, [c1])]
    if "result-not-sent" not in f:
        history += [msg("tool", "[aborted]", tool_call_id="c1")]
    _answered_turn(run, 2, history, "What happened?", "The migration was stopped.")
    return run


def stop_mid_stream(*faults: str) -> RunBuilder:
    """Stop after three chunks of a text stream, then a follow-up that carries the partial text."""
    f = _faults(faults, {"drop-text", "no-flag", "not-carried", "continuation", "error-settle", "not-exercised",
                         "marker", "invented", "no-follow-up", "unseen"})
    run = RunBuilder()
    log, rec = run.log, run.records
    history, n1 = _first_request(run, "Explain the design.")
    rec.response(n1, text="The design has three layers: model, drivers, checks.")
    for k, piece in enumerate(["The design ", "has three ", "layers: "], start=1):
        rec.chunk(n1, k, piece)
    run.stop("stream", request=n1, chunks_seen=None if "unseen" in f else 3, exercised="not-exercised" not in f)
    log.event("stop_requested", turn=1, source="user")
    rec.disconnect(n1, after_chunk=3)
    partial = "" if "drop-text" in f else "The design has three layers: "
    log.event("assistant_message", turn=1, step=1, text=partial, tool_calls=[], finish_reason=None,
              interrupted="no-flag" not in f)
    log.event("step_settled", turn=1, step=1)
    if "error-settle" in f:
        log.event("turn_ended", turn=1, reason="error", error="peer closed connection")
    else:
        log.event("turn_ended", turn=1, reason="aborted", source="user")
    if "no-follow-up" in f:
        return run
    sent = partial + (" [interrupted]" if "marker" in f else " and a fourth layer" if "invented" in f else "")
    if "continuation" in f:
        history.append(msg("assistant", sent))
        run.user("")
        log.event("turn_started", turn=2, input="", inbox=[])
        rec.request(history)
        log.event("turn_ended", turn=2, reason="completed")
        return run
    if "not-carried" not in f:
        history.append(msg("assistant", sent))
    _answered_turn(run, 2, history, "Go on.", "Model, drivers and checks.")
    return run


KILL_IN_TOOL_FAULTS = {"no-repair", "drop-dangling-call", "wrong-marker", "repair-writes-disk", "load-writes",
                       "fork", "no-note", "late-tool-checkpoint", "tree-survives", "writes-on-load", "c1-finished",
                       "c1-finished-but-marked", "same-wording", "declared-wording", "declared-same-wording",
                       "claims-never-ran", "unresumable", "refused-and-quit", "unseen-load", "lost-history",
                       "no-capture", "second-kill", "second-kill-rewrites-repair"}


def kill_in_tool(*faults: str) -> RunBuilder:
    """interrupt-restart: a response with calls c1 (window w1) and c2; SIGKILL as w1 opens;
    restart and follow up. c1 started (TOOL_OUTCOME_UNKNOWN), c2 never did (TOOL_NOT_STARTED)."""
    f = _faults(faults, KILL_IN_TOOL_FAULTS)
    run = RunBuilder()
    log, rec = run.log, run.records
    history, n1 = _first_request(run, "Run the migration.")
    c1, c2 = call("c1", "python -m fake_server.window --id w1"), call("c2", "ls")
    rec.response(n1, text="", tool_calls=[c1, c2])
    rec.stream(n1, [""])
    log.event("assistant_message", turn=1, step=1, text="", tool_calls=[c1, c2], finish_reason="tool_calls",
              interrupted=False)
    kill_bytes = log.to_bytes()  # what the disk holds if the tool call was not yet durable
    log.event("tool_call", turn=1, step=1, call_id="c1", name="bash", arguments={"command": "w1"})
    log.event("tool_started", turn=1, call_id="c1", pid=701, pgid=701)
    rec.window("w1", [701, 702])
    if {"c1-finished", "c1-finished-but-marked"} & f:  # w1 ran to its end and its result is on disk
        rec.window_done("w1", finished=True)
        log.event("tool_result", turn=1, call_id="c1", output="migrated", exit_code=0, aborted=False)
    run.kill("window-opened", window="w1", captured="no-capture" not in f,
             **({"log_bytes": kill_bytes} if "late-tool-checkpoint" in f else {}))
    survivors = ({"pid": 702, "role": "escapee"},) if "tree-survives" in f else ()
    run.windows.append(WindowObservation("w1", ({"pid": 701}, {"pid": 702}), stop_ns=None,
                                         gone_ns=None if survivors else run.clock.tick(), survivors=survivors))
    before = log.to_bytes()
    run.restart(after_load=before + b"x" if "load-writes" in f else None if "unseen-load" in f else before)
    if "unresumable" in f:
        run.user("What happened to the migration?")
        gone = run.exit("completed", 1, role="resume", stderr_tail="Error: No conversation found with session ID "
                        "s-test\n")
        run.fail("request 2", "the agent exited 1", after_restart=True, exit=gone)
        return run
    if "repair-writes-disk" in f:
        log.event("tool_result", turn=1, call_id="c1", output=UNKNOWN_TEXT, exit_code=None, aborted=False)
        log.event("turn_ended", turn=1, reason="interrupted")
    if "writes-on-load" in f:
        log.event("tool_result", turn=1, call_id="c1", output="interrupted by a crash", exit_code=None, aborted=True)
    if "lost-history" in f:  # the restarted agent rewrote its log from its own memory, losing a line
        del log.lines[2]
        log.lines[2:] = [json.dumps({**json.loads(line), "seq": seq}).encode()
                         for seq, line in enumerate(log.lines[2:], start=2)]
        log.seq -= 1
    run.user("What happened to the migration?")
    if "fork" in f:
        run.log = log = LogBuilder(run.clock, session_id="s-fork")
        follow = [SYSTEM, msg("user", "What happened to the migration?")]
        turn = 1
    else:
        c1_text, c2_text = UNKNOWN_TEXT, NOT_STARTED_TEXT
        if "wrong-marker" in f:
            c1_text = "TOOL_FAILED: interrupted"
        if "c1-finished" in f:
            c1_text = "migrated"
        if "late-tool-checkpoint" in f or "claims-never-ran" in f:  # as the agent sees it: c1 never started
            c1_text = NOT_STARTED_TEXT
        if {"same-wording", "declared-same-wording"} & f:
            c1_text = c2_text = INTERRUPTED
        if "declared-wording" in f:
            c1_text, c2_text = "[outcome unknown: verify first]", "[not started]"
            run.conventions = Conventions(repair_outcome_unknown="[outcome unknown", repair_not_started="[not started")
        if "declared-same-wording" in f:
            run.conventions = Conventions(repair_outcome_unknown=INTERRUPTED, repair_not_started=INTERRUPTED)
        repaired = [msg("assistant", "", [c1, c2])]
        if "drop-dangling-call" in f:
            repaired = []
        elif "no-repair" not in f and "refused-and-quit" not in f:
            repaired += [msg("tool", c1_text, tool_call_id="c1"), msg("tool", c2_text, tool_call_id="c2")]
        note = [] if "no-note" in f else [msg("user", RESUME_NOTE)]
        follow = history + repaired + note + [msg("user", "What happened to the migration?")]
        turn = 2
    log.event("turn_started", turn=turn, input="What happened to the migration?", inbox=[])
    if "no-note" not in f and "fork" not in f:
        log.event("session_resumed", turn=turn, gap_s=0.5, note=RESUME_NOTE)
    log.event("model_request", turn=turn, step=1, request=chat(follow))
    refused = {"no-repair", "refused-and-quit"} & f
    n2 = rec.request(follow, **({"status": 400, "error": "An assistant message with 'tool_calls' must be followed by "
                                 "tool messages responding to each 'tool_call_id'. The following tool_call_ids did "
                                 "not have response messages: c1, c2"} if refused else {}))
    if "refused-and-quit" in f:
        gone = run.exit("completed", 1, role="resume", stderr_tail="Error: 400 tool_call_ids did not have response "
                        "messages: c1, c2\n")
        run.fail("request 3", f"the server refused request {n2}: unbalanced history, and the agent exited 1",
                 after_restart=True, exit=gone)
        return run
    rec.response(n2, text="It may have run.")
    rec.stream(n2, ["It may have run."])
    log.event("assistant_message", turn=turn, step=1, text="It may have run.", tool_calls=[], finish_reason="stop",
              interrupted=False)
    log.event("step_settled", turn=turn, step=1)
    log.event("turn_ended", turn=turn, reason="completed")
    if {"second-kill", "second-kill-rewrites-repair"} & f:  # interrupt-restart's second half: a kill mid-stream
        history = follow + [msg("assistant", "It may have run.")]
        run.user("Now write the release notes.")
        log.event("turn_started", turn=3, input="Now write the release notes.", inbox=[])
        notes = history + [msg("user", "Now write the release notes.")]
        log.event("model_request", turn=3, step=1, request=chat(notes))
        n3 = rec.request(notes)
        rec.response(n3, text="Writing the release notes, one line at a time.")
        rec.chunk(n3, 1, "Writing ")
        run.kill("chunk-flushed", request=n3)
        run.restart()
        run.user("Crashed again. Carry on.")
        if "second-kill-rewrites-repair" in f:  # the earlier repair of c2 is "repaired" again, as unknown
            notes = [m if m.get("tool_call_id") != "c2" else msg("tool", UNKNOWN_TEXT, tool_call_id="c2")
                     for m in notes]
        again = notes + [msg("user", RESUME_NOTE), msg("user", "Crashed again. Carry on.")]
        log.event("turn_started", turn=4, input="Crashed again. Carry on.", inbox=[])
        log.event("session_resumed", turn=4, gap_s=0.5, note=RESUME_NOTE)
        log.event("model_request", turn=4, step=1, request=chat(again))
        n4 = rec.request(again)
        rec.response(n4, text="Picking up where we left off.")
        log.event("assistant_message", turn=4, step=1, text="Picking up where we left off.", tool_calls=[],
                  finish_reason="stop", interrupted=False)
        log.event("step_settled", turn=4, step=1)
        log.event("turn_ended", turn=4, reason="completed")
    return run


def kill_at_request(*faults: str) -> RunBuilder:
    """SIGKILL as request 1 arrives: its model_request must already be on disk; then a restart
    whose first request carries the user's message."""
    f = _faults(faults, {"no-request-checkpoint", "no-restart", "lost-message", "wrapped-message"})
    run = RunBuilder()
    history, n1 = _first_request(run, "Build the project.", logged="no-request-checkpoint" not in f,
                                 wrapping="\n\n# Edit rules: reply with blocks." if "wrapped-message" in f else "")
    run.kill("request-received", request=n1)
    if "no-restart" in f:
        return run
    run.restart()
    run.user("Carry on.")
    kept = [] if "lost-message" in f else [msg("user", "Build the project.")]
    follow = [SYSTEM, *kept, msg("user", RESUME_NOTE), msg("user", "Carry on.")]
    run.log.event("turn_started", turn=2, input="Carry on.", inbox=[])
    run.log.event("session_resumed", turn=2, gap_s=0.5, note=RESUME_NOTE)
    run.log.event("model_request", turn=2, step=1, request=chat(follow))
    n2 = run.records.request(follow)
    run.records.response(n2, text="Building.")
    run.log.event("assistant_message", turn=2, step=1, text="Building.", tool_calls=[], finish_reason="stop",
                  interrupted=False)
    run.log.event("step_settled", turn=2, step=1)
    run.log.event("turn_ended", turn=2, reason="completed")
    return run


def kill_at_next_request(*faults: str) -> RunBuilder:
    """SIGKILL as request 2 (after a settled tool step) arrives: step 1 must be on disk."""
    f = _faults(faults, {"no-step-settled", "no-result"})
    run = RunBuilder()
    log, rec = run.log, run.records
    history, n1 = _first_request(run, "Build the project.")
    c1 = call("c1", "make")
    rec.response(n1, text="Building.", tool_calls=[c1])
    rec.stream(n1, ["Building."])
    log.event("assistant_message", turn=1, step=1, text="Building.", tool_calls=[c1], finish_reason="tool_calls",
              interrupted=False)
    log.event("tool_call", turn=1, step=1, call_id="c1", name="bash", arguments={"command": "make"})
    if "no-result" not in f:
        log.event("tool_result", turn=1, call_id="c1", output="ok", exit_code=0, aborted=False)
    if "no-step-settled" not in f:
        log.event("step_settled", turn=1, step=1)
    history += [msg("assistant", "Building.", [c1]), msg("tool", "ok", tool_call_id="c1")]
    log.event("model_request", turn=1, step=2, request=chat(history))
    n2 = rec.request(history)
    run.kill("next-request", request=n2)
    return run


def torn_tail_restart(*faults: str) -> RunBuilder:
    """A completed turn, a torn last line written by the task, a restart and a new turn."""
    f = _faults(faults, {"no-torn-record", "wrong-offset", "rewrites-line"})
    run = RunBuilder()
    history = _answered_turn(run, 1, [SYSTEM], "Say hello.", "Hello.")
    torn = b'{"seq": 6, "type": "tool_res'
    clean = run.log.to_bytes()
    run.restart(damage="torn-tail", before=clean + torn, after_load=clean + torn)
    if "rewrites-line" in f:
        run.log.lines[1] = run.log.lines[1].replace(b'"Say hello."', b'"Say hi."')
    if "no-torn-record" not in f:
        offset = len(clean) + (1 if "wrong-offset" in f else 0)
        run.log.event("torn_tail_dropped", offset=offset, dropped=base64.b64encode(torn).decode())
    _answered_turn(run, 2, history, "Again.", "Hello again.")
    return run


def mid_file_refusal(*faults: str) -> RunBuilder:
    """The task damages line 3; the restart must exit 2 naming file and line, writing nothing."""
    f = _faults(faults, {"accepted", "unnamed", "file-changed", "unseen"})
    run = RunBuilder()
    _answered_turn(run, 1, [SYSTEM], "Say hello.", "Hello.")
    run.log.lines[2] = b'{"seq": \x00 not json'  # the store stays damaged: the final capture is refused too
    damaged = run.log.to_bytes()
    run.restart(damage="mid-file", damage_line=3, damage_where="line 3", before=damaged,
                after_load=None if "unseen" in f else damaged + b"{}\n" if "file-changed" in f else damaged)
    stderr = "refagent: error" if "unnamed" in f else "refagent: s-test.jsonl:3: unreadable line (not JSON)"
    run.exit("refused", 0 if "accepted" in f else 2, role="resume", stderr_tail=stderr)
    return run


def timeout_run(*faults: str) -> RunBuilder:
    """`run --timeout 2` while window w1 holds: exit 3 about 2 s after start, turn interrupted."""
    f = _faults(faults, {"exit-1", "overshoot", "early", "tree-survives", "not-aborted", "exit-0"})
    run = RunBuilder()
    log, rec = run.log, run.records
    started = run.clock.tick()
    _, n1 = _first_request(run, "Run the long job.")
    c1 = call("c1", "python -m fake_server.window --id w1")
    rec.response(n1, tool_calls=[c1])
    rec.stream(n1, [""])
    log.event("assistant_message", turn=1, step=1, text="", tool_calls=[c1], finish_reason="tool_calls",
              interrupted=False)
    log.event("tool_call", turn=1, step=1, call_id="c1", name="bash", arguments={"command": "w1"})
    rec.window("w1", [801, 802])
    log.event("stop_requested", turn=1, source="timeout")
    log.event("tool_result", turn=1, call_id="c1", output="[timed out]", exit_code=None, aborted="not-aborted" not in f)
    log.event("step_settled", turn=1, step=1)
    log.event("turn_ended", turn=1, reason="interrupted")
    survivors = ({"pid": 802, "role": "term-ignorer"},) if "tree-survives" in f else ()
    run.windows.append(WindowObservation("w1", ({"pid": 801}, {"pid": 802}), None, None, survivors))
    run_s = {"overshoot": 5.6, "early": 1.2}.get(next(iter(f & {"overshoot", "early"}), ""), 2.3)
    code = 1 if "exit-1" in f else 0 if "exit-0" in f else 3
    run.exit("timeout", code, started_ns=started, ended_ns=started + int(run_s * 1e9), timeout_s=2.0)
    return run


def headless_runs(*faults: str) -> RunBuilder:
    """exit-codes: a completed run, a run the provider refuses, and a stopped run, each headless."""
    f = _faults(faults, {"max-tokens", "exit-130", "stopped-exit-0", "error-exit-0", "declared-130", "died-by-sigint",
                         "declared-1-for-both", "exit-130-open"})
    run = RunBuilder()
    _, n1 = _first_request(run, "Say hello.")
    run.records.response(n1, text="Hello.")
    reason = "max_tokens" if "max-tokens" in f else "completed"
    run.log.event("assistant_message", turn=1, step=1, text="Hello.", tool_calls=[],
                  finish_reason="length" if "max-tokens" in f else "stop", interrupted=False)
    run.log.event("step_settled", turn=1, step=1)
    run.log.event("turn_ended", turn=1, reason=reason)
    run.exit("completed", 2 if "max-tokens" in f else 0, started_ns=run.inputs[0].mono_ns, pid=5001)
    run.user("Now do something the provider refuses.")
    run.log.event("turn_started", turn=2, input="Now do something the provider refuses.", inbox=[])
    run.records.request([SYSTEM, msg("user", "Now do something the provider refuses.")], status=400,
                        error="The request was refused on purpose by the scenario.", parsed=True)
    run.log.event("turn_ended", turn=2, reason="error", error="400 refused")
    declared_error = {"declared-130", "declared-1-for-both"} & f
    run.exit("error", 0 if "error-exit-0" in f else 1 if declared_error else 2, started_ns=run.inputs[1].mono_ns,
             pid=5002)
    run.user("Write a long essay.")
    run.log.event("turn_started", turn=3, input="Write a long essay.", inbox=[])
    run.stop("stream", how="signal:SIGINT", chunks_seen=0)
    run.log.event("stop_requested", turn=3, source="user")
    if not {"died-by-sigint", "exit-130-open"} & f:  # a process that dies of the signal settles nothing
        run.log.event("turn_ended", turn=3, reason="aborted", source="user")
    code = 0 if "stopped-exit-0" in f else 130 if {"exit-130", "declared-130", "exit-130-open"} & f else \
        1 if "declared-1-for-both" in f else None if "died-by-sigint" in f else 3
    run.exit("stopped", code, started_ns=run.inputs[2].mono_ns, pid=5003,
             signal=2 if "died-by-sigint" in f else None)
    if "declared-130" in f:
        run.conventions = Conventions(exit_codes={"completed": 0, "error": 1, "blocked": 1, "max_tokens": 1,
                                                  "aborted": 130, "interrupted": 130})
    if "declared-1-for-both" in f:
        run.conventions = Conventions(exit_codes={"completed": 0, "error": 1, "aborted": 1, "interrupted": 1})
    return run


def inbox_run(*faults: str) -> RunBuilder:
    """Two items queued during turn 1, the second withdrawn; turn 2 delivers the first."""
    f = _faults(faults, {"lose", "vanish", "cancel-unasked", "canceled-but-sent", "no-cancel-record", "pending",
                         "unlisted", "not-sent"})
    run = RunBuilder()
    log, rec = run.log, run.records
    run.user("Run the checks.")
    log.event("turn_started", turn=1, input="Run the checks.", inbox=[])
    history = [SYSTEM, msg("user", "Run the checks.")]
    n1 = rec.request(history)
    rec.response(n1, text="Checking.")
    run.user("Also look at the logs.", queued=True)
    run.user("And delete the cache.", queued=True)
    if "lose" not in f:
        log.event("inbox_queued", item_id="q1", text="Also look at the logs.")
    log.event("inbox_queued", item_id="q2", text="And delete the cache.")
    if "cancel-unasked" not in f and "no-cancel-record" not in f:
        run.user("/cancel q2", queued=True)
    if "cancel-unasked" in f:
        run.user("/cancel q9", queued=True)
    log.event("inbox_canceled", item_id="q2")
    log.event("turn_ended", turn=1, reason="completed")
    if "pending" in f:
        return run
    run.user("Carry on.")
    delivered = not ({"lose", "vanish"} & f)
    log.event("turn_started", turn=2, input="Carry on.", inbox=["q1"] if delivered and "unlisted" not in f else [])
    if delivered:
        log.event("inbox_delivered", item_id="q1", turn=2)
    texts = ["Also look at the logs.\nCarry on."] if delivered and "not-sent" not in f else ["Carry on."]
    if "canceled-but-sent" in f:
        texts.append("And delete the cache.")
    rec.request(history + [msg("assistant", "Checking.")] + [msg("user", t) for t in texts])
    log.event("turn_ended", turn=2, reason="completed")
    return run


def leaky_run(where: str) -> RunBuilder:
    """A completed turn whose agent leaked the canary key into ``where``."""
    run = RunBuilder()
    if where == "header":
        run.log = LogBuilder(run.clock, api_key=CANARY)
    _answered_turn(run, 1, [SYSTEM], "Say hello.", "Hello.")
    return run
