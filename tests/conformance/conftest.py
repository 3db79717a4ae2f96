"""Fixtures of the conformance tests."""
from __future__ import annotations

import secrets

import pytest


@pytest.fixture(scope="session")
def conformance_seed() -> int:
    """Fresh inputs every session; each failure message names the seed and the command that
    reproduces it."""
    return secrets.randbits(32)
