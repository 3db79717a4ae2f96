"""What of the MUSA stack is here, per arch, in words a user can act on."""
from __future__ import annotations

import ctypes

from tilelang_core.plugin import Detection

from . import sdk
from .target import MUSA_ARCHS

__all__ = ["detect", "device_arch"]

# MUSA's driver API mirrors CUDA's; the compute-capability attributes keep CUDA's numbers
# (MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76). Checked only where a
# device answers; a wrong answer shows as "not a declared arch", never as a wrong target.
_ATTR_MAJOR, _ATTR_MINOR = 75, 76


def _arch_of(major: int, minor: int) -> str | None:
    arch = f"mp_{major}{minor}"
    return arch if arch in MUSA_ARCHS else None


def device_arch() -> tuple[str | None, str]:
    """(arch of device 0, description) or (None, why no device)."""
    torch_musa = sdk.import_torch_musa()
    if torch_musa is not None:
        try:
            import torch

            if torch.musa.device_count() > 0:
                props = torch.musa.get_device_properties(0)
                arch = _arch_of(int(props.major), int(props.minor))
                if arch is None:
                    return None, f"{props.name} (mp_{props.major}{props.minor}) is not a declared arch ({', '.join(MUSA_ARCHS)})"
                return arch, f"{props.name} ({arch}, via torch_musa)"
        except Exception as exc:  # noqa: BLE001
            return None, f"torch_musa found no usable device ({type(exc).__name__}: {exc})"
    lib, why = sdk.load_driver()
    if lib is None:
        return None, f"no MUSA device: {why}"
    count = ctypes.c_int(0)
    if lib.muDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return None, "no MUSA device (muDeviceGetCount: 0 devices)"
    device = ctypes.c_int(0)
    lib.muDeviceGet(ctypes.byref(device), 0)
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    lib.muDeviceGetAttribute(ctypes.byref(major), _ATTR_MAJOR, device)
    lib.muDeviceGetAttribute(ctypes.byref(minor), _ATTR_MINOR, device)
    arch = _arch_of(major.value, minor.value)
    if arch is None:
        return None, f"MUSA device of compute capability {major.value}.{minor.value} is not a declared arch"
    return arch, f"MUSA device {arch} (via libmusa)"


def _toolchain_text() -> str:
    from .check import find_checker

    mcc = sdk.find_mcc()
    parts = [f"mcc: {mcc}" if mcc else "no mcc (set MUSA_HOME to the MUSA SDK, or put mcc on PATH)"]
    parts.append(f"libmtrtc: {sdk.find_mtrtc()}" if sdk.find_mtrtc() else "no libmtrtc")
    checker = find_checker()
    parts.append(f"codegen checked by {checker.describe()}" if checker else
                 "no clang >= 17 for the codegen syntax check (scripts/install_hip_toolchain.sh installs clang-19)")
    return "; ".join(parts)


def detect() -> list[Detection]:
    """One detection per declared arch: the device's arch when one answers (with torch_musa
    noted), the others at the compile level when mcc is here, else codegen only."""
    arch, what = device_arch()
    has_mcc = sdk.find_mcc() is not None
    torch_text = "torch_musa: installed" if sdk.import_torch_musa() is not None else \
        "no torch_musa (PyTorch for MUSA, from Moore Threads; not on PyPI)"
    tools = _toolchain_text()
    found = []
    for name in MUSA_ARCHS:
        if name == arch:
            runnable = has_mcc and sdk.import_torch_musa() is not None
            found.append(Detection("musa", name, device=runnable, toolchain=has_mcc, priority=10 if runnable else 0,
                                   reason=f"device: {what}; {tools}; {torch_text}"))
        else:
            found.append(Detection("musa", name, device=False, toolchain=has_mcc,
                                   reason=f"{what if arch is None else f'the device is {arch}'}; {tools}; {torch_text}"))
    return found
