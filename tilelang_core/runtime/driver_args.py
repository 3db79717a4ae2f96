"""Pieces a GPU runtime built on a driver API shares: kernel arguments as ctypes values, and a
runtime made on first use.

A launch through `cuLaunchKernel`, `hipModuleLaunchKernel`, `muLaunchKernel` and their kind
takes `kernelParams`, an array of pointers, one per parameter, each to the parameter's value
in the kernel's own C type. `scalar_packer`/`pack_driver_args` build those values from a call's
arguments (`KernelMeta.params` order: a device address per tensor, a Python number per
scalar); the runtime passes their addresses and keeps the values alive until the call returns.

`RuntimeOnDemand` is the runtime a plugin hands out where compiling must work without the
device: it makes the real runtime when a kernel is first loaded (or anything else is asked of
it), so only loading or launching raises the backend's "unavailable" error.

Nothing here imports a driver or TVM.
"""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable, Sequence

from .base import KernelCallError, KernelMeta, LoadedKernel, ParamSpec, Runtime

__all__ = ["float16_bits", "bfloat16_bits", "scalar_packer", "pack_driver_args", "RuntimeOnDemand"]


def float16_bits(value: float) -> int:
    """The IEEE binary16 bit pattern of `value` (rounded to nearest even)."""
    return struct.unpack("<H", struct.pack("<e", float(value)))[0]


def bfloat16_bits(value: float) -> int:
    """The bfloat16 bit pattern of `value`: rounded to nearest even, as torch does; a NaN stays
    a (quiet) NaN."""
    bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return (bits >> 16) | 0x40
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


_SCALARS: dict[str, Callable[[Any], Any]] = {
    "bool": lambda v: ctypes.c_bool(bool(v)),
    "int8": lambda v: ctypes.c_int8(int(v)),
    "uint8": lambda v: ctypes.c_uint8(int(v)),
    "int16": lambda v: ctypes.c_int16(int(v)),
    "uint16": lambda v: ctypes.c_uint16(int(v)),
    "int32": lambda v: ctypes.c_int32(int(v)),
    "uint32": lambda v: ctypes.c_uint32(int(v)),
    "int64": lambda v: ctypes.c_int64(int(v)),
    "uint64": lambda v: ctypes.c_uint64(int(v)),
    "float16": lambda v: ctypes.c_uint16(float16_bits(v)),
    "bfloat16": lambda v: ctypes.c_uint16(bfloat16_bits(v)),
    "float32": lambda v: ctypes.c_float(float(v)),
    "float64": lambda v: ctypes.c_double(float(v)),
}


def scalar_packer(param: ParamSpec, runtime: str) -> Callable[[Any], Any]:
    """The function that turns one argument for `param` into its ctypes value: a `c_void_p`
    for a tensor's device address, the scalar's C type for a scalar (float16 and bfloat16 as
    their 16-bit patterns). A dtype no C type is given for raises `KernelCallError` naming the
    parameter, `runtime` (e.g. "the HIP runtime") and the dtypes it can pass."""
    if param.kind == "tensor":
        return lambda address: ctypes.c_void_p(int(address))
    if param.kind == "scalar" and param.dtype in _SCALARS:
        return _SCALARS[param.dtype]
    raise KernelCallError(f"parameter {param.name!r}: {runtime} cannot pass a {param.kind} of dtype "
                          f"{param.dtype!r}; scalars may be {', '.join(_SCALARS)}")


def pack_driver_args(params: Sequence[ParamSpec], args: Sequence[Any], runtime: str) -> list[Any]:
    """One ctypes value per parameter (`scalar_packer`), after checking the argument count."""
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise KernelCallError(f"kernel takes {len(params)} arguments ({names}), got {len(args)}")
    return [scalar_packer(p, runtime)(a) for p, a in zip(params, args)]


class RuntimeOnDemand(Runtime):
    """A `Runtime` that makes the real one, `make()`, on first use and forwards every call to
    it, so a kernel compiles (and exports) where nothing can run: there `make` raises the
    backend's error saying what is missing, at load or launch, not when the plugin is asked for
    its runtime. `dlpack_device_type` and `takes_tensors` are the real runtime's, known
    without making it."""

    def __init__(self, make: Callable[[], Runtime], dlpack_device_type: int, takes_tensors: bool = False):
        self._make = make
        self._runtime: Runtime | None = None
        self.dlpack_device_type = dlpack_device_type
        self.takes_tensors = takes_tensors

    @property
    def runtime(self) -> Runtime:
        """The real runtime, made on the first call."""
        if self._runtime is None:
            self._runtime = self._make()
        return self._runtime

    def load(self, binary: bytes, meta: KernelMeta) -> LoadedKernel:
        return self.runtime.load(binary, meta)

    def current_stream(self, device_index: int = 0) -> Any:
        return self.runtime.current_stream(device_index)

    def synchronize(self) -> None:
        self.runtime.synchronize()

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        return self.runtime.allocate(like, shape, dtype)

    def from_numpy(self, array: Any) -> Any:
        return self.runtime.from_numpy(array)

    def make_timer(self) -> Any:
        return self.runtime.make_timer()

    def flush_l2(self) -> None:
        self.runtime.flush_l2()
