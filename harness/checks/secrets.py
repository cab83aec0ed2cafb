"""The API key never leaks (C13): the canary key the harness handed the agent is looked
for in every file and every output the run produced."""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

from harness.checks.base import check, clip
from harness.model import CheckResult, Observation, failed, passed, unknown

MASK = "[canary key]"


@check("C13", "B")
def no_secret_leaks(obs: Observation) -> CheckResult:
    """The canary API key appears in no file the agent wrote, no log line, nothing it printed
    and nothing it sent to the model except the authentication header itself.

    The runner's scan of the run's files (``canary_hits``) is combined with a scan of
    everything the observation holds: the session log, the log bytes around kills and
    restarts, the terminal transcript, stderr, and the request bodies.
    """
    key = obs.api_key
    if not key:
        return unknown("C13", "no canary key was handed to the agent, so leaks cannot be looked for")
    hits = [{k: _mask(str(v), key) for k, v in dict(hit).items()} for hit in obs.canary_hits]
    scanned = 0
    for where, line, text in _texts(obs):
        scanned += 1
        position = text.find(key)
        if position >= 0:
            excerpt = text[max(0, position - 60): position + len(key) + 60]
            hits.append({"where": where, "line": line, "excerpt": clip(_mask(excerpt, key))})
    if hits:
        return failed("C13", f"the API key leaked into {hits[0].get('where')}"
                      + (f" line {hits[0]['line']}" if hits[0].get("line") else ""), *hits)
    return passed("C13", f"the canary key appears nowhere: runner's file scan clean, {scanned} texts scanned",
                  {"runner_hits": 0, "texts_scanned": scanned})


def _mask(text: str, key: str) -> str:
    return text.replace(key, MASK)


def _texts(obs: Observation) -> Iterator[tuple[str, int | None, str]]:
    """Every text of the observation an agent could have leaked into: (where, line, text)."""
    if obs.log is not None:
        yield f"{obs.log.path} header", 1, json.dumps(dict(obs.log.header.raw), default=str)
        for event in obs.log.events:
            yield obs.log.path, event.line, json.dumps(dict(event.data), default=str)
    for n, kill in enumerate(obs.kills, start=1):
        yield from _lines(f"log bytes after kill {n}", kill.log_bytes)
    for n, restart in enumerate(obs.restarts, start=1):
        yield from _lines(f"log bytes before restart {n}", restart.bytes_before)
        yield from _lines(f"log bytes after restart {n} loaded", restart.bytes_after_load)
    for n, line in enumerate(obs.transcript.splitlines(), start=1):
        yield "transcript", n, line
    for exit_ in obs.exits:
        yield f"stderr of {exit_.role} pid {exit_.pid}", None, exit_.stderr_tail
    for record in obs.records:
        yield from _record_texts(record)


def _lines(where: str, data: bytes | None) -> Iterator[tuple[str, int | None, str]]:
    if data:
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            yield where, n, line


def _record_texts(record: Mapping[str, Any]) -> Iterator[tuple[str, int | None, str]]:
    """A record without its headers: sending the key as the auth header is its purpose."""
    if record.get("kind") == "request":
        body = {k: v for k, v in record.items() if k != "headers"}
        yield f"request {record.get('request')} sent to the model", None, json.dumps(body, default=str)
    else:
        yield f"{record.get('kind')} record", None, json.dumps(dict(record), default=str)
