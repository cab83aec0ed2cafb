"""One run at a time in a report folder.

Two runs writing one folder would each rewrite ``results.json`` after every task run, and
the last to finish would silently replace the other's results. So a run holds the folder's
lock file (``.stopbench.lock``) from before its first task run until its reports are
written; a second run refuses to start, naming the holder (its process ID, when it
started, its command).

The lock is an ``flock`` on that file, which the kernel releases when the holder dies,
however it dies: a lock file left behind by a killed run is stale, and the next run takes
it over and says whose it was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import platform
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = ".stopbench.lock"


class FolderLocked(Exception):
    """Another live run holds the report folder."""


@contextmanager
def hold_folder(folder: Path, argv: list[str], notice: Callable[[str], None]) -> Iterator[None]:
    """Hold ``folder``'s lock for the block (made if missing); FolderLocked if a live run holds it.
    ``notice`` hears of a stale lock taken over."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fd = _locked_fd(path)
    try:
        left = os.read(fd, 64 * 1024).decode("utf-8", "replace").strip()
        if left:
            notice(f"{path}: taking over the lock of a run that is no longer running ({_holder(left)})")
        me = {"pid": os.getpid(), "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
              "host": platform.node(), "argv": argv}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode("utf-8"), 0)
        yield
    finally:
        with contextlib.suppress(OSError):  # the folder itself may have gone: then so has the file
            path.unlink(missing_ok=True)  # still held: nobody can take the file between unlink and close
        os.close(fd)


def _locked_fd(path: Path) -> int:
    """An open descriptor of ``path`` holding its exclusive flock. A holder that removed the
    file while we waited leaves us a lock on a file no longer there: then try the new one."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = _holder(path.read_text(encoding="utf-8", errors="replace"))
            finally:
                os.close(fd)
            raise FolderLocked(f"{path.parent}: another run is writing its results here ({holder}); "
                               f"wait for it, or choose another --report-dir") from None
        try:
            same = os.fstat(fd).st_ino == path.stat().st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


def _holder(text: str) -> str:
    """The holder a lock file names, for a person: process, start, host, command."""
    try:
        data = json.loads(text)
        command = " ".join(map(str, data.get("argv") or ()))
        return (f"pid {data['pid']} on {data.get('host', '?')}, started {data.get('started', '?')}"
                + (f": {command}" if command else ""))
    except (ValueError, TypeError, KeyError, AttributeError):
        return f"unreadable lock file: {text[:80]!r}" if text else "a run that is still starting"
