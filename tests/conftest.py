"""Shared fixtures: a fresh plugin manager per test that changes the environment."""
from __future__ import annotations

import pytest


@pytest.fixture
def fresh_manager(monkeypatch):
    """Reset the process-wide plugin manager before and after the test."""
    from tilelang_core.plugin import reset_plugin_manager

    reset_plugin_manager()
    yield
    reset_plugin_manager()
