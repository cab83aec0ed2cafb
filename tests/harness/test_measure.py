"""Latencies from one observation, on hand-made values, and what a screen showed."""

import dataclasses
from types import SimpleNamespace

from fake_server.records import Disconnect, Request
from harness.model import Observation, ProcessExit, Restart, Settlement, StopDelivery, UserInput, WindowObservation
from harness.run.measure import timed_latencies
from harness.run.observe import visible_prefix
from harness.run.planning import WorkItem
from tests.harness.checks.observations import Clock

KEY = "sk-stopbench-0123456789abcdef"


def _observation(**fields) -> Observation:
    return Observation(**{**dict(task="t", agent="a", adapter="http", driver="inproc", api_key=KEY), **fields})


def latencies(item: WorkItem, agent: str, obs: Observation):
    """The samples of ``obs`` as the runner measures them for ``item`` (its driver and repeat)."""
    seen = dataclasses.replace(obs, agent=agent, driver=item.driver, adapter=item.adapter, task=item.variant)
    return [sample for sample, _ in timed_latencies(seen, item.repeat)]


def _item(driver: str) -> WorkItem:
    return WorkItem(SimpleNamespace(variant=lambda d: "t"), driver, "http", 3)  # type: ignore[arg-type]


def test_l1_to_l4_from_one_observation():
    clock = Clock()
    stop_stream = StopDelivery(mono_ns=clock.tick(), source="user", how="api", phase="stream", exercised=True, request=1)
    settled = Settlement(mono_ns=clock.tick(), reason="aborted", source="user", how="api")  # 1 ms after the stop
    disconnect = Disconnect(source="server", request=1, after_chunk=3, mono_ns=stop_stream.mono_ns + 1_600_000)
    stale = Disconnect(source="server", request=1, after_chunk=3, mono_ns=stop_stream.mono_ns - 5)
    played = Disconnect(source="inproc", request=1, after_chunk=3, mono_ns=stop_stream.mono_ns + 1)
    window = WindowObservation("w1", ({"pid": 1},), stop_ns=100, gone_ns=148_000_100)
    not_stopped = WindowObservation("w2", ({"pid": 2},), stop_ns=None, gone_ns=5)
    timed = ProcessExit(pid=9, role="run", started_ns=0, ended_ns=2_250_000_000, returncode=3, signal=None,
                        expect="timeout", timeout_s=2)
    unexercised = StopDelivery(mono_ns=1, source="user", how="api", phase="stream", exercised=False, request=1)
    in_tool = StopDelivery(mono_ns=2, source="user", how="api", phase="tool", exercised=True, window="w1")
    obs = _observation(stops=(in_tool, stop_stream, unexercised), settlements=(settled,),
                       records=(stale, played, disconnect), windows=(window, not_stopped), exits=(timed,))
    measured = latencies(_item("inproc"), "a", obs)
    assert sorted(s.latency for s in measured) == ["L1", "L2", "L3", "L4"]  # a Stop in a tool is L3 only
    samples = {s.latency: s for s in measured}
    assert samples["L1"].value_ns == settled.mono_ns - stop_stream.mono_ns == 1_000_000
    assert samples["L2"].value_ns == 1_600_000
    assert samples["L3"].value_ns == 148_000_000 and samples["L3"].detail["window"] == "w1"
    assert samples["L4"].value_ns == 250_000_000
    assert {s.repeat for s in samples.values()} == {3}


def _request(number: int, mono_ns: int) -> Request:
    return Request(request=number, mono_ns=mono_ns, api="chat", path="/v1/chat/completions", headers={}, status=200)


def test_l7_runs_from_the_resuming_process_to_its_first_request():
    restart = Restart(mono_ns=1_000, before=None, after_load=None)
    follow_up = UserInput("Carry on.", mono_ns=5_000)  # headless: the follow-up spawns the resuming process
    early, first, later = (_request(1, 500), _request(2, 9_000), _request(3, 12_000))
    obs = _observation(restarts=(restart,), inputs=(follow_up,), records=(early, first, later))
    [headless] = latencies(_item("subprocess"), "a", obs)
    assert (headless.latency, headless.value_ns, headless.detail["request"]) == ("L7", 4_000, 2)
    [terminal] = latencies(_item("terminal"), "a", obs)  # the restart itself spawned the process
    assert terminal.value_ns == 8_000
    damaged = _observation(restarts=(Restart(mono_ns=1_000, before=None, after_load=None, damage="mid-file"),),
                           records=(first,))
    assert latencies(_item("terminal"), "a", damaged) == []


def test_visible_prefix_is_the_longest_scripted_prefix_on_screen():
    scripted = "Here is the report, section by section."
    screen = "you> Write the report\nHere is the rep\x1b[0m"
    assert visible_prefix(scripted, screen) == "Here is the rep"
    assert visible_prefix(scripted, "nothing of it") == ""
    assert visible_prefix("", "anything") == ""
