"""Secrets in one place: the one mask, the scan of a run's files, the redaction on write.

Everything a task run captures is kept raw, so that C13 can judge every copy of the key it
finds; nothing is masked along the way. Keys are removed exactly once, where results and
reports are written (``redact``), with one mask: the run's own canary keys wherever they
appear — whole, or any run of at least ``MIN_SECRET_RUN`` characters of their secret part
(the key without its ``sk-``-style prefix, cut or split) — secret-named fields (an
``Authorization`` header), and anything shaped like a key (a results file may come from
anywhere), so no report, log or results file ever holds one.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from functools import lru_cache
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
# The shortest run of a key's secret part that is masked. A run of 8 hex characters of a canary
# key's secret carries 32 bits of it; an unrelated string (a hash, an id) holds one of the
# secret's 25 such runs at a given place with odds of 25 in 16**8 (about 6e-9), so masking
# them costs nothing, while a key cut anywhere — without its prefix, wrapped across lines, in
# two halves — leaves no piece of 8 or more visible. Shorter pieces stay: too short to be the
# key, and too common to mask.
MIN_SECRET_RUN = 8
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_KEY_PREFIX = re.compile(r"(?:[a-z]+-)*")  # "sk-", "sk-stopbench-", "sk-proj-": the part that is not secret
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
    text = _KEY_SHAPED.sub(lambda m: (m.group(1) or m.group(2)) + MASK, text)
    for key in keys:  # last: what is left of a key once its whole and key-shaped copies are masked
        text = _mask_secret_runs(text, key)
    return text


@lru_cache(maxsize=64)
def _secret_windows(key: str) -> tuple[str, ...]:
    """Every run of ``MIN_SECRET_RUN`` characters of the key's secret part (lower-case); a
    longer run of it is a chain of these. None for a secret too short to cut."""
    secret = key[_KEY_PREFIX.match(key).end():].lower()  # type: ignore[union-attr]
    return tuple(sorted({secret[i:i + MIN_SECRET_RUN] for i in range(len(secret) - MIN_SECRET_RUN + 1)}))


def _mask_secret_runs(text: str, key: str) -> str:
    """``text`` with every stretch covered by runs of the key's secret (any case) masked once."""
    windows = _secret_windows(key)
    if len(text) < MIN_SECRET_RUN:
        return text
    lowered = text.translate(_ASCII_LOWER)  # the same length as text, whatever it holds
    if not windows or not any(w in lowered for w in windows):
        return text
    spans: list[list[int]] = []
    for window in windows:
        at = lowered.find(window)
        while at >= 0:
            spans.append([at, at + MIN_SECRET_RUN])
            at = lowered.find(window, at + 1)
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, done = [], 0
    for start, end in merged:
        out += [text[done:start], MASK]
        done = end
    return "".join([*out, text[done:]])
