"""Reader for Kilo CLI's SQLite store: ``~/.local/share/kilo/kilo.db``.

Kilo CLI is a fork of opencode and keeps its schema for sessions, messages and parts (it adds
tables of its own, such as ``kilo_board``, which the reader does not read), so this is
opencode's reader (``harness.readers.opencode``) with Kilo's name, session versions
and newest migration: written for Kilo CLI 7.7.x from recordings of 7.7.7
(``tests/fixtures/agents/kilo-7.7.7``). The mapping of rows to events is opencode's.
"""

from __future__ import annotations

from harness.readers.opencode import OpenCodeReader


class KiloReader(OpenCodeReader):
    name = "kilo"
    program = "Kilo CLI"
    agent_versions = "Kilo CLI 7.7.x"
    supported_versions = ("7.7.",)
    known_migration = "20260907102000_kilocode_model_usage_index"
