"""TMA by hand (sm_90): TileLang's `T.create_tma_descriptor` and `T.tma_load`, offered as
`T.<name>` by the plugin.

- `T.create_tma_descriptor(data_type, rank, A.data, dims..., strides..., box..., element_strides...,
  interleave, swizzle, l2_promotion, oob_fill)` (7 + 4 * rank arguments, every list innermost
  first, as `cuTensorMapEncodeTiled` takes them; `data_type` and the last four are the CUDA
  driver's enum values): a TMA descriptor of the tensor parameter `A`. As in TileLang the
  kernel does not build it: the host encodes it before each launch and passes it as a
  `__grid_constant__` parameter, the way `T.copy`'s own TMA descriptors travel (`lower_tma`).
  The descriptor must describe `A` as it is: its dims, contiguous strides (the first is the
  element size), element strides 1 and no interleave; anything else is refused, naming the
  argument.
- `T.tma_load(descriptor, mbarrier, smem, coord_0, ..., coord_{rank-1}[, eviction_policy])`:
  one `cp.async.bulk.tensor` of the descriptor's box at those coordinates (innermost first)
  into shared memory at `smem` (a pointer, `T.access_ptr(tile, "w")`, or an element), whose
  completion the mbarrier's phase counts in bytes (`T.mbarrier_arrive_expect_tx`). The
  eviction policy is a cache hint: accepted and not applied.

No barrier is added for a `T.tma_load`: its tile is published by the mbarrier the kernel
waits on. `number_tensor_maps` (lower_tma_descriptors.py) turns the descriptors into numbered
kernel parameters.
"""
from __future__ import annotations

import json
from typing import Any

import tvm_ffi
from tvm import ir, tirx

from tilelang_core import language as T

from .language_ptx import _bar
from .tensor_maps import TMA_DTYPES

__all__ = ["DESCRIPTOR_CALL", "TMA_LANGUAGE_NAMES", "create_tma_descriptor", "tma_load"]

DESCRIPTOR_CALL = "tl::tma_descriptor"  # call_extern(DESCRIPTOR_CALL, spec JSON, A.data) until numbered
# CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill
_DATA_TYPES = ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT64",
               "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ")
_SWIZZLE_BYTES = (0, 32, 64, 128)
_L2_PROMOTIONS = ("NONE", "L2_64B", "L2_128B", "L2_256B")
_OOB_FILLS = ("NONE", "NAN_REQUEST_ZERO_FMA")
MAX_BOX = 256
_ELEMENT_BYTES = {"FLOAT16": 2, "BFLOAT16": 2, "FLOAT32": 4, "FLOAT64": 8, "INT32": 4, "UINT32": 4, "INT64": 8,
                  "UINT64": 8, "UINT8": 1, "UINT16": 2}


def _int(value: Any, what: str) -> int:
    if isinstance(value, tirx.IntImm):
        value = int(value.value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"T.create_tma_descriptor: {what} must be a constant int, got {value!r}")
    return value


def _param_buffer(global_addr: Any):
    if isinstance(global_addr, ir.Call) and getattr(global_addr.op, "name", "") == "tirx.buffer_data":
        return global_addr.args[0]
    if tirx.is_buffer_var(global_addr):
        return global_addr
    raise TypeError(f"T.create_tma_descriptor: global_addr must be a tensor parameter's data (A.data), got "
                    f"{global_addr!r}")


def _same_stride(expected: Any, given: Any) -> bool:
    """Whether a byte stride given equals the contiguous one (ints, or the same expression)."""
    if isinstance(expected, int) or isinstance(given, (int, tirx.IntImm)):
        given = int(given) if isinstance(given, (int, tirx.IntImm)) else None
        return isinstance(expected, int) and given == expected
    return tvm_ffi.structural_equal(expected, given)


def _same(dim: Any, value: Any) -> bool:
    if isinstance(dim, tirx.IntImm) or isinstance(value, (int, tirx.IntImm)):
        return isinstance(dim, tirx.IntImm) and isinstance(value, (int, tirx.IntImm)) and int(dim) == int(value)
    return dim.same_as(value)


