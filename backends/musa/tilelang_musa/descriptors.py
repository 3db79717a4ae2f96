"""TME descriptors (`MUtensorDescriptor`) for a launch: the runtime half of `lower_tme`.

A kernel whose loads go through TME takes, after its other parameters, one descriptor per
entry of its metadata's `extra["tensor_descriptors"]` (JSON: the tensor parameter, dtype, shape
outermost first, a symbolic dim by its parameter's name). `DescriptorSlot` holds one such
parameter and encodes it with the driver's `muTensorDescriptorEncode` when the tensor's address
or shape differs from the last launch's; otherwise a launch costs a comparison.

`muTensorDescriptorEncode(&desc, dtype, rank, address, dims, strides, interleave, oob_fill)`:
dims innermost first, the byte strides of dims 1 .. rank-1 (dim 0's is the element), no
interleave, zeros out of bounds; no box (each load names its box). Facts: Moore Threads' port,
tilelang/jit/adapter/musa_wrapper.py:63-90 (`muTensorDescriptorEncode(&desc, type, rank, address,
globalDim, globalStride + 1, interleave, oobFill)`) and src/target/musa.h (the data type enum) at
dd1cce9b. Written without a MUSA device: not run on hardware yet.

No TVM here: this runs where only the driver and torch_musa are installed.
"""
from __future__ import annotations

import ctypes
import json
from typing import Any, Callable, Sequence

from tilelang_core.runtime import KernelCallError, KernelMeta

__all__ = ["DescriptorSlot", "descriptor_slots", "DESCRIPTOR_TYPES", "DESCRIPTOR_BYTES"]

# dtype -> MUtensorDescriptorDataType (src/target/musa.h: INT8 = 0, UINT8, INT16, UINT16, FLOAT16,
# BFLOAT16, INT32, UINT32, FLOAT32, TFLOAT32, INT64, UINT64, FLOAT64); fp8 moves as UINT8 (MUTLASS)
DESCRIPTOR_TYPES = {
    "int8": 0, "uint8": 1, "int16": 2, "uint16": 3, "float16": 4, "bfloat16": 5, "int32": 6, "uint32": 7,
    "float32": 8, "int64": 10, "uint64": 11, "float64": 12, "float8_e4m3fn": 1, "float8_e5m2": 1,
}
_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4,
          "float32": 4, "int64": 8, "uint64": 8, "float64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1}
# the size of MUtensorDescriptor is not published: 128 bytes (CUDA's CUtensorMap), 64-aligned,
# are reserved; the driver copies the parameter's own size from here
DESCRIPTOR_BYTES = 128
DESCRIPTOR_ALIGNMENT = 64
_INTERLEAVE_NONE = 0


class DescriptorSlot:
    """One descriptor parameter of a kernel (see the module docstring). `address` (64-byte
    aligned) is what the launch's parameter array points at."""

    def __init__(self, spec: dict, param_index: dict[str, int], entry: str, param_names: Sequence[str]):
        self.entry = entry
        self.param = int(spec["param"])
        self.name = param_names[self.param]
        dtype = spec["dtype"]
        if dtype not in DESCRIPTOR_TYPES:
            raise KernelCallError(f"kernel {entry!r}: no TME data type for {dtype!r}; recompile with "
                                  "pass_configs={'tl.disable_tma_lower': True}")
        self.kind, self.element = DESCRIPTOR_TYPES[dtype], _BYTES[dtype]
        self.dims: list[Callable[[Sequence[Any]], int]] = []
        for d in spec["shape"]:
            if isinstance(d, int):
                self.dims.append(lambda args, d=d: d)
            else:
                index = param_index[d]
                self.dims.append(lambda args, index=index: int(args[index]))
        self._storage = (ctypes.c_uint8 * (DESCRIPTOR_BYTES + DESCRIPTOR_ALIGNMENT))()
        base = ctypes.addressof(self._storage)
        self.address = (base + DESCRIPTOR_ALIGNMENT - 1) // DESCRIPTOR_ALIGNMENT * DESCRIPTOR_ALIGNMENT
        self._key: tuple | None = None

    def update(self, lib, pointer: int, args: Sequence[Any]) -> None:
        """Encode the descriptor for the tensor at `pointer` through driver `lib` (unless the
        last launch had the same address and shape)."""
        shape = [dim(args) for dim in self.dims]
        key = (pointer, *shape)
        if key == self._key:
            return
        if pointer % 16:
            raise KernelCallError(
                f"argument {self.name!r} of {self.entry}: its data starts at {pointer:#x}, which is not 16-byte "
                f"aligned; the kernel loads it through TME. Pass an aligned tensor (a fresh allocation, not an "
                f"offset view) or compile with pass_configs={{'tl.disable_tma_lower': True}}")
        dims = list(reversed(shape))  # innermost first
        strides, stride = [], self.element
        for d in dims[:-1]:
            stride *= d
            strides.append(stride)
        rank = len(dims)
        status = lib.muTensorDescriptorEncode(
            ctypes.c_void_p(self.address), ctypes.c_int(self.kind), ctypes.c_uint32(rank), ctypes.c_void_p(pointer),
            (ctypes.c_uint64 * rank)(*[max(1, d) for d in dims]), (ctypes.c_uint64 * max(1, rank - 1))(*strides),
            ctypes.c_int(_INTERLEAVE_NONE), ctypes.c_uint64(0))
        if status != 0:
            raise KernelCallError(f"muTensorDescriptorEncode failed with MUresult {status} for argument {self.name!r} "
                                  f"of {self.entry} (shape {shape}, dtype code {self.kind}); compile with "
                                  f"pass_configs={{'tl.disable_tma_lower': True}} to load without TME")
        self._key = key


def descriptor_slots(meta: KernelMeta) -> list[DescriptorSlot]:
    """The descriptor parameters `meta` asks for, in parameter order ([] for most kernels)."""
    text = meta.extra.get("tensor_descriptors")
    if not text:
        return []
    names = [p.name for p in meta.params]
    index = {name: i for i, name in enumerate(names)}
    return [DescriptorSlot(spec, index, meta.entry, names) for spec in json.loads(text)]
