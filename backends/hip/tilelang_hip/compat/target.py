"""TileLang's `tilelang.rocm.target`: AMD arch names, their families and wavefront sizes.

A target argument may be a `tvm.target.Target` (its `mcpu` attribute), tilelang-core's
`Target` (its arch) or an arch string; an arch may carry feature suffixes
("gfx942:sramecc+:xnack-"), which are dropped. CDNA (gfx9, data-center) runs 64-wide
wavefronts; RDNA (gfx10, gfx11, gfx12, graphics) runs 32-wide ones.
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["check_hip_availability", "normalize_rocm_arch", "rocm_warp_size_for_arch", "target_get_mcpu",
           "target_get_rdna_generation", "target_get_warp_size", "target_is_cdna", "target_is_rdna"]

_GFX = re.compile(r"^(gfx(\d+)[0-9a-f]{2})(?::.*)?$")


def check_hip_availability() -> bool:
    """Whether a supported AMD device answers here (this backend's detection)."""
    from ..detect import _device

    return _device()[0] is not None


def normalize_rocm_arch(arch: str | None) -> str | None:
    """"gfx942" for "gfx942:sramecc+:xnack-"; None for anything that is not an AMD arch."""
    match = _GFX.match((arch or "").strip())
    return match.group(1) if match else None


def _generation(arch: str | None) -> int | None:
    """The major generation of an AMD arch: 9 for gfx942, 11 for gfx1151."""
    match = _GFX.match(arch or "")
    return int(match.group(2)) if match else None


def rocm_warp_size_for_arch(arch: str | None) -> int:
    """32 on RDNA (gfx10 and later), 64 on CDNA and GCN (gfx9 and earlier)."""
    generation = _generation(normalize_rocm_arch(arch))
    if generation is None:
        raise ValueError(f"rocm_warp_size_for_arch: {arch!r} is not an AMD arch (e.g. 'gfx942', 'gfx1151')")
    return 32 if generation >= 10 else 64


def target_get_mcpu(target: Any) -> str | None:
    """The AMD arch a target names, normalized; None when it names none."""
    if isinstance(target, str):
        return normalize_rocm_arch(target)
    attrs = getattr(target, "attrs", None)
    if attrs is not None and "mcpu" in attrs:
        return normalize_rocm_arch(str(attrs["mcpu"]))
    return normalize_rocm_arch(getattr(target, "arch", None))


def target_is_cdna(target: Any) -> bool:
    generation = _generation(target_get_mcpu(target))
    return generation == 9


def target_is_rdna(target: Any) -> bool:
    generation = _generation(target_get_mcpu(target))
    return generation is not None and generation >= 10


def target_get_rdna_generation(target: Any) -> int | None:
    """10, 11 or 12 for an RDNA target; None otherwise."""
    generation = _generation(target_get_mcpu(target))
    return generation if generation is not None and generation >= 10 else None


def target_get_warp_size(target: Any) -> int:
    """The wavefront size of the target's arch."""
    return rocm_warp_size_for_arch(target_get_mcpu(target))
