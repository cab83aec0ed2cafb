"""The runner's own logic, on hand-made values: work plans, what a screen showed, the canary
scan and redaction, latencies from an observation, the mutation summary."""

from pathlib import Path
from types import SimpleNamespace

from harness.checks.testing import LogBuilder, Clock
from harness.model import (
    CheckResult, Evidence, Observation, Outcome, ProcessExit, StopDelivery, TaskResult, Tier, WindowObservation,
)
from harness.profiles import load_profile
from harness.runner import WorkItem, latencies, mutation_summary, plan, redact, scan_canary, visible_prefix
from harness.tasks import load_task

KEY = "sk-stopbench-0123456789abcdef"


def test_plan_is_every_variant_adapter_repeat_and_mutant_in_a_stable_order():
    profile = load_profile("reference")
    cancel, timeout = load_task(Path("tasks/interrupt-cancel")), load_task(Path("tasks/http-stream-cancel"))
    items = plan(profile, [cancel, timeout], adapters=["inproc", "http"], repeat=2, mutants=[None, "seq-gap"])
    keys = [i.key for i in items]
    assert keys[:4] == ["interrupt-cancel[terminal]/inproc/1/-", "interrupt-cancel[terminal]/inproc/2/-",
                        "interrupt-cancel[terminal]/http/1/-", "interrupt-cancel[terminal]/http/2/-"]
    # http-stream-cancel is restricted to the http adapter
    assert [k for k in keys if k.startswith("http-stream-cancel")] == [
        "http-stream-cancel/http/1/-", "http-stream-cancel/http/2/-",
        "http-stream-cancel/http/1/seq-gap", "http-stream-cancel/http/2/seq-gap"]
    # a mutant never runs in-process: its failpoint lives in the environment of a started process
    assert not [k for k in keys if k.startswith("interrupt-cancel[inproc]") and k.endswith("seq-gap")]
    assert len(items) == (2 * 2 * 2 + 2) + (1 * 2 * 2 + 2)
    assert plan(profile, [cancel], adapters=["http"]) == [
        WorkItem(cancel, "terminal", "http", 1), WorkItem(cancel, "inproc", "http", 1)]


def test_visible_prefix_is_the_longest_scripted_prefix_on_screen():
    scripted = "Here is the report, section by section."
    screen = "you> Write the report\nHere is the rep\x1b[0m"
    assert visible_prefix(scripted, screen) == "Here is the rep"
    assert visible_prefix(scripted, "nothing of it") == ""
    assert visible_prefix("", "anything") == ""


def test_canary_scan_finds_files_and_output_and_never_repeats_the_key(tmp_path):
    (tmp_path / "home" / ".cache").mkdir(parents=True)
    (tmp_path / "home" / ".cache" / "cfg.json").write_text(f'{{\n"note": "ok",\n"key": "{KEY}"\n}}\n')
    (tmp_path / "clean.txt").write_text("nothing here\n")
    hits = scan_canary(KEY, tmp_path, {"output": f"line one\nAuthorization: Bearer {KEY}\n"})
    assert [(h["where"], h["line"]) for h in hits] == [("home/.cache/cfg.json", 3), ("output", 2)]
    assert all(KEY not in h["excerpt"] and "[canary]" in h["excerpt"] for h in hits)


def test_redaction_removes_the_key_from_check_evidence():
    leaky = CheckResult("C13", Outcome.FAIL, Evidence(f"found {KEY}", ({"excerpt": f"x {KEY} y"},)))
    clean = CheckResult("C1", Outcome.PASS, Evidence("fine"))
    out = redact((leaky, clean), KEY)
    assert KEY not in str(out[0].to_json()) and "[canary]" in out[0].evidence.summary
    assert out[1] is clean


def _observation(**fields) -> Observation:
    base = dict(task="t", agent="a", adapter="http", driver="inproc", api_key=KEY)
    return Observation(**{**base, **fields})


