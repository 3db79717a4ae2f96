"""TileLang's `tilelang.cuda.intrinsics.sparse_layout`: the metadata layout of 2:4 structured
sparsity (which dense elements one metadata element indexes), as a compressor of sparse
operands reads it.

A 2:4 sparse operand keeps `keep` of every `group` elements along K and records, per kept
element, its position in the group in a small index (2 bits for groups of 4, so 4 bits per
kept pair). Facts from NVIDIA's PTX ISA, "Sparse matrix storage" of `mma.sp`; the sparse GEMM
itself (`T.gemm_sp`) is not provided by tilelang-core yet (docs/compat.md).
"""
from __future__ import annotations

from tilelang_core.language import dtypes as _dtypes

__all__ = ["GROUP_CONFIG", "get_e_factor", "get_e_replicate_factor"]

# operand dtype -> (elements kept, group size) along K: float32 operands are 1:2 sparse (TF32
# mma.sp), 16- and 8-bit operands 2:4
GROUP_CONFIG: dict[str, tuple[int, int]] = {
    _dtypes.DType("float32"): (1, 2),
    **{_dtypes.DType(name): (2, 4) for name in ("float16", "bfloat16", "int8", "uint8", "float8_e4m3fn",
                                                   "float8_e5m2")},
}

_BITS_PER_GROUP = 4  # the position indices of one group's kept elements


def _group(a_dtype) -> tuple[int, int]:
    name = _dtypes.to_dtype(a_dtype)
    if name not in GROUP_CONFIG:
        raise ValueError(f"2:4 sparsity metadata: no sparse MMA operand of dtype {a_dtype!r}; "
                         f"use one of {', '.join(sorted(GROUP_CONFIG))}")
    return GROUP_CONFIG[name]


def get_e_factor(a_dtype, meta_dtype) -> int:
    """How many `a_dtype` elements of the dense operand one `meta_dtype` metadata element
    indexes (e.g. 16 float16 elements per int16)."""
    _, group = _group(a_dtype)
    return (_dtypes.to_dtype(meta_dtype).bits // _BITS_PER_GROUP) * group


def get_e_replicate_factor(a_dtype) -> int:
    """How many consecutive threads of a warp share one logical metadata value: 1 for 8-bit
    operands, 2 for wider ones."""
    _group(a_dtype)
    return 1 if _dtypes.to_dtype(a_dtype).bits <= 8 else 2
