"""The sweep: one pass over the process table that finds a run's members, and how each was found.

Why: a cgroup holds only what started inside it. The run's tag in the environment, the run
folder as working folder or executable, and descent from a member also catch what was started
outside the cgroup (the tools of an agent loaded into the harness itself), and they are all
the env-tag kind has. This process and its ancestors are never members.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from harness.containment.procs import ProcRef

ENV_VAR = "STOPBENCH_RUN"
SURVEY_ATTRS = ["ppid", "status", "create_time", "cmdline", "environ", "cwd", "exe"]


@dataclass(frozen=True)
class Member:
    """A live process inside the containment, and how it was found.

    ``how``: ``cgroup`` (in the run's cgroup), ``env-tag`` (its environment carries the tag),
    ``cwd`` / ``exe`` (working folder / executable inside the run folder), ``descendant``
    (a child of another member that matched none of those, e.g. one that cleared its
    environment and has not been reparented yet).
    """

    pid: int
    ppid: int
    create_time: float
    cmdline: tuple[str, ...]
    how: str

    @property
    def ref(self) -> ProcRef:
        """The ProcRef (role = how found), for ``procs.kill_all`` / ``leftovers``."""
        return ProcRef(self.pid, self.create_time, self.how)

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "ppid": self.ppid, "create_time": self.create_time,
                "cmdline": list(self.cmdline), "how": self.how}


def survey(run_root: Path, tag: str, in_cgroup: set[int]) -> dict[int, Member]:
    """One pass over the process table: who is in, and how.

    ``run_root`` is the run folder (resolved), ``tag`` the run's tag, ``in_cgroup`` the PIDs
    of the run's cgroup (empty without one).
    """
    me = psutil.Process()
    spared = {me.pid, *(p.pid for p in me.parents())}
    infos: dict[int, dict[str, Any]] = {}
    members: dict[int, Member] = {}
    for proc in psutil.process_iter(SURVEY_ATTRS, ad_value=None):
        info = proc.info
        if proc.pid in spared or info["status"] == psutil.STATUS_ZOMBIE or info["create_time"] is None:
            continue
        infos[proc.pid] = info
        how = _how(proc.pid, info, run_root, tag, in_cgroup)
        if how is not None:
            members[proc.pid] = _member(proc.pid, info, how)
    children: dict[int, list[int]] = {}
    for pid, info in infos.items():
        children.setdefault(info["ppid"], []).append(pid)
    queue = list(members)
    while queue:
        for child in children.get(queue.pop(), []):
            if child not in members:
                members[child] = _member(child, infos[child], "descendant")
                queue.append(child)
    return members


def _how(pid: int, info: dict[str, Any], run_root: Path, tag: str, in_cgroup: set[int]) -> str | None:
    if pid in in_cgroup:
        return "cgroup"
    if tag in (info["environ"] or {}).get(ENV_VAR, "").split(":"):
        return "env-tag"
    for how in ("cwd", "exe"):
        if info[how] and Path(info[how]).is_relative_to(run_root):
            return how
    return None


def _member(pid: int, info: dict[str, Any], how: str) -> Member:
    return Member(pid=pid, ppid=info["ppid"] or 0, create_time=info["create_time"],
                  cmdline=tuple(info["cmdline"] or ()), how=how)
