"""Install pinned real agents into a per-user cache, atomically.

An installable agent is a built-in profile with an ``[install]`` table (``harness.profiles.model.Install``):
the registry (``npm`` or ``pypi``), the package and its pinned version, the program to run —
as glob patterns relative to the install folder, first match wins — and, for pip agents, the
Python versions the package accepts (``harness.agents.pythons`` reads the range and finds the
interpreters on this machine).

Layout: ``<root>/agents/<name>-<version>/`` where ``<root>`` is ``$STOPBENCH_CACHE`` or
``~/.cache/stopbench``. An npm agent is ``npm install --prefix <dir>`` (so ``node_modules/``
and ``package.json`` are in it); a pip agent has its own virtualenv in ``<dir>/venv``, made
with an interpreter its package accepts. Every install happens in a hidden temporary
folder beside the final one (``.<name>-<version>.<pid>.partial``) and is renamed into place
only when the package installed, its program was found and the marker
``stopbench-install.json`` was written: a failed install leaves nothing, and a folder
without the marker is never reported as installed.

Before running npm or pip the registry is probed (a HEAD request, 5 s): an unreachable
registry fails in seconds with :class:`RegistryUnreachable`, not after the clients' retries.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.agents.pythons import Interpreter, candidate_pythons, interpreter_version, python_accepts, wanted_names

if TYPE_CHECKING:
    from harness.profiles.model import Install as Agent

MARKER = "stopbench-install.json"
DEFAULT_PYPI = "https://pypi.org/simple"
DEFAULT_NPM = "https://registry.npmjs.org/"
PROBE_TIMEOUT_S = 5.0


class InstallError(Exception):
    """An install could not be done; the message says why and what to do."""


class RegistryUnreachable(InstallError):
    def __init__(self, registry: str, url: str, reason: str):
        super().__init__(f"the {registry} registry at {url} is unreachable ({reason}); "
                         f"nothing was installed — check the network or pass --registry URL")
        self.registry, self.url, self.reason = registry, url, reason


class PythonNotFound(InstallError):
    pass


class NotInstalled(LookupError):
    pass


class UnknownAgent(LookupError):
    def __init__(self, name: str):
        super().__init__(f"unknown agent {name!r} (known: {', '.join(agents())})")
        self.name = name


# --- the installable agents: built-in profiles with [install] ----------------------------

def agents() -> dict[str, Agent]:
    """Every installable agent by name: the ``[install]`` tables of the built-in profiles."""
    from harness.profiles import builtin_installs  # here: the profiles read this module's names

    return builtin_installs()


def get_agent(name: str) -> Agent:
    try:
        return agents()[name]
    except KeyError:
        raise UnknownAgent(name) from None


def agent_pin(name: str) -> str:
    """The pinned version of an installable agent."""
    return get_agent(name).version


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


# --- where things go ----------------------------------------------------------------------

def cache_root() -> Path:
    env = os.environ.get("STOPBENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "stopbench"


def agents_root() -> Path:
    return cache_root() / "agents"


def install_dir(name: str, version: str | None = None) -> Path:
    agent = get_agent(name)
    return agents_root() / f"{agent.name}-{version or agent.version}"


def read_marker(folder: Path) -> dict | None:
    try:
        data = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def installed_path(name: str, version: str | None = None) -> Path | None:
    """The install folder of ``name`` (the pinned version unless ``version``), or None."""
    folder = install_dir(name, version)
    return folder if read_marker(folder) is not None else None


def find_binary(agent: Agent, folder: Path) -> Path | None:
    for pattern in agent.program:
        for match in sorted(folder.glob(pattern)):
            if match.is_file() and os.access(match, os.X_OK):
                return match
    return None


def binary(name: str, version: str | None = None) -> Path:
    """The program to run for an installed agent; :class:`NotInstalled` says how to install it."""
    agent = get_agent(name)
    folder = installed_path(name, version)
    if folder is None:
        raise NotInstalled(f"{agent.name} {version or agent.version} is not installed "
                           f"(run: {install_command(agent.name, version)})")
    marker = read_marker(folder) or {}
    recorded = marker.get("binary")
    if isinstance(recorded, str) and (folder / recorded).is_file():
        return folder / recorded
    found = find_binary(agent, folder)
    if found is None:
        raise NotInstalled(f"{agent.name} at {folder} has no program matching {', '.join(agent.program)}")
    return found


# --- interpreters -------------------------------------------------------------------------

def find_python(agent: Agent, candidates: Iterable[Path] | None = None) -> Interpreter:
    """The interpreter for ``agent``'s venv: the running one if accepted, else the newest accepted."""
    tried: list[Interpreter] = []
    for path in (candidate_pythons() if candidates is None else candidates):
        version = interpreter_version(path)
        if version is not None:
            tried.append(Interpreter(Path(path), version))
    accepted = [i for i in tried if python_accepts(agent.python, i.version)]
    if not accepted:
        need = agent.python or "any Python 3"
        wanted = wanted_names(agent.python)
        raise PythonNotFound(
            f"{agent.name} {agent.version} needs Python {need}"
            + (f" (e.g. {wanted})" if wanted else "")
            + "; none was found on PATH or under ~/.pyenv (tried: "
            + (", ".join(str(i) for i in tried) or "nothing") + ")")
    current = [i for i in accepted if os.path.realpath(i.path) == os.path.realpath(sys.executable)]
    return current[0] if current else max(accepted, key=lambda i: i.version)


