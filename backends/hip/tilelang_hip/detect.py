"""Finding an AMD GPU and a HIP toolchain without failing when neither is there."""
from __future__ import annotations

from pathlib import Path

from tilelang_core.plugin import Detection

from .compile import find_toolchain
from .target import HIP_ARCHS

__all__ = ["detect", "find_toolchains"]

_INSTALL = "scripts/install_hip_toolchain.sh (apt-get install clang-19 lld-19 llvm-19 libamdhip64-dev rocm-device-libs)"


def find_toolchains() -> dict[str, str]:
    """arch -> the compiler that builds it here (hipcc, or a clang >= 17 for gfx942)."""
    found = {}
    for arch in HIP_ARCHS:
        tc = find_toolchain(arch)
        if tc is not None:
            found[arch] = tc.compiler
    return found


def _device() -> tuple[str | None, str]:
    try:
        from hip import hip  # hip-python
    except Exception as exc:  # noqa: BLE001
        return None, f"no AMD device (hip-python not importable: {type(exc).__name__})"
    try:
        err, count = hip.hipGetDeviceCount()
        if int(err) != 0 or count == 0:
            return None, f"no AMD device (hipGetDeviceCount: {getattr(err, 'name', err)})"
        err, props = hip.hipGetDeviceProperties(0)
        if int(err) != 0:
            return None, f"no AMD device (hipGetDeviceProperties: {getattr(err, 'name', err)})"
    except Exception as exc:  # noqa: BLE001 - libamdhip64.so missing or of another ABI
        return None, f"no AMD device (HIP runtime library: {type(exc).__name__}: {exc})"
    arch = props.gcnArchName.decode().split(":")[0]
    if arch not in HIP_ARCHS:
        return None, f"AMD device {arch}: not a supported arch (tilelang-hip builds for {', '.join(HIP_ARCHS)})", True
    return arch, arch


def _toolchain_text(compiler: str | None, arch: str) -> str:
    from .compile import _MIN_LLVM

    if compiler:
        return f"toolchain: {Path(compiler).name}"
    return (f"no toolchain: {arch} needs clang >= {_MIN_LLVM[arch]} with the HIP headers and ROCm device "
            f"libraries (ROCm's /opt/rocm/llvm, or {_INSTALL} where its clang is new enough)")


def detect() -> list[Detection]:
    tools = find_toolchains()
    arch, what, *unusable = _device()
    if arch is not None:
        return [Detection("hip", arch, device=True, toolchain=arch in tools,
                          reason=f"device: {what}; {_toolchain_text(tools.get(arch), arch)}", priority=10)]
    return [Detection("hip", a, device=False, toolchain=a in tools,
                      reason=f"{what}; {_toolchain_text(tools.get(a), a)}", unusable_device=what if unusable else "")
            for a in HIP_ARCHS]
