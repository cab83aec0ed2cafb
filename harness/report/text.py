"""Turning evidence into text that is safe in XML, HTML and Markdown."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from typing import Any

from harness.model import Evidence

# XML 1.0 forbids most control characters; terminal transcripts in evidence carry them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """Text with characters XML cannot hold shown as visible escapes (ESC -> "\\x1b")."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def item_label(item: Mapping[str, Any]) -> str:
    """What an evidence item is: a fake-server record kind, a log event type, a process…"""
    for key in ("kind", "type", "what"):
        if isinstance(item.get(key), str):
            return item[key]
    if "window" in item:
        return "window"
    if "pid" in item:
        return "process"
    if "excerpt" in item or "line" in item:
        return "log excerpt"
    return next(iter(item)) if len(item) == 1 else "item"


def item_text(item: Mapping[str, Any]) -> str:
    return json.dumps(item, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def evidence_text(evidence: Evidence) -> str:
    """The summary, then every item as labelled JSON: enough to re-check a verdict by hand."""
    parts = [evidence.summary]
    for n, item in enumerate(evidence.items, 1):
        parts.append(f"[{n}] {item_label(item)}\n{item_text(item)}")
    return xml_safe("\n\n".join(parts))


def md_cell(text: str) -> str:
    """Text for one Markdown line or table cell: one line, pipes and HTML escaped (GitHub
    renders inline HTML in comments, and evidence quotes whatever the agent printed)."""
    flat = " ".join(xml_safe(str(text)).split())
    return html.escape(flat, quote=False).replace("|", "\\|")


def plain(value: object) -> str:
    """A run-info value as text: nothing for null, lists joined by commas."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def outbound_attempts(evidence: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The outbound attempts a run's network namespace refused (``evidence.network``)."""
    network = evidence.get("network")
    if not isinstance(network, Mapping):
        return []
    return [a for a in network.get("attempts") or () if isinstance(a, Mapping)]


def attempt_text(attempt: Mapping[str, Any]) -> str:
    """``dns registry.npmjs.org (udp 10.0.0.53:53) at +12 ms``: one outbound attempt."""
    where = f"{attempt.get('proto')} {attempt.get('dst')}:{attempt.get('port')}"
    what = f"dns {attempt['dns_name']} ({where})" if attempt.get("dns_name") else where
    return f"{what} at +{attempt.get('at_ms', 0):.0f} ms"
