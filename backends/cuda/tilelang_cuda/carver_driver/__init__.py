"""TileLang's `tilelang.carver.arch.driver`: facts about a CUDA device, read through the driver API.

TileLang programs size persistent grids with `driver.get_num_sms()` and read shared-memory and
register limits the same way. The names and meanings are TileLang's; the facts come from
`cuDeviceGetAttribute` through this backend's runtime (no CUDA runtime library, no torch), so
they are what the device reports. The core maps `tilelang.carver.arch.driver` here through
the `tilelang_compat_modules` hook; TileLang's submodule path `driver.cuda_driver` is
`cuda_driver` here, with the same names.

Without a device, `get_cuda_device_properties` and `get_device_name` return None (as
TileLang's do); every other function raises `RuntimeError` saying why no device answered.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..runtime import _check, _cu, device_available

__all__ = [
    "CUDADeviceProperties",
    "cudaDeviceAttrNames",
    "get_cuda_device_properties",
    "get_device_attribute",
    "get_device_name",
    "get_max_dynamic_shared_size_bytes",
    "get_num_sms",
    "get_persisting_l2_cache_max_size",
    "get_registers_per_block",
    "get_shared_memory_per_block",
]

_UNITS = {"bytes": 1, "kb": 1024, "mb": 1024 * 1024}


class cudaDeviceAttrNames:  # noqa: N801 - TileLang's name
    """The device attribute numbers TileLang's driver module names (the same numbers in the
    runtime API's `cudaDeviceAttr` and the driver API's `CUdevice_attribute`)."""

    cudaDevAttrMaxThreadsPerBlock: int = 1
    cudaDevAttrMaxRegistersPerBlock: int = 12
    cudaDevAttrMaxSharedMemoryPerMultiprocessor: int = 81
    cudaDevAttrMaxPersistingL2CacheSize: int = 108


@dataclass(frozen=True)
class CUDADeviceProperties:
    """A device's properties, under the field names of `torch.cuda.get_device_properties`."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    regs_per_multiprocessor: int
    max_threads_per_multi_processor: int
    warp_size: int
    L2_cache_size: int  # noqa: N815 - torch's field name


def _device(device_id: int) -> Any:
    """The CUdevice of `device_id`; RuntimeError when no device answers."""
    if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
        raise ValueError(f"device_id must be a device index (an int >= 0), got {device_id!r}")
    available, why = device_available()
    if not available:
        raise RuntimeError(f"no CUDA device to query: {why}")
    cu = _cu()
    count = _check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
    if device_id >= count:
        raise ValueError(f"device_id {device_id} is out of range: this machine has {count} CUDA device(s)")
    return _check(cu.cuDeviceGet(device_id), "cuDeviceGet", f"device index {device_id}")


def _attribute(device: Any, attr: int) -> int:
    cu = _cu()
    try:
        which = cu.CUdevice_attribute(attr)
    except ValueError:
        raise ValueError(f"attr {attr!r} is not a CUDA device attribute number") from None
    return int(_check(cu.cuDeviceGetAttribute(which, device), "cuDeviceGetAttribute", which.name))


def _in_units(value: int, format: str) -> int:  # noqa: A002 - TileLang's keyword
    if format not in _UNITS:
        raise ValueError(f"format must be one of {', '.join(_UNITS)}, got {format!r}")
    return value // _UNITS[format]


def get_device_attribute(attr: int, device_id: int = 0) -> int:
    """The value of device attribute number `attr` (a `cudaDeviceAttr` / `CUdevice_attribute`)."""
    return _attribute(_device(device_id), attr)


def get_cuda_device_properties(device_id: int = 0) -> CUDADeviceProperties | None:
    """The device's properties, or None when there is no CUDA device."""
    if not device_available()[0]:
        return None
    cu = _cu()
    device = _device(device_id)
    A = cu.CUdevice_attribute

    def attr(which: Any) -> int:
        return _attribute(device, int(which))

    raw = _check(cu.cuDeviceGetName(256, device), "cuDeviceGetName")
    return CUDADeviceProperties(
        name=raw.split(b"\0", 1)[0].decode(errors="replace"),
        major=attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
        minor=attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        multi_processor_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        total_memory=int(_check(cu.cuDeviceTotalMem(device), "cuDeviceTotalMem")),
        shared_memory_per_block=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
        shared_memory_per_block_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        shared_memory_per_multiprocessor=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        regs_per_multiprocessor=attr(A.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
        max_threads_per_multi_processor=attr(A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
        warp_size=attr(A.CU_DEVICE_ATTRIBUTE_WARP_SIZE),
        L2_cache_size=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
    )


def get_device_name(device_id: int = 0) -> str | None:
    """The device's name ("NVIDIA H100 80GB HBM3"), or None when there is no CUDA device."""
    props = get_cuda_device_properties(device_id)
    return props.name if props is not None else None


def get_num_sms(device_id: int = 0) -> int:
    """The number of streaming multiprocessors: the grid size of a persistent kernel."""
    device = _device(device_id)
    return _attribute(device, int(_cu().CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT))


def get_shared_memory_per_block(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002
    """Shared memory a block gets without opting in (48 KiB on sm_80/sm_90), in `format`
    ("bytes", "kb" or "mb")."""
    _in_units(0, format)
    device = _device(device_id)
    value = _attribute(device, int(_cu().CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK))
    return _in_units(value, format)


def get_max_dynamic_shared_size_bytes(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002
    """Shared memory per multiprocessor (TileLang reads this attribute under this name), in
    `format` ("bytes", "kb" or "mb"). The most one block may opt into is slightly less:
    `get_cuda_device_properties().shared_memory_per_block_optin`."""
    _in_units(0, format)
    value = get_device_attribute(cudaDeviceAttrNames.cudaDevAttrMaxSharedMemoryPerMultiprocessor, device_id)
    return _in_units(value, format)


def get_persisting_l2_cache_max_size(device_id: int = 0) -> int:
    """The most L2 that can be set aside for persisting accesses, in bytes."""
    return get_device_attribute(cudaDeviceAttrNames.cudaDevAttrMaxPersistingL2CacheSize, device_id)


def get_registers_per_block(device_id: int = 0) -> int:
    """The most 32-bit registers one block may use."""
    return get_device_attribute(cudaDeviceAttrNames.cudaDevAttrMaxRegistersPerBlock, device_id)
