"""Hand-made task runs for the checker tests: each builds a run that keeps the contract and,
given fault names, the same run broken the way one failpoint of the reference agent breaks it.
"""

from __future__ import annotations

import base64

from harness.checks.testing import CANARY, RunBuilder, call, chat, msg
from harness.model import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, WindowObservation

SYSTEM = msg("system", "You are a coding agent.")
RESUME_NOTE = "Session resumed. Files may have changed since; read them again before editing."


def _faults(given: tuple[str, ...], known: set[str]) -> set[str]:
    unknown = set(given) - known
    assert not unknown, f"unknown fault(s) {unknown}"
    return set(given)


def _first_request(run: RunBuilder, text: str, *, logged: bool = True) -> tuple[list[dict], int]:
    """Turn 1 opens with ``text`` and its model request arrives (on disk first unless not
    ``logged``). Returns the history sent and the request's number."""
    run.user(text)
    run.log.event("turn_started", turn=1, input=text, inbox=[])
    history = [SYSTEM, msg("user", text)]
    if logged:
        run.log.event("model_request", turn=1, step=1, request=chat(history))
    return history, run.records.request(history)


def _answered_turn(run: RunBuilder, turn: int, history: list[dict], text: str, reply: str) -> list[dict]:
    """A plain completed turn: user text in, assistant reply out. Returns the new history."""
    run.user(text)
    log = run.log
    history = history + [msg("user", text)]
    log.event("turn_started", turn=turn, input=text, inbox=[])
    log.event("model_request", turn=turn, step=1, request={"messages": [], "model": "m", "tools": [], "stream": True})
    n = run.records.request(history)
    run.records.response(n, text=reply)
    run.records.stream(n, [reply])
    log.event("assistant_message", turn=turn, step=1, text=reply, tool_calls=[], finish_reason="stop", interrupted=False)
    log.event("step_settled", turn=turn, step=1)
    log.event("turn_ended", turn=turn, reason="completed")
    return history + [msg("assistant", reply)]


def stop_in_tool(*faults: str) -> RunBuilder:
    """interrupt-cancel: Stop while bash window w1 runs, then an ordinary follow-up turn."""
    f = _faults(faults, {"tree-survives", "slow-kill", "result-not-aborted", "no-result", "drop-text",
                         "keep-going", "window-after-stop", "double-settle", "no-settle", "error-settle",
                         "no-stop-requested", "exit-0"})
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
    rec.window("w1", [501, 502, 503])
    stop = run.stop("tool", window="w1", how="signal:SIGINT")
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
        else:
            log.event("turn_ended", turn=1, reason="aborted", source="user")
    if "double-settle" in f:
        log.event("turn_ended", turn=1, reason="aborted", source="user")
    survivors = ({"pid": 503, "role": "escapee"},) if "tree-survives" in f else ()
    gone = None if survivors else stop.mono_ns + (2_100_000_000 if "slow-kill" in f else 40_000_000)
    run.windows.append(WindowObservation("w1", tuple({"pid": p, "role": "node"} for p in (501, 502, 503)),
                                         stop_ns=stop.mono_ns, gone_ns=gone, survivors=survivors))
    run.exit("stopped", 0 if "exit-0" in f else 3, started_ns=run.inputs[0].mono_ns, ended_ns=run.clock.tick())
    kept = "" if "drop-text" in f else "Running it now."
    history += [msg("assistant", kept, [c1]), msg("tool", "[aborted]", tool_call_id="c1")]
    _answered_turn(run, 2, history, "What happened?", "The migration was stopped.")
    return run


def stop_mid_stream(*faults: str) -> RunBuilder:
    """Stop after three chunks of a text stream, then a follow-up that carries the partial text."""
    f = _faults(faults, {"drop-text", "no-flag", "not-carried", "continuation", "error-settle", "not-exercised"})
    run = RunBuilder()
    log, rec = run.log, run.records
    history, n1 = _first_request(run, "Explain the design.")
    rec.response(n1, text="The design has three layers: model, drivers, checks.")
    for k, piece in enumerate(["The design ", "has three ", "layers: "], start=1):
        rec.chunk(n1, k, piece)
    run.stop("stream", request=n1, chunks_seen=3, exercised="not-exercised" not in f)
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
    if "continuation" in f:
        history.append(msg("assistant", partial))
        run.user("")
        log.event("turn_started", turn=2, input="", inbox=[])
        rec.request(history)
        log.event("turn_ended", turn=2, reason="completed")
        return run
    if "not-carried" not in f:
        history.append(msg("assistant", partial))
    _answered_turn(run, 2, history, "Go on.", "Model, drivers and checks.")
    return run


