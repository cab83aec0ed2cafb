"""The registry, the safe wrapper, the reader seam, and what log checks say when there is no
readable log."""

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from fake_server.records import Request, Response
from harness.checks import REGISTRY, get_check, run_check, run_checks
from harness.checks.base import CheckSpec, check
from harness.contract import CHECK_IDS, CHECKS, Observes
from harness.model import Capability, Observation, Outcome, Tier, verdict_of
from tests.harness.checks.observations import Clock, LogBuilder, RunBuilder

from .check_runs import kill_at_request, kill_in_tool, stop_in_tool

LOG_ONLY = ["C1", "C2", "C10"]
CHECKS_DIR = Path(__file__).parents[3] / "harness" / "checks"


def test_registry_is_the_contracts_table_in_its_order():
    assert list(REGISTRY) == list(CHECK_IDS)
    for info in CHECKS:
        spec = REGISTRY[info.id]
        assert (spec.name, spec.observes) == (info.name, info.observes)
        assert spec.tier is (Tier.ADVISORY if info.advisory else Tier.MANDATORY)
        assert spec.fn.__name__ == info.name and spec.fn.__doc__
    assert {k for k, s in REGISTRY.items() if s.observes is Observes.BLACK_BOX} == {"C8", "C9", "C13", "A2", "A3"}
    assert {k for k, s in REGISTRY.items() if s.observes is Observes.LOG} == set(LOG_ONLY)
    assert get_check("stop_means_stop") is REGISTRY["C9"]
    with pytest.raises(KeyError, match="unknown check 'C99'"):
        get_check("C99")


def test_a_checker_must_carry_the_name_the_contract_gives_and_register_once():
    with pytest.raises(ValueError, match="must be named turn_ends_exactly_once, not <lambda>"):
        check("C1")(lambda obs: None)  # type: ignore[arg-type, return-value]

    def turn_ends_exactly_once(obs):
        raise AssertionError

    with pytest.raises(ValueError, match="check C1 registered twice"):
        check("C1")(turn_ends_exactly_once)
    with pytest.raises(KeyError, match="unknown check 'C99'"):
        check("C99")


def test_no_checker_imports_a_reader_or_reads_a_store():
    """The reader seam: checkers see parsed logs and ask ``obs.log_format``; none imports a
    reader, reads a snapshot's bytes, or indexes a record outside the views."""
    for path in sorted(CHECKS_DIR.glob("*.py")):
        if path.name == "testing.py":  # the test builders capture through the real reader
            continue
        source = path.read_text()
        tree = ast.parse(source)
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not any(m and m.startswith("harness.readers") for m in imported), path.name
        assert "contract_v1" not in source and "read_contract_v1" not in source, path.name
        assert "snapshot.data" not in source and ".snapshot.data" not in source, path.name  # snapshots are opaque
        if path.name != "views.py":
            subscripts = [n for n in ast.walk(tree) if isinstance(n, ast.Subscript)
                          and isinstance(n.slice, ast.Constant) and n.slice.value in ("mono_ns", "request", "window")]
            assert not subscripts, f"{path.name}: record fields are read in views.py only"


def test_wrapper_stamps_name_tier_and_the_deciding_half():
    result = run_check("C9", stop_in_tool().observation(), tier=Tier.INFORMATIONAL)
    assert (result.check, result.name, result.tier, result.outcome, result.decided_by.value) == (
        "C9", "stop_means_stop", Tier.INFORMATIONAL, Outcome.PASS, "black-box")
    results = run_checks(stop_in_tool().observation(), {"C1": Tier.MANDATORY, "A2": Tier.ADVISORY})
    assert [(r.check, r.tier) for r in results] == [("C1", Tier.MANDATORY), ("A2", Tier.ADVISORY)]
    assert run_check("C1", stop_in_tool().observation()).decided_by.value == "log"
    assert len(run_checks(stop_in_tool().observation())) == len(REGISTRY)


