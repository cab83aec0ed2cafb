"""Last line of defence for secrets: nothing the reports write carries an API key.

The fake server already redacts Authorization headers in its records, but evidence also
quotes log lines and terminal output (the C13 canary scan reports where a key leaked), so
every report passes through here before it is written.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"
SECRET_KEYS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "api_key", "apikey",
     "openai_api_key", "anthropic_api_key"}
)
_SECRET_TEXT = re.compile(r"\b(sk-[A-Za-z0-9_\-]{3})[A-Za-z0-9_\-]+|\b(Bearer )\S+")


def redact_text(text: str) -> str:
    """Keep a key's first characters (so a reader sees *which* key leaked), drop the rest."""
    return _SECRET_TEXT.sub(lambda m: (m.group(1) or m.group(2)) + REDACTED, text)


def redact(value: Any) -> Any:
    """A copy of a JSON value with secret-named fields and key-shaped strings redacted."""
    if isinstance(value, dict):
        return {k: REDACTED if str(k).lower() in SECRET_KEYS and value[k] else redact(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
