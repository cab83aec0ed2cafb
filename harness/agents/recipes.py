"""How the recorder points each real agent at the fake server, runs a turn, resumes it, and
finds its session store: one ``Recipe`` per agent, in :data:`RECIPES`."""

from __future__ import annotations

import json
import re
import sqlite3
import textwrap
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Recipe:
    """How to point one agent at the fake server, run a turn, resume, and find its store."""

    name: str
    shell_extra: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    finish: dict | None = None  # the frame that ends an answer, for agents that end turns by a tool

    def prepare(self, home: Path, work: Path, url: str, key: str) -> dict[str, str]:
        return {}

    def first(self, prog: str, prompt: str, sid: str) -> list[str]:
        raise NotImplementedError

    def resume(self, prog: str, prompt: str, sid: str) -> list[str]:
        raise NotImplementedError

    def chosen_session_id(self) -> str | None:
        """An id the caller picks for the first run (Claude Code's ``--session-id``), else None."""
        return None

    def session_id(self, home: Path, stderr: str) -> str | None:
        raise NotImplementedError

    def store_files(self, home: Path) -> list[Path]:
        raise NotImplementedError


class Codex(Recipe):
    def prepare(self, home, work, url, key):
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True)
        (codex_home / "config.toml").write_text(textwrap.dedent(f"""\
            model = "fake-model"
            model_provider = "stopbench"
            approval_policy = "never"
            sandbox_mode = "danger-full-access"
            check_for_update_on_startup = false

            [model_providers.stopbench]
            name = "stopbench"
            base_url = "{url}/v1"
            env_key = "STOPBENCH_API_KEY"
            wire_api = "responses"
            """), encoding="utf-8")
        return {"CODEX_HOME": str(codex_home), "STOPBENCH_API_KEY": key}

    def first(self, prog, prompt, sid):
        return [prog, "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", prompt]

    def resume(self, prog, prompt, sid):
        return [prog, "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
                "resume", sid, prompt]

    def session_id(self, home, stderr):
        m = re.search(r"session id: ([0-9a-f-]{36})", stderr)
        if m:
            return m.group(1)
        files = self.store_files(home)
        m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", str(files[0])) \
            if files else None
        return m.group(1) if m else None

    def store_files(self, home):
        return sorted((home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))


class ClaudeCode(Recipe):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._sid = str(uuid.uuid4())

    def prepare(self, home, work, url, key):
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": key, "IS_SANDBOX": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1"}

    def chosen_session_id(self):
        return self._sid

    # The fake server refuses a `system` message inside `messages`, which the default tool set
    # brings; `--tools Bash` keeps the request to what it accepts.
    def first(self, prog, prompt, sid):
        return [prog, "-p", prompt, "--dangerously-skip-permissions", "--model", "fake-model",
                "--tools", "Bash", "--session-id", sid]

    def resume(self, prog, prompt, sid):
        return [prog, "-p", prompt, "--dangerously-skip-permissions", "--model", "fake-model",
                "--tools", "Bash", "--resume", sid]

    def session_id(self, home, stderr):
        return self._sid

    def store_files(self, home):
        return sorted((home / ".claude" / "projects").glob("*/*.jsonl"))


def _qwen_cli(prog: str) -> list[str]:
    """Qwen Code's CLI run by node, as its profile runs it: from 0.2x the ``qwen`` program is a
    wrapper (``cli-entry.js``) that starts ``cli.js`` as a child a signal to it never reaches."""
    return ["node", "--expose-gc", str(Path(prog).resolve().parent / "cli.js")]