def test_a_checker_that_raises_is_unknown_never_pass():
    def broken(obs: Observation):
        raise RuntimeError("evidence is inconsistent")

    spec = CheckSpec("C9", "stop_means_stop", Observes.BLACK_BOX, Tier.MANDATORY, broken)
    result = run_check(spec, stop_in_tool().observation())
    assert result.outcome is Outcome.UNKNOWN and result.decided_by is None
    assert result.evidence.summary == "checker stop_means_stop raised RuntimeError: evidence is inconsistent"
    assert "in broken" in result.evidence.items[0]["traceback"][-1]


def test_a_malformed_record_never_reaches_a_checker():
    """Records are typed where they are made: one missing the fields of its kind is refused
    there, naming them, so no checker ever judges half a record."""
    from fake_server.records import Record, RecordError

    with pytest.raises(RecordError, match="missing field.*api"):
        Record.from_json({"kind": "request", "request": 9})


def test_a_checker_returning_something_else_is_unknown():
    spec = CheckSpec("C1", "turn_ends_exactly_once", Observes.LOG, Tier.MANDATORY, lambda obs: "pass")
    assert run_check(spec, stop_in_tool().observation()).outcome is Outcome.UNKNOWN


@pytest.mark.parametrize("check_id", LOG_ONLY)
def test_log_checks_without_a_reader_are_unknown_for_want_of_one(check_id):
    result = run_check(check_id, kill_in_tool().observation(black_box=True))
    assert result.outcome is Outcome.UNKNOWN and "no log reader" in result.evidence.summary
    assert result.needs_reader


def test_a_black_box_agent_that_keeps_the_contract_is_conformant_black_box():
    """Every mandatory check decidable without a reader passes; the rest are unknown only for
    want of a reader."""
    results = run_checks(stop_in_tool().observation(black_box=True),
                         {c: Tier.MANDATORY for c in ("C1", "C3", "C5", "C9", "C12", "C13")})
    assert {r.check: r.outcome.value for r in results} == {"C1": "unknown", "C3": "pass", "C5": "pass", "C9": "pass",
                                                            "C12": "pass", "C13": "pass"}
    assert verdict_of(results).value == "conformant (black-box)"
    with_log = run_checks(stop_in_tool().observation(), {c: Tier.MANDATORY for c in ("C1", "C3", "C5")})
    assert verdict_of(with_log).value == "conformant"


def test_a_store_lacking_a_capability_is_unknown_naming_it_never_a_fail():
    @dataclasses.dataclass(frozen=True)
    class Poorer:
        """The contract-v1 reader, for a store that does not record turn ends."""

        inner: object
        name: str = "no-turn-ends"
        capabilities: frozenset = frozenset(Capability) - {Capability.TURN_ENDS}

        def __getattr__(self, attr):
            return getattr(self.inner, attr)

    run = stop_in_tool("double-settle")  # would fail C1 on a store that records turn ends
    obs = run.observation()
    poorer = dataclasses.replace(obs, log_format=Poorer(obs.log_format))
    result = run_check("C1", poorer)
    assert result.outcome is Outcome.UNKNOWN and result.needs_reader
    assert result.evidence.summary == "the no-turn-ends store does not record turn-ends"


@pytest.mark.parametrize("check_id", ["C1", "C2", "C3"])
def test_log_checks_fail_with_the_readers_message(check_id):
    error = "/s/s-test.jsonl:4: unreadable line (not JSON: Expecting value)"
    obs = stop_in_tool().observation(log=None, log_error=error) if check_id == "C3" else \
        kill_in_tool().observation(log=None, log_error=error)
    result = run_check(check_id, obs)
    assert result.outcome is Outcome.FAIL and result.decided_by.value == "log"
    assert error in result.evidence.summary


def test_log_deliberately_damaged_mid_file_is_not_held_against_other_checks():
    run = kill_in_tool()
    obs = run.observation(log=None, log_error="s.jsonl:3: unreadable line",
                          restarts=(dataclasses.replace(run.restarts[0], damage="mid-file"),))
    result = run_check("C1", obs)
    assert result.outcome is Outcome.SKIPPED and "judged by C10" in result.evidence.summary


