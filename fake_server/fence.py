"""Shell commands as fenced blocks, for agents that call no tools.

An agent without tool calling (aider) is told to run a command by a fenced block in the
model's text — ```` ```bash ```` … ```` ``` ```` — which it finds, confirms and runs itself; it
sends the command's output back, if at all, as a user message. A scenario that names a
``shell_fence`` language has each of its shell frames played that way: the frame becomes
text (same pacing), so the request needs no shell tool to take a response that calls the
shell, and a request offering none is not a side request for that reason alone.
"""
from __future__ import annotations

import dataclasses

from . import scenario as sc
from .shell import shell_command


def fenced_block(language: str, command: str) -> str:
    """The block one shell command travels in, on lines of its own."""
    return f"\n\n```{language}\n{command}\n```\n"


def fenced(response: sc.Response, language: str, beacon_url: str | None) -> sc.Response:
    """``response`` with each shell frame replaced by the text of its fenced block."""
    if not response.scripts_shell:
        return response
    frames = tuple(sc.Text(fenced_block(language, shell_command(f, beacon_url)), chunk=f.chunk,
                           interval_s=f.interval_s) if isinstance(f, sc.Shell) else f
                   for f in response.frames)
    return dataclasses.replace(response, frames=frames)
