"""Shared fixtures: a fresh plugin manager per test that changes the environment, and the
scripts of bench/ imported by name."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def fresh_manager(monkeypatch):
    """Reset the process-wide plugin manager before and after the test."""
    from tilelang_core.plugin import reset_plugin_manager

    reset_plugin_manager()
    yield
    reset_plugin_manager()


@pytest.fixture(scope="session")
def load_bench():
    """`load_bench("ops")`: bench/ops.py imported as a fresh module (bench/ is no package; a
    script imports its neighbours, e.g. bench/variants.py, itself)."""

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
