"""Whether Metal can run here: macOS with an Apple GPU and torch.mps or pyobjc's Metal.

On any other system the backend still generates MSL for every arch (and checks it with clang
when clang is present), and says why it cannot compile or run it.
"""
from __future__ import annotations

import sys

from tilelang_core.plugin import Detection

from .target import METAL_ARCHS

__all__ = ["detect", "why_not_here"]


def why_not_here() -> str | None:
    """None when a Metal device and a way to compile MSL are here, else the reason."""
    if sys.platform != "darwin":
        from .check import describe

        return f"Metal runs on macOS only (this is {sys.platform}); MSL is generated and checked ({describe()})"
    from .runtime import metal_launcher_problem

    return metal_launcher_problem()


def _device_arch() -> str:
    """The arch of this Mac's GPU from its name ("Apple M3 Pro" -> apple-m3), else the newest."""
    from .runtime import device_name

    try:
        name = device_name().lower()
    except Exception:  # noqa: BLE001 - no sysctl: take the newest simdgroup-only arch
        return "apple-m4"
    for arch in reversed(list(METAL_ARCHS)):
        if arch.replace("apple-", "apple ") in name:
            return arch
    return "apple-m4"


def detect() -> list[Detection]:
    reason = why_not_here()
    if reason is None:
        arch = _device_arch()
        return [Detection("metal", arch, device=True, toolchain=True,
                          reason="Apple GPU found; MSL compiled from source at load (torch.mps or pyobjc)",
                          priority=10)]
    return [Detection("metal", a, device=False, toolchain=False, reason=reason) for a in METAL_ARCHS]
