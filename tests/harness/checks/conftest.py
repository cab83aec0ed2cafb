"""Fixtures for the checker tests; the hand-made runs themselves live in ``check_runs``."""

import json

import pytest

from harness.checks.testing import CANARY


@pytest.fixture
def no_canary_in():
    """Assert that a check result's JSON never holds the canary key."""

    def check(result) -> None:
        assert CANARY not in json.dumps(result.to_json())

    return check