def create_tma_descriptor(*args: Any) -> ir.Call:
    """A TMA descriptor of a tensor parameter (see the module for the arguments)."""
    if len(args) < 3:
        raise ValueError("T.create_tma_descriptor: expects data_type, rank, global_addr, then 4 * rank + 4 more")
    data_type, rank = _int(args[0], "data_type"), _int(args[1], "rank")
    if not 1 <= rank <= 5 or len(args) != 7 + 4 * rank:
        raise ValueError(f"T.create_tma_descriptor: rank {rank} takes {7 + 4 * rank} arguments "
                         f"(rank 1 to 5), got {len(args)}")
    buffer = _param_buffer(args[2])
    dims, strides = args[3:3 + rank], args[3 + rank:3 + 2 * rank]
    box = [_int(b, "a box dim") for b in args[3 + 2 * rank:3 + 3 * rank]]
    element_strides = [_int(e, "an element stride") for e in args[3 + 3 * rank:3 + 4 * rank]]
    interleave, swizzle, l2, oob = (_int(v, w) for v, w in zip(args[-4:], ("interleave", "swizzle", "l2_promotion",
                                                                            "oob_fill")))
    dtype = str(buffer.dtype)
    kind = TMA_DTYPES.get(dtype)
    if kind is None:
        raise ValueError(f"T.create_tma_descriptor: {buffer.name} is {dtype}, which TMA cannot move here")
    if not 0 <= data_type < len(_DATA_TYPES) or _DATA_TYPES[data_type] != kind:
        raise ValueError(f"T.create_tma_descriptor: data_type {data_type} does not describe {buffer.name} ({dtype}); "
                         f"give {_DATA_TYPES.index(kind)} (CU_TENSOR_MAP_DATA_TYPE_{kind})")
    shape = list(reversed(list(buffer.ty.shape)))  # innermost first
    if len(shape) != rank or not all(_same(d, v) for d, v in zip(shape, dims)):
        raise ValueError(f"T.create_tma_descriptor: dims {list(dims)} (innermost first) are not those of "
                         f"{buffer.name}, {shape}; a descriptor describes the whole tensor")
    element = _ELEMENT_BYTES[kind]
    expected, stride = [element], element
    for d in shape[:-1]:
        stride = stride * (int(d) if isinstance(d, tirx.IntImm) else d)
        expected.append(stride)
    if not all(_same_stride(e, s) for e, s in zip(expected, strides)):
        raise ValueError(f"T.create_tma_descriptor: strides {list(strides)} (bytes, innermost first) are not "
                         f"those of the contiguous {buffer.name}, {expected}")
    if any(not 1 <= b <= MAX_BOX for b in box):
        raise ValueError(f"T.create_tma_descriptor: box {box} must have every dim in 1..{MAX_BOX}")
    if (box[0] * element) % 16:
        raise ValueError(f"T.create_tma_descriptor: the box's inner dim is {box[0] * element} bytes; TMA moves "
                         f"multiples of 16 bytes")
    if element_strides != [1] * rank or interleave != 0:
        raise ValueError("T.create_tma_descriptor: element strides other than 1 and interleaved layouts are not "
                         "supported; give element strides 1 and interleave 0")
    if not 0 <= swizzle < len(_SWIZZLE_BYTES) or not 0 <= l2 < len(_L2_PROMOTIONS) or not 0 <= oob < len(_OOB_FILLS):
        raise ValueError(f"T.create_tma_descriptor: swizzle {swizzle} (0..3), l2_promotion {l2} (0..3) or "
                         f"oob_fill {oob} (0..1) is not a CUDA enum value")
    if swizzle and box[0] * element > _SWIZZLE_BYTES[swizzle]:
        raise ValueError(f"T.create_tma_descriptor: a {_SWIZZLE_BYTES[swizzle]}-byte swizzle takes a box whose "
                         f"inner dim is at most that many bytes, got {box[0] * element}")
    spec = {"dtype": dtype, "box": list(reversed(box)), "swizzle": _SWIZZLE_BYTES[swizzle],
            "l2_promotion": l2, "oob_fill": oob, "rank": rank}
    return tirx.call_extern("handle", DESCRIPTOR_CALL, ir.StringImm(json.dumps(spec, sort_keys=True)),
                            args[2] if isinstance(args[2], ir.Call) else buffer.data)


def _is_descriptor(value: Any) -> bool:
    return (isinstance(value, ir.Call) and getattr(value.op, "name", "") == "tirx.call_extern"
            and isinstance(value.args[0], ir.StringImm) and str(value.args[0].value) == DESCRIPTOR_CALL)


def tma_load(descriptor: Any, mbarrier: Any, smem: Any, *coords_and_policy: Any) -> ir.Call:
    """One TMA load of the descriptor's box at `coords` (innermost first) into `smem`,
    completing on `mbarrier` (see the module)."""
    if not _is_descriptor(descriptor):
        raise TypeError(f"T.tma_load: the descriptor must be a T.create_tma_descriptor(...) call, got {descriptor!r}")
    rank = int(json.loads(str(descriptor.args[1].value))["rank"])
    coords = list(coords_and_policy)
    if len(coords) == rank + 1:
        coords.pop()  # the eviction policy: a cache hint
    if len(coords) != rank:
        raise ValueError(f"T.tma_load: a rank-{rank} descriptor takes {rank} coordinates (and an optional "
                         f"eviction policy), got {len(coords_and_policy)} arguments after smem")
    if not isinstance(smem, ir.Call):
        smem = T.access_ptr(smem, "w")
    coords = [tirx.const(c, "int32") if isinstance(c, int) else c for c in coords]
    return tirx.call_extern("handle", "tl::tma_load", descriptor, smem, _bar(mbarrier, "tma_load"), *coords)


TMA_LANGUAGE_NAMES = {"create_tma_descriptor": create_tma_descriptor, "tma_load": tma_load}
