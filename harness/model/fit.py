"""Whether a run's profile fits the agent version it drove: the ``profile_fit`` record.

A profile is a set of expectations about one agent version: its prompt, turn-end,
queued-acknowledgement and session patterns show when the harness looks for them, the process
it signals is the one that talks to the model, its reader knows the store's version. A new
release can break any of them silently — a pattern that never matches turns into "the agent
did not get there", a Stop that missed the streaming process into the agent's failure. So
every run keeps, for each expectation it relied on, whether it held: matched (``True``),
shown not to hold (``False``: the profile's problem, with what was seen instead), or not
decided (``None``: the run never got far enough to tell, or the agent, not the pattern, may
be what failed). The drivers note each expectation where they match it; the run's evidence
holds the record, and reports show its one-word answer (``fits``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.model import LogCapture, RunStatus, TaskResult

FITS = ("yes", "no", "unknown")  # the record's answer, as reports show it


@dataclass
class Expectation:
    """One thing the profile relies on: ``what``, matched by ``pattern`` (a regex, a rule),
    ``expected`` when; whether it ``matched``, and where it was ``seen`` (or what showed instead)."""

    what: str
    pattern: str | None
    expected: str
    matched: bool | None = None
    seen: str | None = None
    times: int = 0  # how often it matched
    attached: dict[str, Any] = field(default_factory=dict)  # a misfit's screen or process tree

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "pattern": self.pattern, "expected": self.expected, "matched": self.matched,
                "seen": self.seen, "times": self.times, **self.attached}


class FitLog:
    """The expectations one run relied on, by ``what``; once one was shown not to hold, it
    stays so (a later match does not undo a misfit that decided a step)."""

    def __init__(self) -> None:
        self._entries: dict[str, Expectation] = {}

    def _entry(self, what: str, pattern: str | None, expected: str) -> Expectation:
        return self._entries.setdefault(what, Expectation(what, pattern, expected))

    def matched(self, what: str, pattern: str | None, expected: str, seen: str) -> None:
        entry = self._entry(what, pattern, expected)
        entry.times += 1
        if entry.matched is None:
            entry.matched, entry.seen = True, seen

    def undecided(self, what: str, pattern: str | None, expected: str, seen: str) -> None:
        """Looked for and not seen, for a reason that may be the agent's (it hung, it exited):
        noted only when nothing was decided yet."""
        entry = self._entry(what, pattern, expected)
        if entry.matched is None:
            entry.seen = seen

    def missed(self, what: str, pattern: str | None, expected: str, seen: str, **attached: Any) -> None:
        """Shown not to hold: the profile's problem, with what was seen instead (a screen, a process tree)."""
        entry = self._entry(what, pattern, expected)
        entry.matched, entry.seen, entry.attached = False, seen, attached

    def to_json(self) -> dict[str, Any]:
        entries = list(self._entries.values())
        misfits = [e.what for e in entries if e.matched is False]
        fits = "no" if misfits else "yes" if entries and all(e.matched for e in entries) else "unknown"
        return {"fits": fits, "misfits": misfits, "expectations": [e.to_json() for e in entries]}


def note_store(fit: FitLog, reader: str, final: LogCapture | None) -> None:
    """Whether the reader knows the version of the store the agent wrote (read at the run's end)."""
    what, expected = "the reader knows the store's version", "when the session store is read"
    if final is None:  # no reader: nothing of the store is relied on
        return
    if final.snapshot is None:
        fit.undecided(what, reader, expected, f"no store was found to read (looked in {final.absent_from})")
        return
    if final.version_unknown:
        fit.missed(what, reader, expected, final.error or "the reader does not know this version")
    elif final.log is not None:
        fit.matched(what, reader, expected, f"read the store ({final.moment})")
    else:
        fit.undecided(what, reader, expected, f"the store could not be read: {final.error}")


def fit_word(result: TaskResult) -> str:
    """What a report shows for one run's fit: yes, no (what did not fit), or unknown."""
    return fits_over([result])


def fits_over(results: Iterable[TaskResult]) -> str:
    """One answer over many runs (an agent's scoreboard): no, naming every misfit, as soon as
    one run showed one; yes when every run that recorded its fit fit; unknown otherwise. A
    run that was not run (no driver for it) holds no evidence of fit either way."""
    records = [t.evidence["profile_fit"] for t in results
               if t.status is not RunStatus.NOT_RUN and t.evidence.get("profile_fit")]
    misfits = list(dict.fromkeys(m for r in records for m in r.get("misfits") or []))
    if misfits:
        return f"no ({', '.join(misfits)})"
    return "yes" if records and all(r.get("fits") == "yes" for r in records) else "unknown"