def test_latencies_from_one_observation():
    clock = Clock()
    log = LogBuilder(clock)
    log.event("turn_started", turn=1, input="x", inbox=[])
    stop_stream = StopDelivery(mono_ns=clock.tick(), source="user", how="api", phase="stream", exercised=True, request=1)
    ended = log.event("turn_ended", turn=1, reason="aborted", source="user")  # 1 ms after the stop
    disconnect = {"kind": "disconnect", "source": "server", "request": 1, "mono_ns": stop_stream.mono_ns + 1_600_000}
    stale = {"kind": "disconnect", "source": "server", "request": 1, "mono_ns": stop_stream.mono_ns - 5}
    played = {"kind": "disconnect", "source": "inproc", "request": 1, "mono_ns": stop_stream.mono_ns + 1}
    window = WindowObservation("w1", ({"pid": 1},), stop_ns=100, gone_ns=148_000_100)
    not_stopped = WindowObservation("w2", ({"pid": 2},), stop_ns=None, gone_ns=5)
    timed = ProcessExit(pid=9, role="run", started_ns=0, ended_ns=2_250_000_000, returncode=3, signal=None,
                        expect="timeout", timeout_s=2)
    unexercised = StopDelivery(mono_ns=1, source="user", how="api", phase="stream", exercised=False, request=1)
    in_tool = StopDelivery(mono_ns=2, source="user", how="api", phase="tool", exercised=True, window="w1")
    obs = _observation(log=log.read(), stops=(in_tool, stop_stream, unexercised), records=(stale, played, disconnect),
                       windows=(window, not_stopped), exits=(timed,))
    item = WorkItem(SimpleNamespace(variant=lambda d: "t"), "inproc", "http", 3)
    measured = latencies(item, load_profile("reference"), obs)
    assert sorted(s.latency for s in measured) == ["L1", "L2", "L3", "L4"]  # a Stop in a tool is L3 only
    samples = {s.latency: s for s in measured}
    assert samples["L1"].value_ns == ended["mono_ns"] - stop_stream.mono_ns == 1_000_000
    assert samples["L2"].value_ns == 1_600_000
    assert samples["L3"].value_ns == 148_000_000 and samples["L3"].detail["window"] == "w1"
    assert samples["L4"].value_ns == 250_000_000
    assert {s.repeat for s in samples.values()} == {3}


def _task(mutant, *outcomes, error=None):
    checks = tuple(CheckResult(c, Outcome(o), Evidence(""), tier) for c, o, tier in outcomes)
    return TaskResult("t", "a", "http", 1, checks, error=error, mutant=mutant)


def test_mutation_summary_counts_mutants_caught_by_a_mandatory_check_or_a_broken_task():
    M, A = Tier.MANDATORY, Tier.ADVISORY
    tasks = [
        _task(None, ("C1", "pass", M)),
        _task("seq-gap", ("C10", "fail", M), ("C1", "pass", M)),
        _task("lose-inbox", ("C6", "pass", M), ("A1", "fail", A)),  # advisory only: survived
        _task("no-settle-on-stop", ("C1", "pass", M), error="the task could not complete: settle"),
    ]
    summary = mutation_summary(tasks, {"seq-gap": ("C10",), "lose-inbox": ("C6",), "no-settle-on-stop": ("C1",)})
    assert (summary["caught"], summary["total"]) == (2, 3)
    assert summary["mutants"]["seq-gap"] == {"targets": ["C10"], "failed": ["C10"], "task_errors": [],
                                              "targets_caught": True, "caught": True, "runs": 1}
    assert summary["mutants"]["lose-inbox"]["caught"] is False
    assert summary["mutants"]["no-settle-on-stop"]["task_errors"] == ["t"]


async def _damage(tmp_path, kind: str, lines: list[bytes]):
    from harness.runner import TaskRun
    from harness.tasks import Step

    log = tmp_path / "s.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    run = TaskRun(None, SimpleNamespace(log_path=str(log)), server=None)
    await run.step_damage(Step("damage", {"kind": kind}, 1))
    return run.damage, log.read_bytes().split(b"\n")


async def test_mid_file_damage_hits_a_line_after_the_header_and_before_the_last(tmp_path):
    lines = [b'{"format": "contract-log"}', b'{"seq": 1}', b'{"seq": 2}', b'{"seq": 3}', b'{"seq": 4}']
    (kind, line), after = await _damage(tmp_path, "mid-file", lines)
    assert kind == "mid-file" and 1 < line < len(lines)
    assert after[line - 1] != lines[line - 1] and [a for a in after if a] == [
        lines[i] if i != line - 1 else after[i] for i in range(len(lines))]


async def test_torn_tail_appends_an_unterminated_line(tmp_path):
    lines = [b'{"format": "contract-log"}', b'{"seq": 1}']
    (kind, line), after = await _damage(tmp_path, "torn-tail", lines)
    assert (kind, line) == ("torn-tail", 3)
    assert after[:2] == lines and after[2].startswith(b'{"seq": 2, ') and not after[2].endswith(b"}")
