"""TileLang's and TVM's names for AMD GPU targets, read as this backend's targets.

`"hip"` and `"rocm"` with no arch mean the GPU at hand (the core picks the detected device,
else the default arch). TVM names the arch `mcpu` (`{"kind": "rocm", "mcpu": "gfx942"}`,
`"rocm -mcpu=gfx90a"`), TileLang sometimes `arch`; feature suffixes
(`gfx942:sramecc+:xnack-`) are dropped.
"""
from __future__ import annotations

from typing import Any, Mapping

from tilelang_core.plugin import TargetError

from .target import HIP_ARCHS

__all__ = ["SPELLINGS", "resolve"]

SPELLINGS = ("hip", "rocm")


def resolve(attrs: Mapping[str, Any]) -> str:
    """Our target for a HIP/ROCm spelling's attributes (`mcpu` or `arch`)."""
    key = "mcpu" if attrs.get("mcpu") is not None else "arch"
    value = attrs.get(key)
    if value is None:
        return "hip"
    if not isinstance(value, str):
        raise TargetError(f"the {key!r} attribute needs a value such as gfx942 (e.g. -{key}=gfx942), got {value!r}")
    arch = value.split(":", 1)[0]
    if arch not in HIP_ARCHS:
        raise TargetError(
            f"AMD GPU arch {value!r} (attribute {key!r}) has no counterpart in tilelang-hip, which "
            f"builds for {', '.join(HIP_ARCHS)}; name one of these (e.g. {{'kind': 'hip', 'mcpu': 'gfx942'}})"
        )
    return f"hip/{arch}"