class QwenCode(Recipe):
    def prepare(self, home, work, url, key):
        qwen = home / ".qwen"
        qwen.mkdir(parents=True)
        settings = {"security": {"auth": {"selectedType": "openai"}},
                    "memory": {"enableManagedAutoMemory": False},
                    "privacy": {"usageStatisticsEnabled": False},
                    "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}
        (qwen / "settings.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
        return {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": f"{url}/v1", "OPENAI_MODEL": "fake-model",
                "QWEN_CODE_NO_RELAUNCH": "true", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}

    def first(self, prog, prompt, sid):
        return [*_qwen_cli(prog), "--yolo", prompt]

    def resume(self, prog, prompt, sid):
        return [*_qwen_cli(prog), "--yolo", "--resume", sid, prompt]

    def session_id(self, home, stderr):
        files = self.store_files(home)
        return files[0].stem if files else None

    def store_files(self, home):
        return sorted((home / ".qwen" / "projects").glob("*/chats/*.jsonl"))


class OpenCode(Recipe):
    """opencode; a fork that keeps its layout (Kilo CLI) changes the names below."""

    program = "opencode"
    env_prefix = "OPENCODE"
    run_options: tuple[str, ...] = ()

    def prepare(self, home, work, url, key):
        config = home / ".config" / self.program
        config.mkdir(parents=True)
        (config / f"{self.program}.json").write_text(json.dumps({
            "autoupdate": False, "share": "disabled",
            "model": "stopbench/fake-model",
            "provider": {"stopbench": {
                "npm": "@ai-sdk/openai-compatible", "name": "stopbench",
                "options": {"baseURL": f"{url}/v1", "apiKey": "{env:STOPBENCH_API_KEY}"},
                "models": {"fake-model": {"name": "fake-model", "tool_call": True}}}},
        }, indent=1), encoding="utf-8")
        switches = ("MODELS_FETCH", "AUTOUPDATE", "DEFAULT_PLUGINS", "LSP_DOWNLOAD", "SHARE")
        return {"STOPBENCH_API_KEY": key, **{f"{self.env_prefix}_DISABLE_{s}": "1" for s in switches}}

    def first(self, prog, prompt, sid):
        return [prog, "run", *self.run_options, "--title", "stopbench", "-m", "stopbench/fake-model", prompt]

    def resume(self, prog, prompt, sid):
        return [prog, "run", *self.run_options, "-m", "stopbench/fake-model", "--session", sid, prompt]

    def db(self, home: Path) -> Path:
        return home / ".local" / "share" / self.program / f"{self.program}.db"

    def session_id(self, home, stderr):
        db = self.db(home)
        if not db.exists():
            return None
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            row = con.execute("select id from session order by time_created limit 1").fetchone()
        except sqlite3.Error:
            return None
        finally:
            con.close()
        return row[0] if row else None

    def store_files(self, home):
        db = self.db(home)
        return [db] if db.exists() else []


class Pi(Recipe):
    """pi on the chat wire: its provider in ``~/.pi/agent/models.json`` names the key's variable."""

    def prepare(self, home, work, url, key):
        agent = home / ".pi" / "agent"
        agent.mkdir(parents=True)
        provider = {"baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "STOPBENCH_API_KEY",
                    "models": [{"id": "fake-model"}]}
        (agent / "models.json").write_text(json.dumps({"providers": {"stopbench": provider}}, indent=1),
                                           encoding="utf-8")
        return {"STOPBENCH_API_KEY": key}

    def first(self, prog, prompt, sid):
        return [prog, "-p", "--offline", "--provider", "stopbench", "--model", "fake-model", "--mode", "json", prompt]

    def resume(self, prog, prompt, sid):
        return [prog, "-p", "--offline", "--provider", "stopbench", "--model", "fake-model", "--mode", "json",
                "--session", sid, prompt]

    def session_id(self, home, stderr):
        files = self.store_files(home)
        m = re.search(r"_([0-9a-f-]{36})\.jsonl$", files[0].name) if files else None
        return m.group(1) if m else None

    def store_files(self, home):
        return sorted((home / ".pi" / "agent" / "sessions").glob("*/*.jsonl"))


class Copilot(Recipe):
    """Copilot CLI with its own provider (BYOK, chat wire) and the package the install unpacked."""

    def __init__(self, *a, dist: str = "", **k):
        super().__init__(*a, **k)
        self._sid = str(uuid.uuid4())
        self._dist = dist

    def prepare(self, home, work, url, key):
        return {"COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false", "COPILOT_PROVIDER_BASE_URL": f"{url}/v1",
                "COPILOT_PROVIDER_API_KEY": key, "COPILOT_MODEL": "fake-model", "COPILOT_PROVIDER_TYPE": "openai",
                "COPILOT_PROVIDER_WIRE_API": "completions", "COPILOT_CLI_DIST_DIR": self._dist}

    def chosen_session_id(self):
        return self._sid

    def first(self, prog, prompt, sid):
        return [prog, "-p", prompt, "--allow-all", "--output-format", "json", "--session-id", sid]

    def resume(self, prog, prompt, sid):
        return [prog, "-p", prompt, "--allow-all", "--output-format", "json", "--resume", sid]

    def session_id(self, home, stderr):
        return self._sid

    def store_files(self, home):
        return sorted((home / ".copilot" / "session-state").glob("*/events.jsonl"))


def _copilot() -> Recipe:
    from harness.agents.install import get_agent, installed_path

    folder = installed_path("copilot")
    pkg = f"cache/copilot/pkg/linux-x64/{get_agent('copilot').version}"
    return Copilot("copilot", shell_extra={"description": "Run the check"}, dist=str(folder / pkg) if folder else "")


class Kilo(OpenCode):
    program = "kilo"
    env_prefix = "KILO"
    run_options = ("--auto",)

    def prepare(self, home, work, url, key):
        return {**super().prepare(home, work, url, key), "KILO_TELEMETRY_LEVEL": "off"}


class Continue(Recipe):
    """Continue's CLI with one OpenAI-style model in a YAML config whose key is a secret the
    environment holds; it prints no session id, and ``--resume`` takes the last session."""

    def prepare(self, home, work, url, key):
        config = home / ".continue" / "stopbench.yaml"
        config.parent.mkdir(parents=True)
        config.write_text(textwrap.dedent(f"""\
            name: stopbench
            version: 0.0.1
            schema: v1
            models:
              - name: stopbench
                provider: openai
                model: fake-model
                apiBase: {url}/v1
                apiKey: ${{{{ secrets.STOPBENCH_API_KEY }}}}
                roles: [chat]
                capabilities: [tool_use]
            """), encoding="utf-8")
        self._config = str(config)
        return {"STOPBENCH_API_KEY": key}

    def first(self, prog, prompt, sid):
        return [prog, "-p", "--auto", "--config", self._config, prompt]

    def resume(self, prog, prompt, sid):
        return [prog, "-p", "--auto", "--config", self._config, "--resume", prompt]

    def session_id(self, home, stderr):
        files = self.store_files(home)
        return files[0].stem if files else None

    def store_files(self, home):
        return sorted((home / ".continue" / "sessions").glob("*-*-*-*-*.json"))


class GeminiCli(Recipe):
    def prepare(self, home, work, url, key):
        gemini = home / ".gemini"
        gemini.mkdir(parents=True)
        (gemini / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}),
                                              encoding="utf-8")
        return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": key, "GEMINI_CLI_NO_RELAUNCH": "true"}

    def first(self, prog, prompt, sid):
        return [prog, "-p", prompt, "-y", "--skip-trust", "-m", "fake-model", "-o", "stream-json"]

    def resume(self, prog, prompt, sid):
        return [*self.first(prog, prompt, sid), "--resume", sid]

    def session_id(self, home, stderr):
        files = self.store_files(home)
        if not files:
            return None
        first = json.loads(files[0].read_text(encoding="utf-8").splitlines()[0])
        return first.get("sessionId")

    def store_files(self, home):
        return sorted((home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))


