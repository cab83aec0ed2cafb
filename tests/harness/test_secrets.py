"""Secrets in one place: the file scan keeps raw excerpts and tells the profile's own files
apart; redaction on write leaves no key anywhere, with one mask."""

from harness.model import CheckResult, Evidence, Outcome
from harness.secrets import MASK, redact, scan_files

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
