"""TileLang's `tilelang.rocm` namespace, as far as this backend provides it.

The core's import aliasing maps `tilelang.rocm[.x]` here (through this backend's
`tilelang_compat_modules` hook). Provided so far: `tilelang.rocm.target` (AMD arch names and
their wavefront sizes, whether a HIP device is here) and `tilelang.rocm.intrinsics` (the
register layouts of MFMA operands, `get_mma_micro_size`; TileLang's MFMA emitters are not
here: importing one says so).
"""
from __future__ import annotations

from . import intrinsics as intrinsics
from . import target as target

__all__ = ["intrinsics", "target"]
