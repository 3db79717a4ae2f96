"""What `tilelang backends` shows for OpenCL: a device per arch class found, or why not."""
from __future__ import annotations

from tilelang_core.plugin import Detection

from .device import INSTALL_HINT, arch_of, devices, import_pyopencl
from .target import OPENCL_ARCHS

__all__ = ["detect"]

def _priority(device) -> int:
    """For `auto`: a CPU device below the native CPU backend (0), which runs the same host
    faster; another device (a GPU) above it, below the vendor backends (10)."""
    cl = import_pyopencl()
    return -1 if device.type & cl.device_type.CPU else 1


def detect() -> list[Detection]:
    found: dict[str, object] = {}
    for device in devices():
        found.setdefault(arch_of(device), device)
    if found:
        found.setdefault("generic", next(iter(found.values())))  # any device runs generic code
    result = []
    for arch in OPENCL_ARCHS:
        device = found.get(arch)
        if device is None:
            result.append(Detection("opencl", arch, reason=f"no OpenCL device of this class; {INSTALL_HINT}"))
        else:
            result.append(Detection("opencl", arch, device=True, toolchain=True, priority=_priority(device),
                                    reason=f"device: {device.name} ({device.platform.name}, {device.version})"))
    return result