def test_turn_left_open_without_a_kill_fails():
    run = RunBuilder()
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    result = run_check("C1", run.observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "turn 1 never ended, and the agent was not killed while it ran"
    assert result.evidence.items[0]["line"] == 2


@pytest.mark.parametrize("fields, problem", [
    ({"reason": "cancelled"}, "turn 1 ended with reason 'cancelled', not one of"),
    ({"reason": "aborted", "source": "timeout"}, "turn 1 aborted with source 'timeout', not one of"),
])
def test_turn_end_reason_must_come_from_the_closed_set(fields, problem):
    run = RunBuilder()
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn=1, **fields)
    result = run_check("C1", run.observation())
    assert result.outcome is Outcome.FAIL and result.evidence.summary.startswith(problem)


def test_turn_ended_for_a_turn_never_started_fails():
    run = RunBuilder()
    run.log.event("turn_ended", turn=3, reason="completed")
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn=1, reason="completed")
    result = run_check("C1", run.observation())
    assert result.outcome is Outcome.FAIL
    assert "turn_ended for turn 3, which is not the open turn" in result.evidence.summary


def test_empty_session_skips_c1():
    assert run_check("C1", RunBuilder().observation()).outcome is Outcome.SKIPPED


def test_event_fields_are_the_readers_format_rules_for_c10():
    run = RunBuilder(log=LogBuilder(Clock()))
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn="1", reason="completed")
    result = run_check("C10", run.observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "turn_ended.turn is str, not int"
    assert result.evidence.items[0]["line"] == 3


def test_kill_log_that_is_damaged_fails_c11_and_c10():
    run = kill_in_tool()
    garbage = b"garbage\n{}\n"
    obs = run.observation(kills=(dataclasses.replace(run.kills[0], log=run.capture("after kill 1", garbage)),))
    result = run_check("C11", obs)
    assert result.outcome is Outcome.FAIL and "the log left by kill 1 is damaged" in result.evidence.summary
    result = run_check("C10", obs)
    assert result.outcome is Outcome.FAIL and "the store after kill 1 could not be read" in result.evidence.summary


def test_kill_without_a_captured_log_is_decided_by_the_resumed_request_or_not_at_all():
    run = kill_in_tool()
    obs = run.observation(kills=(dataclasses.replace(run.kills[0], log=None),))
    result = run_check("C11", obs)
    assert result.outcome is Outcome.PASS and result.decided_by.value == "black-box"
    alone = dataclasses.replace(obs, restarts=())
    result = run_check("C11", alone)
    assert result.outcome is Outcome.UNKNOWN and not result.needs_reader
    assert "the store after the kill was not captured" in result.evidence.summary


def test_passing_results_carry_evidence_too():
    for check_id in ("C1", "C3", "C5", "C8", "C9", "C12"):
        result = run_check(check_id, stop_in_tool().observation())
        assert result.outcome is Outcome.PASS, (check_id, result.evidence.summary)
        assert result.evidence.items, check_id


def test_append_onto_a_torn_line_fails_c10():
    run = RunBuilder()
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn=1, reason="completed")
    torn = b'{"seq": 3, "type": "turn_sta'
    run.restart(damage="torn-tail", before=run.log.to_bytes(torn=torn))
    # one event written onto the torn bytes: the file still reads, ending in a longer torn line
    final = run.capture("final", run.log.to_bytes(torn=torn + b'{"seq": 3, "type": "turn_started"}\n')).log
    result = run_check("C10", run.observation(log=final))
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == ("before restart 1: the restart appended onto the torn last line instead of "
                                       "cutting it")


def test_stop_in_a_tool_whose_step_streamed_no_text_skips_c5():
    obs = stop_in_tool().observation()
    silent = tuple(dataclasses.replace(r, text="") if isinstance(r, Response) and r.request == 1 else r
                   for r in obs.records)
    result = run_check("C5", dataclasses.replace(obs, records=silent))
    assert result.outcome is Outcome.SKIPPED and "no assistant text" in result.evidence.summary


