"""Tasks as data: the shipped ones are valid and together exercise every contract item;
mistakes are named by file, item and problem."""

from pathlib import Path

import pytest

from harness.checks import REGISTRY
from harness.contract import CHECKS
from harness.model import Tier
from harness.tasks import TASKS_DIR, TaskError, discover, load_all, load_task

SCENARIO = '''name = "s"
[[responses]]
[[responses.frames]]
text = "hi"
'''


def write_task(tmp_path: Path, body: str, scenario: str = SCENARIO) -> Path:
    folder = tmp_path / "my-task"
    folder.mkdir(exist_ok=True)
    (folder / "scenario.toml").write_text(scenario)
    (folder / "task.toml").write_text('name = "my-task"\n' + body)
    return folder / "task.toml"


BASE = '''drivers = ["subprocess"]
[checks]
mandatory = ["C1"]
'''
WAIT = '[[steps]]\ndo = "send"\ntext = "x"\n[[steps]]\ndo = "wait"\n'


def test_shipped_tasks_are_valid_and_cover_every_contract_item():
    tasks = load_all(known_checks=set(REGISTRY))
    assert {t.name for t in tasks} >= {"interrupt-cancel", "interrupt-timeout", "interrupt-restart"}
    mandatory = {c for t in tasks for c, tier in t.checks.items() if tier is Tier.MANDATORY}
    advisory = {c for t in tasks for c, tier in t.checks.items() if tier is Tier.ADVISORY}
    assert mandatory == {c.id for c in CHECKS if not c.advisory}
    assert advisory == {c.id for c in CHECKS if c.advisory}
    for t in tasks:
        assert t.scenario is not None and t.scenario_path.is_file()


def test_every_interrupt_follows_a_beacon_of_its_own_turn():
    for task in load_all():
        waited = False
        for step in task.steps:
            if step.do in ("send", "restart"):
                waited = False
            waited = waited or step.do == "wait"
            if step.do in ("stop", "kill"):
                assert waited, f"{task.name}: {step.describe()} has no wait on a beacon since the turn began"


def test_variant_names_carry_the_driver_only_when_there_are_several():
    cancel = load_task(TASKS_DIR / "interrupt-cancel")
    timeout = load_task(TASKS_DIR / "interrupt-timeout")
    assert cancel.variant("terminal") == "interrupt-cancel[terminal]"
    assert timeout.variant("subprocess") == "interrupt-timeout"


def test_a_minimal_task_loads(tmp_path):
    task = load_task(write_task(tmp_path, BASE + '[[steps]]\ndo = "send"\ntext = "hi"\n[[steps]]\ndo = "settle"\n'))
    assert [s.do for s in task.steps] == ["send", "settle"] and task.checks == {"C1": Tier.MANDATORY}


