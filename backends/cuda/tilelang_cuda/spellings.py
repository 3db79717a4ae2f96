"""TileLang's and TVM's names for CUDA targets, read as this backend's targets.

`"cuda"` and `"nvidia"` with no arch mean the GPU at hand (the core picks the detected device,
else the default arch), as TileLang's `"cuda"` does. An arch attribute (`"cuda -arch=sm_86"`,
`{"kind": "cuda", "arch": "sm_90"}`, a `tvm.target.Target`) or a TVM tag
(`"nvidia/nvidia-a100"`) picks the declared arch whose code runs on that compute capability.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from tilelang_core.plugin import TargetError

from .target import CUDA_ARCHS, arch_for_compute_capability

__all__ = ["SPELLINGS", "resolve"]

SPELLINGS = ("cuda", "nvidia")

_SM = re.compile(r"sm_(\d+)(\d)([af]?)")


def _arch_of_tag(tag: str) -> str:
    """The `arch` attribute of a TVM target tag such as "nvidia/nvidia-h100"."""
    from tvm.target import Target

    try:
        arch = Target(tag).attrs.get("arch")
    except Exception as exc:  # noqa: BLE001 - TVM's error says which tag it did not know
        raise TargetError(f"TVM target tag {tag!r} is not known to TVM: {exc}") from None
    if arch is None:
        raise TargetError(f"TVM target tag {tag!r} names no CUDA arch")
    return str(arch)


def _declared(arch: str) -> str:
    """Our arch for a TileLang/TVM arch attribute. A plain "sm_XY" means what TileLang builds
    for it: the device of that compute capability, arch-specific features included from sm_90
    on (TileLang's `get_target_arch` appends "a"), so "sm_90" is our sm_90a."""
    match = _SM.fullmatch(arch)
    if arch in CUDA_ARCHS and (match is None or match[3]):
        return arch
    ours = arch_for_compute_capability(int(match[1]), int(match[2])) if match else None
    if ours is None:
        raise TargetError(
            f"CUDA arch {arch!r} has no counterpart in tilelang-cuda, which builds for "
            f"{', '.join(CUDA_ARCHS)} (compute capability 7.0 to 12.x); name one of these as the "
            f"arch (e.g. 'cuda -arch=sm_90' or target='cuda/sm_90a')"
        )
    return ours


def resolve(attrs: Mapping[str, Any]) -> str:
    """Our target for a CUDA spelling's attributes (`arch`, or `tag` from "nvidia/TAG")."""
    arch = attrs.get("arch")
    if arch is None and attrs.get("tag") is not None:
        arch = _arch_of_tag(str(attrs["tag"]))
    if arch is None:
        return "cuda"
    if not isinstance(arch, str):
        raise TargetError(f"the 'arch' attribute needs a value such as sm_90 (e.g. -arch=sm_90), got {arch!r}")
    return f"cuda/{_declared(arch)}"
