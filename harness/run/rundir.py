"""Where one task run happens and what the agent is given: a fresh folder tree (HOME,
sessions, working folder), a unique canary API key, the environment, and the files the
profile writes into the fresh HOME.

The files the profile writes are remembered with their exact contents: a key that one of
them holds on purpose (a config file the agent needs) is the harness's own doing, not a
leak, as long as the file is unchanged; a copy anywhere else is the agent's (C13).
"""

from __future__ import annotations

import os
import secrets
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.containment.stale import owner_tag
from harness.drivers import AgentContext, Unsupported
from harness.profiles import Profile, ProfileError, base_values, fill
from harness.run.planning import WorkItem

ENV_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")


@dataclass
class RunDirs:
    root: Path
    home: Path
    sessions: Path
    cwd: Path
    profile_files: dict[str, bytes] = field(default_factory=dict)  # path under root → what the profile wrote

    @classmethod
    def create(cls, root: Path | None = None) -> RunDirs:
        """The folders under ``root`` (made now, with its parents), or under a new temporary
        folder; either is its owner's alone (0700): what is in it holds the run's key."""
        if root is None:  # named after its owner: what a dead harness left is swept (containment.stale)
            root = Path(tempfile.mkdtemp(prefix=f"stopbench-{owner_tag()}-"))
        else:
            root.mkdir(parents=True, mode=0o700)
        dirs = cls(root, root / "home", root / "sessions", root / "work")
        for d in (dirs.home, dirs.sessions, dirs.cwd):
            d.mkdir()
        return dirs


def make_private(folder: Path) -> None:
    """Kept run folders hold the run's key (the profile's files, the agent's sessions and
    logs): every folder below ``folder`` becomes 0700 and every file its owner's alone
    (0600, or 0700 when executable), whatever the agent's umask made them."""
    folder.chmod(0o700)
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else path.stat().st_mode & 0o700)


def canary_key() -> str:
    """A unique fake API key: finding it anywhere the agent wrote is a leak (C13)."""
    return f"sk-stopbench-{secrets.token_hex(16)}"


def agent_context(profile: Profile, item: WorkItem, dirs: RunDirs, server_url: str, server_base_url: str,
                  api_key: str, *, env_extra: dict[str, str] | None = None,
                  preexec: Callable[[], None] | None = None, beacon_url: str | None = None) -> AgentContext:
    """Placeholder values, environment and HOME files for one run of the agent. With the inproc
    adapter, ``base_url`` is where the agent reports its records: the server's ``beacon_url``
    (under the run's token) when given."""
    values = {
        **base_values(profile),
        "session_uuid": str(uuid.uuid4()),
        "base_url": (beacon_url or server_url) if item.adapter == "inproc" else server_base_url,
        "url": server_url,
        "api_key": api_key,
        "model": profile.model,
        "sessions_dir": str(dirs.sessions),
        "cwd": str(dirs.cwd),
        "home": str(dirs.home) if profile.fresh_home else os.environ.get("HOME", str(dirs.home)),
        "scenario": str(item.task.scenario_path),
        "adapter": item.adapter,
    }
    env = {k: os.environ[k] for k in ENV_PASSTHROUGH if k in os.environ}
    env.update(HOME=values["home"], TERM="xterm", COLUMNS="200", LINES="40")
    env.update({k: fill(v, values) for k, v in profile.env.items()})
    env.update({k: fill(v, values) for k, v in profile.adapter_env.get(item.adapter, {}).items()})
    env.update(env_extra or {})
    if item.mutant:
        if not profile.failpoints_env:
            raise Unsupported(f"profile {profile.name!r} has no failpoints; cannot run mutant {item.mutant!r}")
        env[profile.failpoints_env] = item.mutant
    for n, f in enumerate(profile.files, 1):
        path = _fresh_file(profile, n, Path(fill(f["path"], values)), dirs)
        path.parent.mkdir(parents=True, exist_ok=True)
        content = fill(f["content"], values).encode("utf-8")
        path.write_bytes(content)
        dirs.profile_files[str(path.relative_to(dirs.root))] = content
    return AgentContext(profile=profile, adapter=item.adapter, values=values, env=env,
                        sessions_dir=dirs.sessions, cwd=dirs.cwd, scenario=item.task.scenario, preexec=preexec)


def _fresh_file(profile: Profile, n: int, path: Path, dirs: RunDirs) -> Path:
    """Where ``files[n]`` goes: a new file inside the run's fresh HOME, or refused. The loader
    refuses a profile that would write elsewhere; this holds for a profile built in code too,
    so a user's own file (``~/.bashrc``) is never overwritten nor given the run's key."""
    if not path.resolve().is_relative_to(dirs.home.resolve()):
        raise ProfileError(profile.path, f"files[{n}].path",
                           f"{path} is outside the run's fresh HOME {dirs.home}: not written")
    if path.exists() or path.is_symlink():
        raise ProfileError(profile.path, f"files[{n}].path", f"{path} exists already: not overwritten")
    return path
