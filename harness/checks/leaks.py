"""The API key never leaks (C13): the canary key the harness handed the agent is looked for
in every file and every output the run produced."""

from __future__ import annotations

import json
from collections.abc import Iterator

from harness.checks.base import Item, check, result
from harness.checks.views import record_texts
from harness.model import CheckResult, DecidedBy, Observation, Outcome, SessionLog

AROUND = 60  # characters of context either side of the key in an excerpt
STORE = "the session store"


@check("C13")
def no_secret_leaks(obs: Observation) -> CheckResult:
    """The canary API key appears in no file the agent wrote, no log line, nothing it printed,
    no command line, and nothing it sent to the model except the authentication header.

    The runner's scan of the run's files (``canary_hits``) is combined with a scan of every
    text the observation holds — the session store (final and every capture), the transcript,
    stdout and stderr, the agents' command lines, the records the fake server kept (request
    bodies without their headers). A file the profile itself wrote, still as written, is the
    harness's own, not a leak, and is shown as such. One leak (one place, one line) is
    reported once. Nothing is masked here: the one mask is applied where results are written.
    """
    key = obs.api_key
    if not key:
        return result("C13", Outcome.UNKNOWN, "no canary key was handed to the agent, so leaks cannot be looked for")
    leaks: dict[tuple[str, int | None], Item] = {}
    own: list[Item] = []

    def leak(where: str, line: int | None, text: str, found_by: str) -> None:
        place = (STORE if _is_store(obs, where) else where, line)
        if place not in leaks:
            leaks[place] = {"where": where, "line": line, "excerpt": _excerpt(text, key), "found_by": found_by}

    for hit in obs.canary_hits:
        if hit.profile_file:
            own.append({"where": hit.where, "line": hit.line,
                        "note": "a file the profile itself wrote, unchanged: the harness's own, not a leak"})
        else:
            leak(hit.where, hit.line, hit.excerpt, "the runner's file scan")
    scanned = 0
    for where, line, text in _texts(obs):
        scanned += 1
        if key in text:
            leak(where, line, text, "scan of the observation")
    if leaks:
        first = next(iter(leaks.values()))
        return result("C13", Outcome.FAIL, f"the API key leaked into {first['where']}"
                      + (f" line {first['line']}" if first.get("line") else ""), [*leaks.values(), *own],
                      decided_by=DecidedBy.BLACK_BOX)
    return result("C13", Outcome.PASS, f"the canary key appears nowhere: the runner's file scan found "
                  f"{len(own)} file(s) of the profile's own and no other, {scanned} texts scanned",
                  [{"runner_hits": len(obs.canary_hits), "profile_files": len(own), "texts_scanned": scanned}, *own],
                  decided_by=DecidedBy.BLACK_BOX)


def _excerpt(text: str, key: str) -> str:
    at = text.find(key)
    if at < 0:
        return text[: 2 * AROUND]
    return text[max(0, at - AROUND): at + len(key) + AROUND].replace("\n", "\\n")


def _is_store(obs: Observation, where: str) -> bool:
    """Whether ``where`` names the agent's session store (the runner's scan names files relative
    to the run's root, the observation by their full path)."""
    if where == STORE:
        return True
    paths = [p for p in (obs.log_path, obs.log.path if obs.log else None) if p]
    return any(where == p or p.endswith("/" + where.lstrip("/")) or where.endswith("/" + p.lstrip("/"))
               for p in paths)


def _log_texts(log: SessionLog) -> Iterator[tuple[str, int | None, str]]:
    yield STORE, 1, json.dumps(dict(log.header.raw), default=str)
    for event in log.events:
        yield STORE, event.line, json.dumps(dict(event.data), default=str)
    if log.torn_tail:
        last = max((e.line for e in log.events), default=1)
        yield STORE, last + 1, log.torn_tail.decode("utf-8", "replace")


def _texts(obs: Observation) -> Iterator[tuple[str, int | None, str]]:
    """Every text of the observation an agent could have leaked into: (where, line, text)."""
    if obs.log is not None:
        yield from _log_texts(obs.log)
    for capture in [k.log for k in obs.kills] + [c for r in obs.restarts for c in (r.before, r.after_load)]:
        if capture is not None and capture.log is not None:
            yield from _log_texts(capture.log)
    for n, line in enumerate(obs.transcript.splitlines(), start=1):
        yield "transcript", n, line
    for exit_ in obs.exits:
        for stream, text in (("stderr", exit_.stderr_tail), ("stdout", exit_.stdout_tail)):
            for n, line in enumerate(text.splitlines(), start=1):
                yield f"{stream} of {exit_.role} pid {exit_.pid}", n, line
        if exit_.argv:
            yield f"command line of {exit_.role} pid {exit_.pid}", None, " ".join(exit_.argv)
    for where, text in record_texts(obs):
        yield where, None, text