class Gptme(Recipe):
    """gptme names its conversation folder after ``--name``: the recorder picks it."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._sid = str(uuid.uuid4())

    def prepare(self, home, work, url, key):
        return {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": key, "GPTME_TIKTOKEN_TIMEOUT": "0"}

    def chosen_session_id(self):
        return self._sid

    def first(self, prog, prompt, sid):
        return [prog, "-n", "--tool-format", "tool", "-m", "local/fake-model", "--output-format", "json",
                "--name", sid, prompt]

    def resume(self, prog, prompt, sid):
        return [*self.first(prog, prompt, sid)[:-1], "-r", prompt]

    def session_id(self, home, stderr):
        return self._sid

    def store_files(self, home):
        return sorted((home / ".local" / "share" / "gptme" / "logs").glob("*/conversation.jsonl"))


class OpenHands(Recipe):
    """OpenHands prints its conversation id only at exit; its store is a folder of files."""

    def prepare(self, home, work, url, key):
        return {"LLM_MODEL": "openai/fake-model", "LLM_BASE_URL": f"{url}/v1", "LLM_API_KEY": key,
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1", "TMUX_TMPDIR": str(home)}

    def first(self, prog, prompt, sid):
        return [prog, "--headless", "--json", "--override-with-envs", "-t", prompt]

    def resume(self, prog, prompt, sid):
        return [prog, "--headless", "--json", "--override-with-envs", "--resume", sid, "-t", prompt]

    def session_id(self, home, stderr):
        m = re.search(r"Conversation ID: ([0-9a-f]{32})", stderr)
        if m:
            return m.group(1)
        folders = sorted((home / ".openhands" / "conversations").glob("*"))
        return folders[0].name if folders else None

    def store_files(self, home):
        root = home / ".openhands" / "conversations"
        return sorted([*root.glob("*/base_state.json"), *root.glob("*/events/event-*.json")])


RECIPES: dict[str, Callable[[], Recipe]] = {
    "codex": lambda: Codex("codex", shell_extra={"yield_time_ms": 600000}),
    "claude-code": lambda: ClaudeCode("claude-code"),
    "qwen-code": lambda: QwenCode("qwen-code"),
    "opencode": lambda: OpenCode("opencode"),
    "pi": lambda: Pi("pi"),
    "copilot": _copilot,
    "kilo": lambda: Kilo("kilo"),
    "continue": lambda: Continue("continue"),
    "gemini-cli": lambda: GeminiCli("gemini-cli"),
    "gptme": lambda: Gptme("gptme", finish={"tool_call": {"name": "complete", "arguments": {}}}),
    "openhands": lambda: OpenHands("openhands", shell_extra={"security_risk": "LOW"},
                                   finish={"tool_call": {"name": "finish", "arguments": {"message": "Done."}}}),
}