def kill_in_tool(*faults: str) -> RunBuilder:
    """interrupt-restart: a response with calls c1 (window w1) and c2; SIGKILL as w1 opens;
    restart and follow up. c1 started (TOOL_OUTCOME_UNKNOWN), c2 never did (TOOL_NOT_STARTED)."""
    f = _faults(faults, {"no-repair", "drop-dangling-call", "wrong-marker", "repair-writes-disk", "load-writes",
                         "fork", "no-note", "late-tool-checkpoint", "tree-survives", "writes-on-load",
                         "c1-finished", "c1-finished-but-marked"})
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
    run.kill("window-opened", window="w1", **({"log_bytes": kill_bytes} if "late-tool-checkpoint" in f else {}))
    survivors = ({"pid": 702, "role": "escapee"},) if "tree-survives" in f else ()
    run.windows.append(WindowObservation("w1", ({"pid": 701}, {"pid": 702}), stop_ns=None,
                                         gone_ns=None if survivors else run.clock.tick(), survivors=survivors))
    before = log.to_bytes()
    run.restart(bytes_after_load=before + b"x" if "load-writes" in f else None)
    if "repair-writes-disk" in f:
        log.event("tool_result", turn=1, call_id="c1", output=TOOL_OUTCOME_UNKNOWN + ": unknown", exit_code=None,
                  aborted=False)
        log.event("turn_ended", turn=1, reason="interrupted")
    if "writes-on-load" in f:
        log.event("tool_result", turn=1, call_id="c1", output="interrupted by a crash", exit_code=None, aborted=True)
    run.user("What happened to the migration?")
    if "fork" in f:
        from harness.checks.testing import LogBuilder
        run.log = log = LogBuilder(run.clock, session_id="s-fork")
        follow = [SYSTEM, msg("user", "What happened to the migration?")]
        turn = 1
    else:
        unknown_text = ("TOOL_FAILED: interrupted" if "wrong-marker" in f
                        else "migrated" if "c1-finished" in f
                        else TOOL_NOT_STARTED + ": never ran." if "late-tool-checkpoint" in f  # as the agent sees it
                        else TOOL_OUTCOME_UNKNOWN + ": the command may have run; verify before retrying.")
        repaired = [msg("assistant", "", [c1, c2])]
        if "drop-dangling-call" in f:
            repaired = []
        elif "no-repair" not in f:
            repaired += [msg("tool", unknown_text, tool_call_id="c1"),
                         msg("tool", TOOL_NOT_STARTED + ": never ran.", tool_call_id="c2")]
        note = [] if "no-note" in f else [msg("user", RESUME_NOTE)]
        follow = history + repaired + note + [msg("user", "What happened to the migration?")]
        turn = 2
    log.event("turn_started", turn=turn, input="What happened to the migration?", inbox=[])
    if "no-note" not in f and "fork" not in f:
        log.event("session_resumed", turn=turn, gap_s=0.5, note=RESUME_NOTE)
    log.event("model_request", turn=turn, step=1, request={"messages": [], "model": "m", "tools": [], "stream": True})
    n2 = rec.request(follow, **({"status": 400, "error": "tool_call_ids did not have response messages"}
                                if "no-repair" in f else {}))
    rec.response(n2, text="It may have run.")
    rec.stream(n2, ["It may have run."])
    log.event("assistant_message", turn=turn, step=1, text="It may have run.", tool_calls=[], finish_reason="stop",
              interrupted=False)
    log.event("step_settled", turn=turn, step=1)
    log.event("turn_ended", turn=turn, reason="completed")
    return run


def kill_at_request(*faults: str) -> RunBuilder:
    """SIGKILL as request 1 arrives: its model_request must already be on disk."""
    f = _faults(faults, {"no-request-checkpoint"})
    run = RunBuilder()
    _, n1 = _first_request(run, "Build the project.", logged="no-request-checkpoint" not in f)
    run.kill("request-received", request=n1)
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
    run.restart(damage="torn-tail", bytes_before=clean + torn, bytes_after_load=clean + torn)
    if "rewrites-line" in f:
        run.log.lines[1] = run.log.lines[1].replace(b'"Say hello."', b'"Say hi."')
    if "no-torn-record" not in f:
        offset = len(clean) + (1 if "wrong-offset" in f else 0)
        run.log.event("torn_tail_dropped", offset=offset, dropped=base64.b64encode(torn).decode())
    _answered_turn(run, 2, history, "Again.", "Hello again.")
    return run


def mid_file_refusal(*faults: str) -> RunBuilder:
    """The task damages line 3; the restart must exit 2 naming file and line, writing nothing."""
    f = _faults(faults, {"accepted", "unnamed", "file-changed"})
    run = RunBuilder()
    _answered_turn(run, 1, [SYSTEM], "Say hello.", "Hello.")
    lines = run.log.to_bytes().split(b"\n")
    lines[2] = b'{"seq": \x00 not json'
    damaged = b"\n".join(lines)
    run.restart(damage="mid-file", damage_line=3, bytes_before=damaged,
                bytes_after_load=damaged + b"{}\n" if "file-changed" in f else damaged)
    stderr = "refagent: error" if "unnamed" in f else "refagent: s-test.jsonl:3: unreadable line (not JSON)"
    run.exit("refused", 0 if "accepted" in f else 2, role="resume", stderr_tail=stderr)
    return run


def timeout_run(*faults: str) -> RunBuilder:
    """`run --timeout 2` while window w1 holds: exit 3 about 2 s after start, turn interrupted."""
    f = _faults(faults, {"exit-1", "overshoot", "early", "tree-survives", "not-aborted"})
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
    run.exit("timeout", 1 if "exit-1" in f else 3, started_ns=started, ended_ns=started + int(run_s * 1e9),
             timeout_s=2.0)
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
        from harness.checks.testing import LogBuilder
        run.log = LogBuilder(run.clock, api_key=CANARY)
    _answered_turn(run, 1, [SYSTEM], "Say hello.", "Hello.")
    return run
