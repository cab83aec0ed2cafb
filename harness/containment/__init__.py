"""Containment of one task run: everything the run started is found and ended.

Why: the harness ends the processes it learned of (``procs.py``), but an agent's tools and
the daemons an agent starts (Codex's TUI starts ``codex app-server``) can double-fork, leave
the session, reparent to pid 1 and ignore SIGTERM. No PID the harness holds leads to them,
and they outlive the run. A containment is a boundary drawn around the run *before* the
agent starts, so whatever it forks is inside:

- ``cgroup-v2``: a cgroup of the run's own in a writable cgroup2 hierarchy. The kernel keeps
  the membership, ``cgroup.freeze`` stops forks while the members are killed, and
  ``cgroup.kill`` (where the kernel has it) kills the whole subtree at once.
- ``cgroup-v1``: the same with the v1 ``freezer`` hierarchy (membership and freeze). The v1
  ``pids`` hierarchy adds nothing to that (its membership is the same, and it cannot
  freeze), so it is not used.
- ``env-tag``: no cgroup to be had. Members are the processes whose environment carries the
  run's tag (``STOPBENCH_RUN``), or whose working folder or executable is inside the run
  folder, and their descendants; SIGSTOP stands in for the freezer.

The sweep (tag, folder, descent) runs with the cgroup kinds too: it catches what was started
outside the cgroup, such as the tools of an agent loaded into the harness itself.

Nesting (the suite run as a tool of an agent under test): a run's cgroup is made under the
cgroup this process is in, so an inner run's cgroup is a sub-cgroup of the outer run's and
ends with it. The tag variable keeps the outer tags (``outer:inner``), so an outer sweep finds
the inner run's processes too. This process and its ancestors are never members.

Nothing here reaps: ``waitpid`` belongs to whoever started a process (asyncio, pexpect), so
"gone" means exited, a zombie or not. Waits are on pidfds and on ``cgroup.events``, each
bounded by the budget the caller passes.

The pieces: ``boundary`` (the ``Containment`` a run opens, starts its agent in and ends),
``cgroup`` (the two cgroup hierarchies behind the cgroup kinds), ``sweep`` (one pass over
the process table that finds the members) and ``stale`` (what runs of a dead harness left,
ended and removed by the next run: every run is named after its owner).

The boundary is never taken on a record's word: a window record naming processes gets only
those ended that are members (``Containment.strangers``), and a member outside the run's
cgroup — a root agent can move itself anywhere — is reported as an escape (``escapees``).
"""

from harness.containment.boundary import KINDS, Containment, EndReport
from harness.containment.cgroup import ContainmentError
from harness.containment.sweep import ENV_VAR, Member

__all__ = ["ENV_VAR", "KINDS", "Containment", "ContainmentError", "EndReport", "Member"]