def test_tree_gone_without_a_time_of_death_is_unknown_for_c3_and_fine_for_a2():
    obs = stop_in_tool().observation()
    untimed = dataclasses.replace(obs, windows=tuple(dataclasses.replace(w, gone_ns=None) for w in obs.windows))
    result = run_check("C3", untimed)
    assert result.outcome is Outcome.UNKNOWN and "when it died after Stop was not observed" in result.evidence.summary
    killed = kill_in_tool().observation()
    untimed = dataclasses.replace(killed, windows=tuple(dataclasses.replace(w, gone_ns=None) for w in killed.windows))
    result = run_check("A2", untimed)
    assert result.outcome is Outcome.PASS and result.evidence.items[0]["died"] == "by the end of the task"


def test_earlier_lines_rewritten_byte_for_byte_fail_c10_even_with_the_same_meaning():
    run = RunBuilder()
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn=1, reason="completed")
    run.restart()
    run.log.lines[1] = json.dumps(json.loads(run.log.lines[1]), separators=(",", ":")).encode()
    run.log.event("turn_started", turn=2, input="again", inbox=[])
    run.log.event("turn_ended", turn=2, reason="completed")
    run.restart()
    result = run_check("C10", run.observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary.startswith("the store before restart 2 lost what it held before restart 1: line 2, "
                                              "byte 195")
    assert result.evidence.items[0]["earlier"] == "before restart 1"


@pytest.mark.parametrize("sent, outcome", [
    ("<session_context>\nThe workspace is /w.\n</session_context>\nBuild the project.", Outcome.PASS),
    ("Build the project. Then deploy it.", Outcome.PASS),
    ("Construct the project.", Outcome.FAIL),
], ids=["the agent's context, then the prompt", "the prompt, then the agent's rules", "words the log lacks"])
def test_c11_finds_the_prompt_an_agent_sent_after_its_own_context_in_one_turn(sent, outcome):
    """What must be durable is what the user typed: Gemini CLI sends its session context and the
    prompt as one user turn and keeps them as two messages, aider appends its rules to the prompt
    and stores the prompt alone. A request whose user text does not carry the typed words is
    judged on its own text."""
    @dataclasses.dataclass(frozen=True)
    class NoRequests:
        inner: object
        name: str = "no-requests"
        capabilities: frozenset = frozenset(Capability) - {Capability.REQUESTS}

        def __getattr__(self, attr):
            return getattr(self.inner, attr)

    run = kill_at_request()
    def reworded(record):
        canonical = record.canonical
        return dataclasses.replace(record, canonical={**canonical, "messages": [
            {**m, "text": sent} if m["text"] == "Build the project." else m for m in canonical["messages"]]})

    # the resumed request repeats it
    run.records.records = [reworded(r) if isinstance(r, Request) else r for r in run.records.records]
    obs = run.observation()
    result = run_check("C11", dataclasses.replace(obs, log_format=NoRequests(obs.log_format)))
    assert result.outcome is outcome
    if outcome is Outcome.FAIL:
        assert "does not hold its user message 'Construct the project.'" in result.evidence.summary


@pytest.mark.parametrize("driver, kind, outcome", [
    ("subprocess", "settle", Outcome.FAIL), ("subprocess", "wait", Outcome.PASS), ("terminal", "settle", Outcome.PASS),
], ids=["a headless run that never exits", "a headless run that missed another step", "a terminal"])
def test_c8_fails_a_headless_run_that_never_exits_however_well_the_others_did(driver, kind, outcome):
    """mini-swe-agent retries a provider's 400 for minutes: its second run never exits, so no
    exit code tells the truth about its failed turn, however right the first run's was."""
    run = RunBuilder()
    run.exit("completed", 0)
    run.fail("the turn's settlement", "the agent did not get there within the 60 s budget of 'settle' steps",
             step="step 4 (settle)", kind=kind)
    result = run_check("C8", run.observation(driver=driver))
    assert result.outcome is outcome
    if outcome is Outcome.FAIL:
        assert result.evidence.summary.startswith("a headless run never exited: the agent did not get there")