# --- registries ---------------------------------------------------------------------------

def npm_registry(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    for key in ("npm_config_registry", "NPM_CONFIG_REGISTRY"):
        if os.environ.get(key):
            return os.environ[key]
    try:
        out = subprocess.run(["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=30,
                             check=False)
        if out.returncode == 0 and out.stdout.strip().startswith("http"):
            return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return DEFAULT_NPM


def pip_index(explicit: str | None = None) -> str:
    return explicit or os.environ.get("PIP_INDEX_URL") or DEFAULT_PYPI


def probe_registry(kind: str, url: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise :class:`RegistryUnreachable` unless something answers HTTP at ``url``."""
    if not url.startswith(("http://", "https://")):
        return  # a local index (file://) cannot be probed this way; the client will say
    import urllib.error  # here: loading a profile (`stopbench list`) sends no request
    import urllib.request

    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "stopbench-agents"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler() if _proxied() else
                                         urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout):
            return
    except urllib.error.HTTPError:
        return  # it answered: reachable (a 404 or 405 on the root is fine)
    except urllib.error.URLError as exc:
        reason = exc.reason
        raise RegistryUnreachable(kind, url, getattr(reason, "strerror", None) or str(reason)) from None
    except (OSError, TimeoutError) as exc:
        raise RegistryUnreachable(kind, url, getattr(exc, "strerror", None) or str(exc) or type(exc).__name__) from None


def _proxied() -> bool:
    return any(os.environ.get(k) for k in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"))


# --- installing ---------------------------------------------------------------------------

Runner = Callable[[Sequence[str], Path, dict], None]


def run_logged(argv: Sequence[str], log: Path, env: dict) -> None:
    """Run one install command, its output appended to ``log``; InstallError with the tail on failure."""
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(argv) + "\n").encode())
        out.flush()
        try:
            proc = subprocess.run(list(argv), stdout=out, stderr=subprocess.STDOUT, env=env,
                                  stdin=subprocess.DEVNULL, timeout=1800, check=False)
        except FileNotFoundError:
            raise InstallError(f"cannot run {argv[0]!r}: not found on PATH") from None
        except subprocess.TimeoutExpired:
            raise InstallError(f"{' '.join(argv[:3])} … took over 30 minutes; gave up") from None
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        raise InstallError(f"{' '.join(argv[:4])} … exited {proc.returncode}:\n  " + "\n  ".join(tail))


def install(name: str, version: str | None = None, *, registry: str | None = None, force: bool = False,
            runner: Runner = run_logged, say: Callable[[str], None] = lambda s: None,
            python_candidates: Iterable[Path] | None = None) -> Path:
    """Install ``name`` (pinned version unless ``version``) and return its folder.

    Already installed: returns the folder unless ``force``. ``runner`` runs each command
    (tests swap it); whatever it raises, the temporary folder is removed.
    """
    agent = get_agent(name)
    version = version or agent.version
    final = install_dir(name, version)
    if not force and read_marker(final) is not None:
        say(f"{agent.name} {version} is already installed at {final}")
        return final
    interpreter = find_python(agent, python_candidates) if agent.registry == "pypi" else None
    url = npm_registry(registry) if agent.registry == "npm" else pip_index(registry)
    probe_registry(agent.registry, url)

    root = agents_root()
    root.mkdir(parents=True, exist_ok=True)
    _sweep_partials(root)
    tmp = Path(tempfile.mkdtemp(prefix=f".{agent.name}-{version}.{os.getpid()}.", suffix=".partial", dir=root))
    log = tmp / "install.log"
    env = dict(os.environ)
    try:
        spec = agent.requirement(version)
        if agent.registry == "npm":
            say(f"npm install {spec} into {final}")
            env.update(npm_config_update_notifier="false", npm_config_fund="false", npm_config_audit="false")
            argv = ["npm", "install", "--prefix", str(tmp), "--no-fund", "--no-audit", "--no-save", spec]
            if registry:
                argv += ["--registry", registry]
            runner(argv, log, env)
        else:
            assert interpreter is not None
            say(f"pip install {spec} into {final}/venv with {interpreter}")
            runner([str(interpreter.path), "-m", "venv", str(tmp / "venv")], log, env)
            argv = [str(tmp / "venv" / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", spec, *agent.extras]
            if registry:
                argv += ["--index-url", registry]
            runner(argv, log, env)
        found = find_binary(agent, tmp)
        if found is None:
            raise InstallError(f"{spec} installed, but no program matches {', '.join(agent.program)} "
                               f"(the package's layout changed?)")
        if agent.registry == "pypi":
            _relocate_venv(tmp / "venv", tmp, final)
        if agent.warm_up:
            _warm_up(agent, found, tmp, log, env, runner)
        marker = {
            "name": agent.name, "registry": agent.registry, "package": agent.package, "version": version,
            "binary": str(found.relative_to(tmp)), "registry_url": url,
            "python": str(interpreter) if interpreter else None,
            "installed": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        (tmp / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
        _swap_into_place(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    say(f"installed {agent.name} {version}: {final / str(marker['binary'])}")
    return final


def _warm_up(agent: Agent, program: Path, tmp: Path, log: Path, env: dict, runner: Runner) -> None:
    """Run the program once with its cache in the install folder and a throwaway HOME, so
    what it unpacks on a first run stays in ``cache/`` and nothing else of the run is kept."""
    home = tmp / "warm-up-home"
    home.mkdir()
    try:
        runner([str(program), *agent.warm_up], log, {**env, "HOME": str(home), "XDG_CACHE_HOME": str(tmp / "cache")})
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _swap_into_place(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` to ``final``; an existing ``final`` (forced, or left without marker) goes first."""
    if final.exists():
        old = final.with_name(f".{final.name}.{os.getpid()}.old.partial")
        os.rename(final, old)
        try:
            os.rename(tmp, final)
        except OSError:
            os.rename(old, final)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)


def _relocate_venv(venv: Path, built: Path, final: Path) -> None:
    """A venv is built under the temporary name: point its scripts' shebangs at the final one."""
    old, new = str(built).encode(), str(final).encode()
    for path in [*(venv / "bin").iterdir(), venv / "pyvenv.cfg"]:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old in data and b"\0" not in data[:4096]:
            path.write_bytes(data.replace(old, new))


_PARTIAL = re.compile(r"^\.(?P<rest>.+)\.(?P<pid>\d+)\.(?:[^.]+\.)?partial$")


def _sweep_partials(root: Path) -> None:
    """Remove temporary folders left by installs whose process is gone (a killed installer)."""
    for entry in root.iterdir():
        m = _PARTIAL.match(entry.name)
        if not m or not entry.is_dir():
            continue
        pid = int(m.group("pid"))
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def listing() -> list[dict]:
    """One row per installable agent: name, registry, package, pinned version, installed?, where."""
    rows = []
    for agent in agents().values():
        folder = installed_path(agent.name)
        where = None
        if folder is not None:
            try:
                where = str(binary(agent.name))
            except NotInstalled:
                where = str(folder)
        others = sorted(p.name[len(agent.name) + 1:] for p in agents_root().glob(f"{agent.name}-*")
                        if p.is_dir() and read_marker(p) is not None and p.name != f"{agent.name}-{agent.version}") \
            if agents_root().is_dir() else []
        rows.append({"name": agent.name, "registry": agent.registry, "package": agent.package,
                     "version": agent.version, "installed": folder is not None, "where": where,
                     "python": agent.python, "other_versions": others})
    return rows
