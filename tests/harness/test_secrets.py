"""Secrets in one place: the file scan keeps raw excerpts and tells the profile's own files
apart; redaction on write leaves no key anywhere, with one mask."""

from harness.model import CheckResult, Evidence, Outcome, RunResult, TaskResult
from harness.model.redaction import MASK, MIN_SECRET_RUN, redact, redact_text, scan_files
from harness.report import write_reports
from harness.run import result as result_of_run

KEY = "sk-stopbench-0123456789abcdef"


def test_scan_finds_every_line_with_the_key_and_marks_unchanged_profile_files(tmp_path):
    (tmp_path / "home" / ".cache").mkdir(parents=True)
    (tmp_path / "home" / ".cache" / "cfg.json").write_text(f'{{\n"note": "ok",\n"key": "{KEY}"\n}}\n')
    written = f"api_key = {KEY}\n".encode()
    (tmp_path / "home" / "agent.toml").write_bytes(written)
    (tmp_path / "clean.txt").write_text("nothing here\n")
    hits = scan_files(KEY, tmp_path, {"home/agent.toml": written})
    assert [(h.where, h.line, h.profile_file) for h in hits] == [
        ("home/.cache/cfg.json", 3, False), ("home/agent.toml", 1, True)]
    assert all(KEY in h.excerpt for h in hits)  # raw: C13 judges, the writer masks


def test_a_profile_file_the_agent_changed_is_no_longer_the_harness_s_own(tmp_path):
    (tmp_path / "agent.toml").write_text(f"api_key = {KEY}\nextra = 1\n")
    [hit] = scan_files(KEY, tmp_path, {"agent.toml": f"api_key = {KEY}\n".encode()})
    assert hit.profile_file is False


def test_redaction_masks_the_run_key_secret_fields_and_key_shaped_strings_with_one_mask():
    leaky = CheckResult("C13", Outcome.FAIL, Evidence(f"found {KEY}", ({"excerpt": f"x {KEY} y"},)))
    data = {"check": leaky.to_json(), "headers": {"Authorization": "Bearer abc"}, "other": "sk-proj-abcdefghijkl",
            "plain": "nothing"}
    out = redact(data, [KEY])
    text = str(out)
    assert KEY not in text and "Bearer abc" not in text and "sk-proj-abcdefghijkl" not in text
    assert out["headers"]["Authorization"] == MASK and out["plain"] == "nothing"
    assert out["check"]["evidence"]["items"][0]["excerpt"] == f"x {MASK} y"
    assert out["other"].startswith("sk-pro") and out["other"].endswith(MASK)


RUN_KEY = "sk-stopbench-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
SECRET = RUN_KEY.removeprefix("sk-stopbench-")


def test_redaction_masks_the_key_without_its_prefix_and_any_long_run_of_its_secret():
    data = {"no_prefix": f"key=stopbench-{SECRET};", "bare": f"[{SECRET}]",
            "split": f"first half {SECRET[:16]}\nsecond half {SECRET[16:]}",
            "piece": f"tail {SECRET[5:5 + MIN_SECRET_RUN]} end", "upper": SECRET.upper(),
            "nested": [{"argv": ["--key", SECRET[3:]]}]}
    out = redact(data, [RUN_KEY])
    text = str(out)
    for start in range(len(SECRET) - MIN_SECRET_RUN + 1):
        assert SECRET[start:start + MIN_SECRET_RUN].lower() not in text.lower()
    assert out["no_prefix"] == f"key=stopbench-{MASK};" and out["bare"] == f"[{MASK}]"
    assert out["split"] == f"first half {MASK}\nsecond half {MASK}"
    assert out["piece"] == f"tail {MASK} end"


def test_a_run_shorter_than_the_minimum_and_unrelated_hex_are_left_alone():
    short = SECRET[:MIN_SECRET_RUN - 1]
    data = {"short": f"id {short}", "other": "commit 0123456789abcdef0123456789abcdef"}
    assert redact(data, [RUN_KEY]) == data


def test_text_whose_lower_case_is_longer_is_masked_in_the_right_place():
    text = f"İİİ {SECRET} ok"
    assert redact_text(text, [RUN_KEY]) == f"İİİ {MASK} ok"


def test_results_json_and_report_html_hold_no_run_of_the_key_s_secret(tmp_path):
    check = CheckResult("C13", Outcome.FAIL, Evidence(f"the agent printed stopbench-{SECRET}",
                                                      ({"excerpt": f"OPENAI_KEY={SECRET[:20]}"},)), name="no_secret_leaks")
    result = TaskResult("interrupt-cancel", "ref", "http", 1, (check,), reason=f"argv held --key={SECRET[4:]}")
    written = write_reports(RunResult({"agent": "ref"}, (result_of_run.redacted(result, RUN_KEY),), ()), tmp_path)
    for path in written:
        text = path.read_text(encoding="utf-8").lower()
        assert not any(SECRET[i:i + MIN_SECRET_RUN] in text for i in range(len(SECRET) - MIN_SECRET_RUN + 1)), path


def test_a_cut_key_with_its_prefix_is_masked_once():
    assert redact_text(f"got sk-stopbench-{SECRET[:12]}", [RUN_KEY]) == f"got sk-sto{MASK}"
