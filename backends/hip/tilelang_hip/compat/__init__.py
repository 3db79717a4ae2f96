"""TileLang's `tilelang.rocm` namespace, as far as this backend provides it.

The core's import aliasing maps `tilelang.rocm[.x]` here (through this backend's
`tilelang_compat_modules` hook). Provided so far: `tilelang.rocm.target` (AMD arch names and
their wavefront sizes, whether a HIP device is here). TileLang's MFMA intrinsics
(`tilelang.rocm.intrinsics`) are not here yet: importing them says so.
"""
from __future__ import annotations

from . import target as target

__all__ = ["target"]
