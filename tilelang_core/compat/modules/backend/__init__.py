"""TileLang's `tilelang.backend`: `determine_target` (its `target` submodule). TileLang's
backend registry (`register_backend`, `get_backend`, backend contexts) is its own C++-pass
plumbing; tilelang-core's backends are packages found through entry points instead
(`tilelang_core.get_plugin_manager()`), so those names are not provided."""
from __future__ import annotations

from .target import determine_target

__all__ = ["determine_target"]
