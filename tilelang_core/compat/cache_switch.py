"""TileLang's process-wide kernel-cache switch: `disable_cache()`, `enable_cache()`,
`is_cache_enabled()`.

While the cache is disabled, `tilelang_core.compile` neither reads nor writes the disk cache
nor its in-process memo, so every call compiles anew (as TileLang's `disable_cache()` does).
The switch is per process and starts enabled.
"""
from __future__ import annotations

import threading

__all__ = ["disable_cache", "enable_cache", "is_cache_enabled"]

_state = {"enabled": True}
_lock = threading.Lock()


def disable_cache() -> None:
    """Compile every kernel anew in this process: no disk cache, no in-process memo."""
    with _lock:
        _state["enabled"] = False


def enable_cache() -> None:
    """Use the kernel cache again (the default)."""
    with _lock:
        _state["enabled"] = True


def is_cache_enabled() -> bool:
    """Whether `compile` may use the kernel cache in this process."""
    return _state["enabled"]
