"""Finding an AMD GPU and a HIP toolchain without failing when neither is there."""
from __future__ import annotations

import shutil

from tilelang_core.plugin import Detection

from .target import HIP_ARCHS

__all__ = ["detect", "find_toolchains"]


def find_toolchains() -> dict[str, str]:
    """Compilers that build AMD code objects here: hipcc, and a clang that knows gfx942."""
    found = {}
    for name in ("hipcc", "clang-19", "clang-18", "clang-17"):
        path = shutil.which(name)
        if path:
            found[name] = path
    return found


def _device() -> tuple[str | None, str]:
    try:
        from hip import hip  # hip-python
    except Exception as exc:  # noqa: BLE001
        return None, f"no AMD device (hip-python not importable: {type(exc).__name__})"
    err, count = hip.hipGetDeviceCount()
    if int(err) != 0 or count == 0:
        return None, "no AMD device"
    err, props = hip.hipGetDeviceProperties(0)
    arch = props.gcnArchName.decode().split(":")[0]
    return (arch if arch in HIP_ARCHS else None), f"{arch}"


def detect() -> list[Detection]:
    tools = find_toolchains()
    tool_text = ", ".join(tools) if tools else "no hipcc or clang-17+ on PATH (apt-get install hipcc clang-19 lld-19)"
    arch, what = _device()
    if arch is not None:
        return [Detection("hip", arch, device=True, toolchain=bool(tools),
                          reason=f"device: {what}; toolchain: {tool_text}", priority=10)]
    return [Detection("hip", a, device=False, toolchain=bool(tools), reason=f"{what}; toolchain: {tool_text}")
            for a in HIP_ARCHS]
