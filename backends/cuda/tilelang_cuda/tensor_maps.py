"""TMA descriptors (`CUtensorMap`) for a launch: the runtime half of `lower_tma`.

A kernel whose loads go through TMA takes, after its other parameters, one 128-byte
descriptor per tensor map its metadata lists (`meta.extra["tensor_maps"]`, JSON: the tensor
parameter, dtype, shape with symbolic dims by parameter name, box, swizzle; optionally the L2
promotion and out-of-bounds fill, as CUDA's enum values). `TensorMapSlot`
holds one such parameter and encodes it (`cuTensorMapEncodeTiled`) when the tensor's address
or shape differs from the last launch's; otherwise a launch costs a comparison.

No TVM here: this runs on deployment machines with only cuda-python.
"""
from __future__ import annotations

import ctypes
import json
from typing import Any, Callable, Sequence

from tilelang_core.runtime import KernelCallError, KernelMeta

__all__ = ["TensorMapSlot", "tensor_map_slots", "TMA_DTYPES"]

# dtype -> CUtensorMapDataType member (8/16-bit integers and fp8 move as raw bytes)
TMA_DTYPES = {
    "float16": "FLOAT16", "bfloat16": "BFLOAT16", "float32": "FLOAT32", "float64": "FLOAT64",
    "int32": "INT32", "uint32": "UINT32", "int64": "INT64", "uint64": "UINT64",
    "int8": "UINT8", "uint8": "UINT8", "float8_e4m3fn": "UINT8", "float8_e5m2": "UINT8",
    "int16": "UINT16", "uint16": "UINT16",
}
_BYTES = {"FLOAT16": 2, "BFLOAT16": 2, "FLOAT32": 4, "FLOAT64": 8, "INT32": 4, "UINT32": 4, "INT64": 8,
          "UINT64": 8, "UINT8": 1, "UINT16": 2}
_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
_L2_PROMOTIONS = ("NONE", "L2_64B", "L2_128B", "L2_256B")  # CUtensorMapL2promotion, by value
_OOB_FILLS = ("NONE", "NAN_REQUEST_ZERO_FMA")  # CUtensorMapFloatOOBfill, by value
DESCRIPTOR_BYTES = 128
DESCRIPTOR_ALIGNMENT = 64


class TensorMapSlot:
    """One descriptor parameter of a kernel (see the module docstring).

    `spec` is one entry of the metadata's list; `param_index` maps a parameter name to its
    position in the launch arguments (symbolic dims are read from there); `where` names the
    kernel in errors. `address` (64-byte aligned) is what the driver's parameter array points at."""

    def __init__(self, spec: dict, param_index: dict[str, int], entry: str, param_names: Sequence[str]):
        self.entry = entry
        self.param = int(spec["param"])
        self.name = param_names[self.param]
        self.kind = TMA_DTYPES.get(spec["dtype"])
        if self.kind is None:
            raise KernelCallError(f"kernel {entry!r}: no TMA data type for {spec['dtype']!r}; recompile with "
                                  "pass_configs={'tl.disable_tma_lower': True}")
        self.element = _BYTES[self.kind]
        self.dims: list[Callable[[Sequence[Any]], int]] = []
        for d in spec["shape"]:
            if isinstance(d, int):
                self.dims.append(lambda args, d=d: d)
            else:
                index = param_index[d]
                self.dims.append(lambda args, index=index: int(args[index]))
        self.box = [int(b) for b in spec["box"]]
        self.swizzle = _SWIZZLES[int(spec["swizzle"])]
        # optional (T.create_tma_descriptor): T.copy's maps promote 256 B into L2 and fill no NaN
        self.l2_promotion = _L2_PROMOTIONS[int(spec.get("l2_promotion", 3))]
        self.oob_fill = _OOB_FILLS[int(spec.get("oob_fill", 0))]
        self._storage = (ctypes.c_uint8 * (DESCRIPTOR_BYTES + DESCRIPTOR_ALIGNMENT))()
        base = ctypes.addressof(self._storage)
        self.address = (base + DESCRIPTOR_ALIGNMENT - 1) // DESCRIPTOR_ALIGNMENT * DESCRIPTOR_ALIGNMENT
        self._key: tuple | None = None

    def update(self, pointer: int, args: Sequence[Any]) -> None:
        """Encode the descriptor for the tensor at `pointer` (unless the last launch had the
        same address and shape)."""
        shape = [dim(args) for dim in self.dims]
        key = (pointer, *shape)
        if key == self._key:
            return
        if pointer % 16:
            raise KernelCallError(
                f"argument {self.name!r} of {self.entry}: its data starts at {pointer:#x}, which is not 16-byte "
                f"aligned; the kernel loads it through TMA, which needs 16-byte alignment. Pass an aligned tensor "
                f"(a fresh allocation, not an offset view) or compile with "
                f"pass_configs={{'tl.disable_tma_lower': True}}")
        self._encode(pointer, shape)
        self._key = key

    def _encode(self, pointer: int, shape: list[int]) -> None:
        from cuda.bindings import driver as cu

        from .runtime import _check

        rank = len(shape)
        dims = list(reversed(shape))  # innermost first
        strides, stride = [], self.element
        for d in dims[:-1]:
            stride *= d
            strides.append(stride)
        tensor_map = _check(cu.cuTensorMapEncodeTiled(
            getattr(cu.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{self.kind}"), rank, pointer,
            [cu.cuuint64_t(max(1, d)) for d in dims], [cu.cuuint64_t(s) for s in strides],
            [cu.cuuint32_t(b) for b in reversed(self.box)], [cu.cuuint32_t(1)] * rank,
            cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            getattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{self.swizzle}"),
            getattr(cu.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{self.l2_promotion}"),
            getattr(cu.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{self.oob_fill}")), "cuTensorMapEncodeTiled",
            f"the TMA descriptor of argument {self.name!r} of {self.entry} (shape {shape}, box {self.box}, "
            f"swizzle {self.swizzle})")
        ctypes.memmove(self.address, int(tensor_map.getPtr()), DESCRIPTOR_BYTES)


def tensor_map_slots(meta: KernelMeta) -> list[TensorMapSlot]:
    """The descriptor parameters `meta` asks for, in parameter order ([] for most kernels)."""
    text = meta.extra.get("tensor_maps")
    if not text:
        return []
    names = [p.name for p in meta.params]
    index = {name: i for i, name in enumerate(names)}
    return [TensorMapSlot(spec, index, meta.entry, names) for spec in json.loads(text)]
