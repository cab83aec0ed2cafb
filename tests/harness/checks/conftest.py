"""Fixtures for the checker tests; the hand-made runs themselves live in ``check_runs``."""

import json

import pytest

from harness.model.redaction import redact
from tests.harness.checks.observations import CANARY


@pytest.fixture
def no_canary_in():
    """Assert that a check result, as written (through the one mask the results pass), never
    holds the canary key — though the checker's own evidence quotes it raw."""

    def check(result) -> None:
        assert CANARY not in json.dumps(redact(result.to_json()))

    return check
