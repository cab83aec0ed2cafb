"""Secrets in one place: the one mask, the scan of a run's files, the redaction on write.

Everything a task run captures is kept raw, so that C13 can judge every copy of the key it
finds; nothing is masked along the way. Keys are removed exactly once, where results and
reports are written (``redact``), with one mask: the run's own canary keys wherever they
appear, secret-named fields (an ``Authorization`` header), and anything shaped like a key
(a results file may come from anywhere), so no report, log or results file ever holds one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.model import CanaryHit

MASK = "[redacted]"
SECRET_FIELDS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "api_key", "apikey",
     "openai_api_key", "anthropic_api_key"}
)
# A key-shaped string keeps its first characters, so a reader sees *which* key leaked.
_KEY_SHAPED = re.compile(r"\b(sk-[A-Za-z0-9_\-]{3})[A-Za-z0-9_\-]+|\b(Bearer )\S+")
EXCERPT_CHARS = 40
MAX_SCANNED_BYTES = 64 * 1024 * 1024  # a larger file is read in pieces, never whole


def scan_files(key: str, root: Path, profile_files: Mapping[str, bytes]) -> list[CanaryHit]:
    """Every line of every file under ``root`` that holds ``key`` (raw excerpts). A file the
    profile wrote, still exactly as written, is marked ``profile_file``."""
    needle = key.encode()
    hits: list[CanaryHit] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        if not _contains(path, needle):
            continue
        data = path.read_bytes() if path.stat().st_size <= MAX_SCANNED_BYTES else b""
        where = str(path.relative_to(root))
        unchanged = profile_files.get(where) == data
        lines = data.decode("utf-8", "replace").splitlines() if data else [f"(a file of {path.stat().st_size} bytes)"]
        for n, line in enumerate(lines, 1):
            if key in line or not data:
                hits.append(CanaryHit(where=where, line=n, excerpt=excerpt(line, key), profile_file=unchanged))
    return hits


def _contains(path: Path, needle: bytes) -> bool:
    """Whether the file holds ``needle``, reading it in pieces (files may be large)."""
    tail = b""
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                if needle in tail + chunk:
                    return True
                tail = chunk[-len(needle):]
    except OSError:
        return False
    return False


def excerpt(line: str, key: str) -> str:
    """The key with a little context either side (still raw)."""
    at = line.find(key)
    return line[max(0, at - EXCERPT_CHARS): at + len(key) + EXCERPT_CHARS]


def redact(value: Any, keys: Iterable[str] = ()) -> Any:
    """A copy of JSON-shaped ``value`` with ``keys``, secret-named fields and key-shaped
    strings masked."""
    keys = tuple(k for k in keys if k)
    if isinstance(value, dict):
        return {k: MASK if str(k).lower() in SECRET_FIELDS and value[k] else redact(v, keys) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, keys) for v in value]
    if isinstance(value, str):
        return redact_text(value, keys)
    return value


def redact_text(text: str, keys: Iterable[str] = ()) -> str:
    for key in keys:
        text = text.replace(key, MASK)
    return _KEY_SHAPED.sub(lambda m: (m.group(1) or m.group(2)) + MASK, text)
