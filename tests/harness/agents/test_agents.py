"""``stopbench agents``: the installable agents (built-in profiles with [install]), the cache layout, atomic installs, unreachable registries."""

from __future__ import annotations

import http.server
import importlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.agents.install import (
    InstallError,
    NotInstalled,
    PythonNotFound,
    RegistryUnreachable,
    UnknownAgent,
    agents,
    binary,
    install_dir,
    installed_path,
)
from harness.agents.pythons import parse_python_spec, python_accepts
from harness.profiles.model import REGISTRIES

install = importlib.import_module("harness.agents.install")  # the module (the package exports a function of that name)
AGENTS = agents()

PINS = {"opencode": ("npm", "opencode-ai", "1.18.33"), "codex": ("npm", "@openai/codex", "0.171.0"),
        "claude-code": ("npm", "@anthropic-ai/claude-code", "2.1.332"),
        "qwen-code": ("npm", "@qwen-code/qwen-code", "0.24.4"), "kimi-cli": ("pypi", "kimi-cli", "1.51.0"),
        "mini-swe-agent": ("pypi", "mini-swe-agent", "2.4.6"), "aider": ("pypi", "aider-chat", "0.86.2"),
        "llm": ("pypi", "llm", "0.36"), "pi": ("npm", "@mariozechner/pi-coding-agent", "0.73.1"),
        "copilot": ("npm", "@github/copilot", "1.0.102"), "kilo": ("npm", "@kilocode/cli", "7.7.7"),
        "continue": ("npm", "@continuedev/cli", "1.5.47"), "cline": ("npm", "cline", "3.0.65"),
        "gemini-cli": ("npm", "@google/gemini-cli", "0.61.0"), "gptme": ("pypi", "gptme", "0.35.1"),
        "openhands": ("pypi", "openhands", "1.16.0"),
        "claude-agent-acp": ("npm", "@zed-industries/claude-agent-acp", "0.23.1"),
        "codex-acp": ("npm", "@zed-industries/codex-acp", "0.16.0")}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("STOPBENCH_CACHE", str(root))
    return root


