"""The catalog of real agents stopbench knows how to install: pinned, one entry each.

An entry names the registry (``npm`` or ``pypi``), the package and the pinned version, the
program to run — as glob patterns relative to the install folder, first match wins — and,
for pip agents, the Python versions the package accepts. For Codex and Copilot CLI the program
is the native binary the npm wrapper would spawn: signals sent to the wrapper do not reach it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REGISTRIES = ("npm", "pypi")


@dataclass(frozen=True)
class Agent:
    name: str
    registry: str  # "npm" | "pypi"
    package: str
    version: str
    binary: tuple[str, ...]  # glob patterns relative to the install folder, tried in order
    python: str | None = None  # pip agents: a version range such as ">=3.10,<3.13"
    description: str = ""
    store: str = ""  # where its sessions live (informational)
    extras: tuple[str, ...] = field(default_factory=tuple)  # further pip requirements, pinned
    # Arguments the program is run with once, at install, with its cache (XDG_CACHE_HOME) in the
    # install folder: what it unpacks on a first run is kept there (``cache/``), so runs with a
    # fresh HOME need not unpack it again (profiles point at it through ``{agent_dir}``).
    warm_up: tuple[str, ...] = field(default_factory=tuple)

    @property
    def requirement(self) -> str:
        return f"{self.package}@{self.version}" if self.registry == "npm" else f"{self.package}=={self.version}"


def _npm_bin(name: str) -> tuple[str, ...]:
    return (f"node_modules/.bin/{name}",)


AGENTS: dict[str, Agent] = {a.name: a for a in (
    Agent("opencode", "npm", "opencode-ai", "1.18.33",
          binary=("node_modules/opencode-linux-x64/bin/opencode",
                  "node_modules/opencode-ai/node_modules/opencode-linux-x64/bin/opencode",
                  *_npm_bin("opencode")),
          description="opencode (sst); headless `opencode run`",
          store="SQLite ~/.local/share/opencode/opencode.db"),
    Agent("codex", "npm", "@openai/codex", "0.171.0",
          binary=("node_modules/@openai/codex-linux-x64/vendor/*/bin/codex",
                  "node_modules/@openai/codex-linux-x64/vendor/*/codex/codex",
                  "node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex"),
          description="OpenAI Codex CLI (native binary, not the node wrapper); headless `codex exec`",
          store="JSONL $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl"),
    Agent("claude-code", "npm", "@anthropic-ai/claude-code", "2.1.332",
          binary=_npm_bin("claude"),
          description="Anthropic Claude Code; headless `claude -p`",
          store="JSONL ~/.claude/projects/<cwd>/<uuid>.jsonl"),
    Agent("qwen-code", "npm", "@qwen-code/qwen-code", "0.24.4",
          binary=_npm_bin("qwen"),
          # From 0.2x this program is a wrapper that always starts cli.js beside it as a child:
          # the profile runs `node cli.js` itself, so that Stop reaches the CLI.
          description="Qwen Code; headless `node …/cli.js --yolo` (QWEN_CODE_NO_RELAUNCH=true)",
          store="JSONL ~/.qwen/projects/<cwd>/chats/<uuid>.jsonl"),
    Agent("pi", "npm", "@mariozechner/pi-coding-agent", "0.73.1", binary=_npm_bin("pi"),
          description="pi coding agent; headless `pi -p --mode json`, one provider per wire",
          store="JSONL ~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl"),
    Agent("copilot", "npm", "@github/copilot", "1.0.102",
          binary=("node_modules/@github/copilot-linux-x64/copilot",
                  "node_modules/@github/copilot/node_modules/@github/copilot-linux-x64/copilot"),
          description="GitHub Copilot CLI (native binary, not the node wrapper); headless `copilot -p`",
          warm_up=("--version",),  # unpacks its 235 MB package into cache/copilot/pkg
          store="JSONL ~/.copilot/session-state/<uuid>/events.jsonl"),
    Agent("kilo", "npm", "@kilocode/cli", "7.7.7",
          binary=("node_modules/@kilocode/cli-linux-x64/bin/kilo",
                  "node_modules/@kilocode/cli/node_modules/@kilocode/cli-linux-x64/bin/kilo",
                  *_npm_bin("kilo")),
          description="Kilo CLI (an opencode fork); headless `kilo run`",
          store="SQLite ~/.local/share/kilo/kilo.db"),
    Agent("continue", "npm", "@continuedev/cli", "1.5.47", binary=_npm_bin("cn"),
          description="Continue CLI; headless `cn -p`", store="JSON ~/.continue/sessions/<uuid>.json"),
    Agent("cline", "npm", "cline", "3.0.65", binary=_npm_bin("cline"),
          description="Cline CLI; headless `cline --json --yolo` (no headless resume)",
          store="~/.cline/data/sessions/<id>/"),
    Agent("gemini-cli", "npm", "@google/gemini-cli", "0.61.0",
          binary=_npm_bin("gemini"),
          description="Google Gemini CLI; headless `gemini -p` (GEMINI_CLI_NO_RELAUNCH=true)",
          store="JSONL ~/.gemini/tmp/<project>/chats/session-*.jsonl"),
    Agent("kimi-cli", "pypi", "kimi-cli", "1.51.0", binary=("venv/bin/kimi",), python=">=3.13",
          description="Moonshot kimi-cli; headless `kimi --print`",
          store="~/.kimi/sessions/<hash>/<uuid>/wire.jsonl"),
    Agent("mini-swe-agent", "pypi", "mini-swe-agent", "2.4.6", binary=("venv/bin/mini",), python=">=3.10",
          description="mini-swe-agent (litellm, not streamed)", store="trajectory JSON per step"),
    Agent("aider", "pypi", "aider-chat", "0.86.2", binary=("venv/bin/aider",), python=">=3.10,<3.13",
          description="aider (no tools: fenced shell blocks)", store=".aider.chat.history.md"),
    Agent("llm", "pypi", "llm", "0.36", binary=("venv/bin/llm",), python=">=3.10",
          description="Simon Willison's llm (tools from a functions file)", store="SQLite logs.db"),
    Agent("gptme", "pypi", "gptme", "0.35.1", binary=("venv/bin/gptme",), python=">=3.10",
          description="gptme; headless `gptme -n --tool-format tool` (a turn ends with its complete tool)",
          store="JSONL ~/.local/share/gptme/logs/<name>/conversation.jsonl"),
    Agent("openhands", "pypi", "openhands", "1.16.0", binary=("venv/bin/openhands",), python="==3.12",
          description="OpenHands CLI; headless `openhands --headless --json` (not streamed; shell in tmux)",
          store="~/.openhands/conversations/<hex>/ (state + one JSON file per event)"),
)}


class UnknownAgent(LookupError):
    def __init__(self, name: str):
        super().__init__(f"unknown agent {name!r} (known: {', '.join(AGENTS)})")
        self.name = name


def get_agent(name: str) -> Agent:
    try:
        return AGENTS[name]
    except KeyError:
        raise UnknownAgent(name) from None


def split_version(spec: str) -> tuple[str, str | None]:
    """``"claude-code@2.1.332"`` -> ``("claude-code", "2.1.332")``; a bare name has no version
    (the pinned one is meant). ValueError for an empty name or version around the ``@``."""
    name, at, version = spec.partition("@")
    if at and not (name and version):
        raise ValueError(f"{spec!r}: expected NAME@VERSION, e.g. claude-code@2.1.332")
    return name, version if at else None


def install_command(name: str, version: str | None = None) -> str:
    """The command that installs ``name`` (at ``version``, else its pin)."""
    return f"stopbench agents install {name}" + (f"@{version}" if version else "")


def parse_python_spec(spec: str) -> list[tuple[str, tuple[int, ...]]]:
    """``">=3.10,<3.13"`` → ``[(">=", (3, 10)), ("<", (3, 13))]``; ValueError on anything else."""
    out = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        for op in (">=", "<=", "==", "!=", ">", "<"):
            if part.startswith(op):
                numbers = part[len(op):].strip()
                try:
                    version = tuple(int(n) for n in numbers.split("."))
                except ValueError:
                    raise ValueError(f"bad Python version in {spec!r}: {part!r}") from None
                out.append((op, version))
                break
        else:
            raise ValueError(f"bad Python version range {spec!r}: {part!r} has no comparison")
    return out


def python_accepts(spec: str | None, version: tuple[int, ...]) -> bool:
    if not spec:
        return True
    for op, bound in parse_python_spec(spec):
        have = tuple(version[: len(bound)])
        ok = {">=": have >= bound, "<=": have <= bound, "==": have == bound, "!=": have != bound,
              ">": have > bound, "<": have < bound}[op]
        if not ok:
            return False
    return True