@pytest.mark.parametrize("body, item, problem", [
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\n[[steps]]\ndo = "stop"\n', "steps[2]", "must follow a 'wait'"),
    (BASE + '[[steps]]\ndo = "dance"\n', "steps[1].do", "is not a step"),
    (BASE + '[[steps]]\ndo = "send"\n', "steps[1].text", "required by 'send'"),
    (BASE + '[[steps]]\ndo = "send"\ntext = 3\n', "steps[1].text", "wrong type int"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\nvolume = 11\n', "steps[1].volume", "takes no 'volume'"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\n[[steps]]\ndo = "wait"\nfor = "moon"\n', "steps[2].for", "not a beacon"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\n[[steps]]\ndo = "wait"\nfor = "chunk"\nrequest = 1\n',
     "steps[2].chunk", "required when waiting for 'chunk'"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\n[[steps]]\ndo = "cancel-queued"\nitem = "q"\n',
     "steps[2].item", "names no earlier queue step"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\n[[steps]]\ndo = "queue"\ntext = "y"\n', "steps[2]", "subprocess driver takes no input while a turn runs"),
    (BASE + '[[steps]]\ndo = "settle"\n', "steps[1]", "before any 'send'"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\n[[steps]]\ndo = "wait"\nfor = "request"\nrequest = 1\n'
     '[[steps]]\ndo = "send"\ntext = "y"\n[[steps]]\ndo = "stop"\n', "steps[4]", "must follow a 'wait'"),
    ('drivers = ["inproc"]\n[checks]\nmandatory = ["C1"]\n[[steps]]\ndo = "send"\ntext = "x"\n'
     '[[steps]]\ndo = "wait"\nfor = "request"\nrequest = 1\n[[steps]]\ndo = "kill"\n', "steps[3]", "cannot SIGKILL"),
    ('drivers = ["warp"]\n[checks]\nmandatory = ["C1"]\n[[steps]]\ndo = "send"\ntext = "x"\n', "drivers", "is not a driver"),
    ('drivers = ["subprocess"]\n[checks]\nmandatory = ["C99"]\n[[steps]]\ndo = "send"\ntext = "x"\n', "checks.mandatory", "unknown check 'C99'"),
    ('drivers = ["subprocess"]\n[checks]\nurgent = ["C1"]\n[[steps]]\ndo = "send"\ntext = "x"\n', "checks.urgent", "not a tier"),
    ('drivers = ["subprocess"]\n[checks]\nmandatory = ["C1"]\nadvisory = ["C1"]\n[[steps]]\ndo = "send"\ntext = "x"\n',
     "checks.advisory", "listed twice"),
    (BASE, "steps", "at least one [[steps]]"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\ntimeout = nan\n', "steps[1].timeout", "above 0 and at most 600"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\ntimeout = inf\n', "steps[1].timeout", "above 0 and at most 600"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "x"\ntimeout = 1e300\n', "steps[1].timeout", "above 0 and at most 600"),
    (BASE + '[[steps]]\ndo = "send"\ntext = "  "\n', "steps[1].text", "must say something"),
    (BASE + WAIT + 'for = "window"\nwindow = "w2"\n', "steps[2].window", "no frame of the scenario opens window 'w2'"),
    (BASE + WAIT + 'for = "chunk"\nrequest = 1\nchunk = 2\n', "steps[2].chunk", "past the end"),
    (BASE + WAIT + 'for = "window"\nwindow = "w1"\nchunk = 2\n', "steps[2].chunk", "reads no 'chunk'"),
    (BASE + WAIT + 'for = "request"\nrequest = 1\nwindow = "w1"\n', "steps[2].window", "reads no 'window'"),
    ('drivers = ["terminal"]\n[checks]\nmandatory = ["C1"]\n[[steps]]\ndo = "send"\ntext = "x"\n'
     '[[steps]]\ndo = "queue"\ntext = "a"\nas = "q"\n[[steps]]\ndo = "queue"\ntext = "b"\nas = "q"\n',
     "steps[3].as", "names an earlier queue step"),
    ('drivers = ["subprocess", "subprocess"]\n[checks]\nmandatory = ["C1"]\n[[steps]]\ndo = "send"\ntext = "x"\n',
     "drivers", "listed twice"),
    (BASE + '[notes]\nC2 = "why"\n[[steps]]\ndo = "send"\ntext = "x"\n', "notes.C2", "not one of the task's checks"),
    (BASE + '[notes]\nC1 = 3\n[[steps]]\ndo = "send"\ntext = "x"\n', "notes.C1", "must say why"),
    ('description = 3\n' + BASE + '[[steps]]\ndo = "send"\ntext = "x"\n', "description", "must be a string"),
])
def test_mistakes_name_the_item_and_the_problem(tmp_path, body, item, problem):
    with pytest.raises(TaskError) as err:
        load_task(write_task(tmp_path, body), known_checks=set(REGISTRY))
    assert err.value.item == item and problem in err.value.problem, str(err.value)
    assert err.value.file.endswith("my-task/task.toml")


def test_a_bad_scenario_is_reported_with_its_own_file_and_item(tmp_path):
    path = write_task(tmp_path, BASE + '[[steps]]\ndo = "send"\ntext = "x"\n',
                      scenario='name = "s"\n[[responses]]\n[[responses.frames]]\ntext = "hi"\nchunk = 0\n')
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert err.value.item == "scenario" and "scenario.toml: responses[0].frames[0].chunk" in err.value.problem


def test_folder_and_name_must_agree(tmp_path):
    path = write_task(tmp_path, BASE + '[[steps]]\ndo = "send"\ntext = "x"\n')
    path.write_text(path.read_text().replace('name = "my-task"', 'name = "other"'))
    with pytest.raises(TaskError, match="differs from its folder name"):
        load_task(path)


def test_discover_finds_task_files_only(tmp_path):
    write_task(tmp_path, BASE)
    (tmp_path / "notes").mkdir()
    assert discover(tmp_path) == [tmp_path / "my-task" / "task.toml"]


def test_a_task_file_that_is_not_utf8_is_named_not_a_traceback(tmp_path):
    path = write_task(tmp_path, BASE + '[[steps]]\ndo = "send"\ntext = "x"\n')
    path.write_bytes(b'name = "my-task"\n\xff\xfe\n')
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert err.value.item == "file" and "not UTF-8" in err.value.problem
    assert err.value.file.endswith("my-task/task.toml")


def test_a_wait_is_checked_against_what_the_scenario_can_post(tmp_path):
    """The longest response bounds a chunk; a shell call (its length is the agent's tool's) lifts the bound."""
    scenario = SCENARIO + '[[responses]]\n[[responses.frames]]\ntext = "abcdefghij"\nchunk = 4\n'
    body = BASE + WAIT + 'for = "chunk"\nrequest = 1\nchunk = {}\n'
    assert load_task(write_task(tmp_path, body.format(3), scenario)).steps[1].get("chunk") == 3
    with pytest.raises(TaskError, match="more than 3 chunk"):
        load_task(write_task(tmp_path, body.format(4), scenario))
    shell = scenario + '[[responses]]\n[[responses.frames]]\nshell = "ls"\n'
    assert load_task(write_task(tmp_path, body.format(40), shell)).steps[1].get("chunk") == 40
    assert load_task(write_task(tmp_path, body.format(40), scenario), load_scenario=False).scenario is None