@pytest.fixture
def registry():
    """A registry stand-in on 127.0.0.1 that answers every request (the probe only needs an answer)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() returns once serve_forever next looks at its flag: every poll_interval (0.5 s by default)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def leftovers(root: Path) -> list[str]:
    agents = root / "agents"
    return sorted(p.name for p in agents.iterdir()) if agents.exists() else []


# --- the installable agents ----------------------------------------------------------------------


def test_catalog_pins_the_agents():
    assert {name: (a.registry, a.package, a.version) for name, a in AGENTS.items()} == PINS


def test_catalog_entries_are_valid():
    for name, agent in AGENTS.items():
        assert agent.name == name and agent.registry in REGISTRIES
        assert agent.program and all(not p.startswith("/") for p in agent.program)
        assert agent.version.count(".") >= 1 and all(part.isdigit() for part in agent.version.split("."))
        if agent.registry == "pypi":
            assert agent.python and parse_python_spec(agent.python)
            assert all(p.startswith("venv/bin/") for p in agent.program)
        else:
            assert agent.python is None
            assert all(p.startswith("node_modules/") for p in agent.program)
    codex = AGENTS["codex"]
    assert all("codex-linux-x64/vendor/" in p for p in codex.program)  # the native binary, not the node wrapper
    assert not python_accepts(AGENTS["kimi-cli"].python, (3, 12, 9))
    assert python_accepts(AGENTS["kimi-cli"].python, (3, 13, 0))
    assert not python_accepts(AGENTS["aider"].python, (3, 13, 0))
    assert python_accepts(AGENTS["openhands"].python, (3, 12, 1))  # its releases require Python 3.12.*
    assert not python_accepts(AGENTS["openhands"].python, (3, 13, 0))


def test_python_spec_errors():
    with pytest.raises(ValueError):
        parse_python_spec("3.10")
    with pytest.raises(ValueError):
        parse_python_spec(">=three")


def test_unknown_agent():
    with pytest.raises(UnknownAgent, match="known: aider, claude-agent-acp, claude-code, "):
        install_dir("nope")


# --- layout ---------------------------------------------------------------------------


def test_install_path_layout(cache):
    assert install.cache_root() == cache
    assert install_dir("codex") == cache / "agents" / "codex-0.171.0"
    assert install_dir("llm", "0.30") == cache / "agents" / "llm-0.30"
    assert installed_path("codex") is None
    with pytest.raises(NotInstalled, match="stopbench agents install codex"):
        binary("codex")
    folder = install_dir("codex")
    native = folder / "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
    native.parent.mkdir(parents=True)
    native.write_text("#!/bin/sh\n")
    native.chmod(0o755)
    assert installed_path("codex") is None  # no marker: not installed
    (folder / install.MARKER).write_text('{"name": "codex"}')
    assert installed_path("codex") == folder
    assert binary("codex") == native


def test_default_cache_root(monkeypatch, tmp_path):
    monkeypatch.delenv("STOPBENCH_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert install.agents_root() == tmp_path / ".cache" / "stopbench" / "agents"


# --- atomic installs ------------------------------------------------------------------


def fake_npm(creates: str | None, fail: bool = False):
    def runner(argv, log, env):
        prefix = Path(argv[argv.index("--prefix") + 1])
        (prefix / "node_modules" / "half").mkdir(parents=True, exist_ok=True)
        (prefix / "node_modules" / "half" / "x.js").write_text("partial")
        if creates:
            target = prefix / creates
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("#!/bin/sh\necho ok\n")
            target.chmod(0o755)
        if fail:
            raise InstallError("npm install … exited 1")
    return runner


def test_failed_install_leaves_nothing(cache, registry):
    with pytest.raises(InstallError, match="exited 1"):
        install.install("qwen-code", registry=registry, runner=fake_npm(None, fail=True))
    assert leftovers(cache) == []
    assert installed_path("qwen-code") is None


def test_install_without_its_program_leaves_nothing(cache, registry):
    with pytest.raises(InstallError, match="no program matches"):
        install.install("qwen-code", registry=registry, runner=fake_npm("node_modules/.bin/other"))
    assert leftovers(cache) == []


def test_interrupted_install_leaves_nothing(cache, registry):
    def interrupted(argv, log, env):
        fake_npm("node_modules/.bin/qwen")(argv, log, env)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        install.install("qwen-code", registry=registry, runner=interrupted)
    assert leftovers(cache) == []


def test_install_renames_into_place(cache, registry):
    seen = []

    def runner(argv, log, env):
        seen.append(argv)
        fake_npm("node_modules/.bin/qwen")(argv, log, env)

    folder = install.install("qwen-code", registry=registry, runner=runner)
    assert folder == install_dir("qwen-code") and leftovers(cache) == ["qwen-code-0.24.4"]
    argv = seen[0]
    assert argv[:2] == ["npm", "install"] and "@qwen-code/qwen-code@0.24.4" in argv
    assert argv[argv.index("--registry") + 1] == registry and "--no-fund" in argv and "--no-audit" in argv
    assert binary("qwen-code") == folder / "node_modules/.bin/qwen"
    assert install.read_marker(folder)["version"] == "0.24.4"
    # installed: a second install does nothing; --force reinstalls in place
    assert install.install("qwen-code", registry=registry, runner=fake_npm(None, fail=True)) == folder
    install.install("qwen-code", registry=registry, force=True, runner=runner)
    assert leftovers(cache) == ["qwen-code-0.24.4"] and len(seen) == 2


def test_warm_up_keeps_what_the_first_run_unpacks(cache, registry):
    """Copilot CLI unpacks its package on a first run: the install runs it once with the cache
    in the install folder and a throwaway HOME, keeping the cache and nothing of the HOME."""
    program = "node_modules/@github/copilot-linux-x64/copilot"
    seen = []

    def runner(argv, log, env):
        if argv[0] == "npm":
            fake_npm(program)(argv, log, env)
            return
        seen.append((argv, env["HOME"], env["XDG_CACHE_HOME"]))
        Path(env["XDG_CACHE_HOME"], "copilot", "pkg").mkdir(parents=True)
        Path(env["HOME"], ".copilot").mkdir()

    folder = install.install("copilot", registry=registry, runner=runner)
    [(argv, home, xdg)] = seen
    assert argv[1:] == ["--version"] and argv[0].endswith(program)
    assert (folder / "cache" / "copilot" / "pkg").is_dir()
    assert not (folder / "warm-up-home").exists() and Path(xdg).name == "cache" and Path(home).name == "warm-up-home"


def test_pip_install_gets_a_relocated_venv(cache, registry):
    def runner(argv, log, env):
        if argv[1:3] == ["-m", "venv"]:
            venv = Path(argv[3])
            (venv / "bin").mkdir(parents=True)
            (venv / "pyvenv.cfg").write_text(f"home = /usr/bin\ncommand = python -m venv {venv}\n")
            return
        venv = Path(argv[0]).parent.parent
        script = venv / "bin" / "llm"
        script.write_text(f"#!{venv}/bin/python\nimport llm\n")
        script.chmod(0o755)

    folder = install.install("llm", registry=registry, runner=runner, python_candidates=[Path(sys.executable)])
    script = (folder / "venv/bin/llm").read_text()
    assert script.startswith(f"#!{folder}/venv/bin/python\n")
    assert ".partial" not in (folder / "venv/pyvenv.cfg").read_text()


def test_missing_interpreter_is_named(cache, registry):
    with pytest.raises(PythonNotFound, match=r"kimi-cli 1\.51\.0 needs Python >=3\.13 \(e\.g\. python3\.13"):
        install.install("kimi-cli", registry=registry, python_candidates=[])
    assert leftovers(cache) == []


def test_interpreter_choice():
    agent = AGENTS["aider"]
    chosen = install.find_python(agent)
    assert python_accepts(agent.python, chosen.version)


def test_stale_partials_are_swept(cache):
    root = cache / "agents"
    dead = root / ".codex-0.171.0.999999999.abc.partial"
    dead.mkdir(parents=True)
    mine = root / f".codex-0.171.0.{os.getpid()}.def.partial"
    mine.mkdir()
    install._sweep_partials(root)
    assert not dead.exists() and mine.exists()


# --- unreachable registries -----------------------------------------------------------


def test_unreachable_npm_registry_fails_fast(cache):
    url = f"http://127.0.0.1:{closed_port()}/"
    started = time.monotonic()
    with pytest.raises(RegistryUnreachable, match=r"npm registry at http://127\.0\.0\.1:\d+/ is unreachable"):
        install.install("qwen-code", registry=url)
    assert time.monotonic() - started < 10
    assert leftovers(cache) == []


def test_unreachable_npm_registry_from_the_environment(cache, monkeypatch):
    url = f"http://127.0.0.1:{closed_port()}/"
    monkeypatch.setenv("npm_config_registry", url)
    with pytest.raises(RegistryUnreachable, match="unreachable"):
        install.install("opencode")
    assert leftovers(cache) == []


def test_unreachable_pip_index_fails_fast(cache):
    url = f"http://127.0.0.1:{closed_port()}/simple"
    started = time.monotonic()
    with pytest.raises(RegistryUnreachable, match=r"pypi registry at http://127\.0\.0\.1:\d+/simple is unreachable"):
        install.install("llm", registry=url)
    assert time.monotonic() - started < 10
    assert leftovers(cache) == []


def test_command_reports_an_unreachable_registry(cache):
    url = f"http://127.0.0.1:{closed_port()}/simple"
    env = {**os.environ, "STOPBENCH_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-m", "harness", "agents", "install", "llm", "--registry", url],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 2
    assert "unreachable" in proc.stderr and "nothing was installed" in proc.stderr


def test_command_lists_the_catalog(cache):
    env = {**os.environ, "STOPBENCH_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-m", "harness", "agents", "list"], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert proc.returncode == 0
    for name, (_, package, version) in PINS.items():
        assert f"{package}@{version}" in proc.stdout and name in proc.stdout
    assert proc.stdout.count("not installed") == len(PINS)


# --- one real install -----------------------------------------------------------------


def _pypi_reachable() -> str | None:
    try:
        install.probe_registry("pypi", install.pip_index())
    except RegistryUnreachable as exc:
        return str(exc)
    return None


@pytest.mark.slow(reason="a real install from PyPI into a new venv (tens of seconds)")
@pytest.mark.timeout(900)
def test_real_install_of_the_smallest_agent(cache):
    """llm from PyPI, into its own venv in a fresh cache; its program runs after the rename."""
    why = _pypi_reachable()
    if why:
        pytest.skip(f"no real install: {why}")
    folder = install.install("llm")
    assert folder == install_dir("llm") and leftovers(cache) == ["llm-0.36"]
    proc = subprocess.run([str(binary("llm")), "--version"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "0.36" in proc.stdout


# --- the [install] table ----------------------------------------------------------------

MINIMAL = 'name = "mine"\n[headless]\ncommand = ["mine", "{prompt}"]\n'


@pytest.mark.parametrize(("table", "item", "problem"), [
    ('registry = "npm"\npackage = "x"\nversion = "1"\nprogram = ["bin/x"]\nbogus = 1', "install.bogus",
     "unknown key"),
    ('registry = "cargo"\npackage = "x"\nversion = "1"\nprogram = ["bin/x"]', "install.registry", "'cargo'"),
    ('registry = "npm"\npackage = "x"\nversion = "1"', "install.program", "required"),
    ('registry = "npm"\npackage = "x"\nversion = "1"\nprogram = ["bin/x", 3]', "install.program",
     "must be a list of strings (item 2 is int)"),
    ('registry = "npm"\npackage = "x"\nversion = "1"\nprogram = ["/usr/bin/x"]', "install.program", "relative"),
    ('registry = "pypi"\npackage = "x"\nversion = "1"\nprogram = ["venv/bin/x"]\npython = "3.10"',
     "install.python", "no comparison"),
])
def test_a_bad_install_table_is_refused_naming_the_item(table, item, problem):
    import tomllib

    from harness.profiles import ProfileError, parse_profile

    with pytest.raises(ProfileError) as err:
        parse_profile(tomllib.loads(MINIMAL + "[install]\n" + table), "mine.toml")
    assert err.value.item == item and problem in err.value.problem and "mine.toml" in str(err.value)


def test_a_profile_with_install_is_the_agent_it_installs():
    import tomllib

    from harness.profiles import ProfileError, parse_profile

    table = '[install]\nregistry = "npm"\npackage = "x"\nversion = "1.2"\nprogram = ["node_modules/.bin/x"]\n'
    profile = parse_profile(tomllib.loads(MINIMAL + table), "mine.toml")
    assert profile.agent == "mine" and profile.install is not None and profile.install.name == "mine"
    assert profile.install.requirement() == "x@1.2" and profile.install.requirement("2.0") == "x@2.0"
    with pytest.raises(ProfileError, match="drives its own agent"):
        parse_profile(tomllib.loads('agent = "codex"\n' + MINIMAL + table), "mine.toml")
