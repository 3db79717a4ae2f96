"""TileLang's `tilelang.cache`: the kernel cache on disk. `clear_cache()` empties it;
`kernel_cache.KernelCache` is the core's cache (`tilelang_core.jit.cache`), whose entries
are keyed by the kernel, the target, the options and the toolchain."""
from __future__ import annotations

import shutil

from ... import cache_switch
from ....env import cache_dir
from . import kernel_cache
from .kernel_cache import KernelCache

__all__ = ["KernelCache", "clear_cache", "disable_cache", "enable_cache", "is_cache_enabled", "kernel_cache"]

disable_cache = cache_switch.disable_cache
enable_cache = cache_switch.enable_cache
is_cache_enabled = cache_switch.is_cache_enabled


def clear_cache() -> None:
    """Delete every compiled kernel in the disk cache (`TILELANG_CACHE_DIR`); compiling
    fills it again."""
    shutil.rmtree(cache_dir() / "kernels", ignore_errors=True)
