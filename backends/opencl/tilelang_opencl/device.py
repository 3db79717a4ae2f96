"""Finding OpenCL devices through pyopencl, without failing when there is none.

Shared by detection (`tilelang backends`), the compiler (which builds for a device) and the
runtime. pyopencl is imported on first use, never at module import.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["OpenCLUnavailable", "import_pyopencl", "devices", "device_for", "arch_of", "context_for", "INSTALL_HINT"]

INSTALL_HINT = ("pip install pyopencl, and an OpenCL platform: on Debian/Ubuntu scripts/install_opencl_runtime.sh "
                "(apt-get install pocl-opencl-icd ocl-icd-libopencl1)")
_POCL = "Portable Computing Language"


class OpenCLUnavailable(RuntimeError):
    """pyopencl, an OpenCL platform or a device of the requested arch is missing here."""


def import_pyopencl() -> Any:
    try:
        import pyopencl
    except Exception as exc:  # noqa: BLE001 - ImportError, or libOpenCL missing
        raise OpenCLUnavailable(f"pyopencl is not importable ({type(exc).__name__}: {exc}); {INSTALL_HINT}") from exc
    return pyopencl


@lru_cache(maxsize=1)
def devices() -> tuple[Any, ...]:
    """Every OpenCL device of every platform (empty without pyopencl or a platform)."""
    try:
        cl = import_pyopencl()
        return tuple(d for p in cl.get_platforms() for d in p.get_devices())
    except Exception:  # noqa: BLE001 - no ICD loader, no platform (clGetPlatformIDs -1001)
        return ()


def arch_of(device: Any) -> str:
    """The arch class of a device (see target.py)."""
    extensions = set(device.extensions.split())
    if "cl_khr_subgroup_shuffle" in extensions and "cl_intel_required_subgroup_size" in extensions:
        return "subgroup32"
    cl = import_pyopencl()
    if _POCL in device.platform.name and device.type & cl.device_type.CPU:
        return "pocl-cpu"
    return "generic"


def device_for(arch: str) -> Any:
    """The first device of class `arch`; a `generic` target runs on any device."""
    found = devices()
    if not found:
        raise OpenCLUnavailable(f"no OpenCL device here; {INSTALL_HINT}")
    for device in found:
        if arch == "generic" or arch_of(device) == arch:
            return device
    have = ", ".join(f"{d.name} ({arch_of(d)})" for d in found)
    raise OpenCLUnavailable(f"no OpenCL device of arch {arch!r} here (found: {have}); compile for "
                            f"target 'opencl/{arch_of(found[0])}' or 'opencl/generic' instead")


_CONTEXTS: dict = {}


def context_for(device: Any) -> Any:
    """One context per device for the process."""
    key = device.int_ptr
    if key not in _CONTEXTS:
        _CONTEXTS[key] = import_pyopencl().Context([device])
    return _CONTEXTS[key]
