"""TileLang's `tilelang.cuda.intrinsics.sparse_layout`: the metadata arithmetic of 2:4
semi-structured sparsity (mma.sp), which TileLang's sparse compressor and its sparse GEMM share.

A 2:4 sparse operand keeps `elem` of every `group` consecutive values along K (2 of 4; for
32-bit floats, 1 of 2) plus metadata: 4 bits per group (two 2-bit positions), packed into
integers of the metadata dtype. These functions only compute those factors; the sparse GEMM
itself (`T.gemm_sp`) is the core's (`tilelang_core.language.sparse_gemm`), which reads the same
format on every target.
"""
from __future__ import annotations

from tilelang_core import language as T

__all__ = ["GROUP_CONFIG", "get_e_factor", "get_e_replicate_factor"]

# operand dtype -> (values kept, group size) along K
GROUP_CONFIG: dict[str, tuple[int, int]] = {
    T.float32: (1, 2),
    T.float16: (2, 4),
    T.bfloat16: (2, 4),
    T.int8: (2, 4),
    T.uint8: (2, 4),
    T.float8_e4m3fn: (2, 4),
    T.float8_e5m2: (2, 4),
}

_BITS_PER_GROUP = 4  # two 2-bit indices of the kept values


def _group(a_dtype) -> tuple[int, int]:
    name = T.dtype(a_dtype)
    if name not in GROUP_CONFIG:
        raise ValueError(f"2:4 sparsity has no layout for operand dtype {name}; "
                         f"supported: {', '.join(sorted(GROUP_CONFIG))}")
    return GROUP_CONFIG[name]


def get_e_factor(a_dtype, meta_dtype) -> int:
    """How many elements of the dense operand (`a_dtype`) one metadata element
    (`meta_dtype`) indexes: `(meta bits / 4) * group` (16 for float16 with int16 metadata)."""
    _, group = _group(a_dtype)
    return (T.dtype(meta_dtype).bits // _BITS_PER_GROUP) * group


def get_e_replicate_factor(a_dtype) -> int:
    """How many consecutive threads share one metadata value: 1 for 8-bit operands, 2 for
    wider ones."""
    return 1 if T.dtype(a_dtype).bits <= 8 else 2
