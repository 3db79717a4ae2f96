"""Fixtures of the reliability scenarios: a fresh disk cache and an empty in-process memo."""
from __future__ import annotations

import pytest


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    from tilelang_core.jit import api

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(api, "_MEMO", type(api._MEMO)())
    return tmp_path / "cache"
