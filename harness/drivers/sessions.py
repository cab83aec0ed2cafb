"""Where a driver finds the agent's session: its id, and the store the agent keeps it in.

The profile says where each shows (``[session]``): an id chosen by the harness, a line on
stderr or stdout, the file name of the store; the store itself under ``log_glob``. Finding
them is the same for every driver that reads an agent's output, and apart from driving it:
the rules are the profile's, and a driver only says what the agent printed.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.profiles import fill

if TYPE_CHECKING:
    from harness.drivers.base import AgentContext


@dataclass(frozen=True)
class FoundSession:
    """The session id, which of the profile's rules named it (and where), and the store's path
    when that rule named it too."""

    session_id: str
    found_by: str
    log_path: str | None = None


def discover_session(ctx: AgentContext, outputs: Callable[[], tuple[str, str]],
                     output_names: tuple[str, str]) -> FoundSession | None:
    """The session as the profile's rules name it: chosen by the harness (``{session_uuid}``),
    matched on stderr or stdout (``outputs``: what the agent printed so far, read only when a
    rule needs it; ``output_names``: what each is, in words), or in the store's file name.
    None while no rule names it."""
    session = ctx.profile.session
    if session.chosen:
        return FoundSession(str(ctx.values["session_uuid"]), "chosen by the harness and handed over ({session_uuid})")
    stdout, stderr = outputs()
    for key, regex, text, where in (("stderr_regex", session.stderr_regex, stderr, output_names[1]),
                                    ("stdout_regex", session.stdout_regex, stdout, output_names[0])):
        match = re.search(regex, text) if regex else None
        if match:
            path = match.group("path") if "path" in match.re.groupindex and match.group("path") else None
            return FoundSession(match.group("id"), f"session.{key} on {where}", path)
    if session.path_regex:
        store = find_log(ctx, None)
        match = re.search(session.path_regex, store) if store else None
        if match and store:
            return FoundSession(match.group("id"), f"session.path_regex on the store's file name {Path(store).name}",
                                store)
    return None


def find_log(ctx: AgentContext, session_id: str | None) -> str | None:
    """The session log: named by the session id when known, else the newest match of the glob."""
    if not ctx.profile.session.log_glob:
        return None
    matches = sorted(glob.glob(fill(ctx.profile.session.log_glob, ctx.values), recursive=True),
                     key=os.path.getmtime)
    if session_id:
        named = [m for m in matches if session_id in Path(m).name or session_id in Path(m).parent.name]
        if named:
            return named[-1]
    return matches[-1] if matches else None
