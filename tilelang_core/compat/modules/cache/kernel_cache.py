"""`tilelang.cache.kernel_cache.KernelCache`: the core's disk cache of compiled kernels."""
from __future__ import annotations

from ....jit.cache import KernelCache

__all__ = ["KernelCache"]
