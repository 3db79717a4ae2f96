"""`T.gemm_sp`: a GEMM whose A operand is 2:4 (1:2 for 32-bit types) structured-sparse.

TileLang's format, which its compressor (`examples/gemm_sp/sparse_utils.py`) writes and its
tests build: along K, every group of `group` consecutive elements of the dense A keeps `elem`
of them (2 of 4; 1 of 2 for 32-bit types), in order, so the compressed tile holds K / 2
columns. The metadata E has one 4-bit nibble per group, packed little-endian into integers
of E's dtype (int8/int16/int32, signed or not): nibble `g % (bits / 4)` of
`E[m, g // (bits / 4)]` describes group `g` of row `m`; its bits [1:0] are the position (0..3)
within the group of the first kept element, bits [3:2] that of the second. For 32-bit types
the positions are counted in 16-bit halves: 0b0100 keeps element 0, 0b1110 element 1.
`transpose_A` / `transpose_E` store A (K / 2, M) and E (K / e_factor, M) instead, where
`e_factor = bits(E) / 4 * group` dense elements share one metadata integer
(`tilelang.cuda.intrinsics.sparse_layout.get_e_factor`).

The op is `tl.gemm_sp(A, E, B, C, trans_A, trans_E, trans_B, policy, clear_accum, M, N, K)`
in the tile IR, K being the dense K. The core expands it before any other pass
(`tilelang_core.transform.sparse_gemm`): the dense A tile is rebuilt from A and E, then the
ordinary `T.gemm` runs, so every target runs it.
"""
from __future__ import annotations

from typing import Any

import tvm
from tvm import ir

from tilelang_core.ir.constants import ACCESS_READ, ACCESS_READ_WRITE, SPARSE_GROUPS
from tilelang_core.ir.ops import make_call

from .regions import as_region, describe, known_unequal, squeeze_leading
from .tileops import GemmWarpPolicy, clear

__all__ = ["gemm_sp"]


def _matrix(region, role: str) -> tuple:
    extents = squeeze_leading(region.extents, 2)
    if extents is None or len(extents) != 2:
        raise ValueError(f"T.gemm_sp: {role} must be a matrix (leading dims of extent 1 are allowed), "
                         f"got {describe(region)}")
    return extents


def _dtype_bits(dtype: str) -> int:
    from tvm import DataType

    return DataType(dtype).bits


def _check_dtypes(a, e, b) -> int:
    """The group size of A's dtype; errors name the dtypes TileLang's format knows."""
    if a.dtype != b.dtype:
        raise ValueError(f"T.gemm_sp: A and B must have the same dtype, got A {a.dtype} and B {b.dtype}")
    if a.dtype not in SPARSE_GROUPS:
        raise ValueError(f"T.gemm_sp: A has dtype {a.dtype}; structured sparsity is defined for "
                         f"{', '.join(sorted(SPARSE_GROUPS))}")
    if not e.dtype.startswith(("int", "uint")) or _dtype_bits(e.dtype) not in (8, 16, 32):
        raise ValueError(f"T.gemm_sp: the metadata E must be an 8-, 16- or 32-bit integer tile, got {describe(e)} "
                         f"of dtype {e.dtype}")
    return SPARSE_GROUPS[a.dtype][1]


def gemm_sp(
    A_sparse: Any,  # noqa: N803 - TileLang's argument names
    E: Any,  # noqa: N803
    B: Any,  # noqa: N803
    C: Any,  # noqa: N803
    transpose_A: bool = False,  # noqa: N803
    transpose_E: bool = False,  # noqa: N803
    transpose_B: bool = False,  # noqa: N803
    policy: GemmWarpPolicy | int = GemmWarpPolicy.Square,
    clear_accum: bool = False,
    k_pack: int = 1,
    wg_wait: int = 0,
    annotations: dict | None = None,
) -> ir.Call:
    """`C += dense(A_sparse, E) @ B` on tiles (`C = ...` with `clear_accum=True`), the dense
    A being rebuilt from its compressed values and metadata as the module docstring says.
    `k_pack`, `wg_wait` and `annotations` are TileLang's scheduling hints: `k_pack` and
    `wg_wait` must keep their defaults (as for `T.gemm`), annotations are accepted."""
    if k_pack != 1 or wg_wait != 0:
        raise ValueError("T.gemm_sp: k_pack and wg_wait are not supported by tilelang-core; leave them out")
    if annotations is not None and not isinstance(annotations, dict):
        raise TypeError(f"T.gemm_sp: annotations must be a dict, got {type(annotations).__name__}")
    policy = GemmWarpPolicy(int(policy))
    a = as_region(A_sparse, ACCESS_READ, "gemm_sp", "A_sparse")
    e = as_region(E, ACCESS_READ, "gemm_sp", "E")
    b = as_region(B, ACCESS_READ, "gemm_sp", "B")
    c = as_region(C, ACCESS_READ_WRITE, "gemm_sp", "C")
    group = _check_dtypes(a, e, b)
    a0, a1 = _matrix(a, "A_sparse")
    e0, e1 = _matrix(e, "E")
    b0, b1 = _matrix(b, "B")
    c0, c1 = _matrix(c, "C")
    m, k_half = (a1, a0) if transpose_A else (a0, a1)
    k = k_half * 2
    k_b, n = (b1, b0) if transpose_B else (b0, b1)
    e_m, e_k = (e1, e0) if transpose_E else (e0, e1)
    e_factor = _dtype_bits(e.dtype) // 4 * group
    shapes = (f"A_sparse is {describe(a)}, E is {describe(e)}, B is {describe(b)}, C is {describe(c)}, "
              f"transpose_A={bool(transpose_A)}, transpose_E={bool(transpose_E)}, transpose_B={bool(transpose_B)}")
    if known_unequal(k, k_b):
        raise ValueError(f"T.gemm_sp: the dense K of A (2 x {k_half}) is {k} but K of B is {k_b}; {shapes}")
    if known_unequal(m, c0) or known_unequal(n, c1):
        raise ValueError(f"T.gemm_sp: A @ B is ({m}, {n}) but C is ({c0}, {c1}); {shapes}")
    if known_unequal(e_m, m) or known_unequal(e_k * e_factor, k):
        expected = (k // e_factor, m) if transpose_E else (m, k // e_factor)
        raise ValueError(f"T.gemm_sp: E must be {expected} ({e.dtype} holds the metadata of {e_factor} elements of "
                         f"{a.dtype} along K); {shapes}")
    if isinstance(clear_accum, ir.Expr) and not isinstance(clear_accum, tvm.tirx.IntImm):
        # a condition known at run time (`clear_accum=(k == 0)`): C is cleared where it holds
        from tvm.tirx.script.builder import ir as _builder

        with _builder.If(clear_accum):
            with _builder.Then():
                _builder.evaluate(clear(C))
        clear_accum = False
    return make_call("gemm_sp", a.to_call(), e.to_call(), b.to_call(), c.to_call(), bool(transpose_A),
                     bool(transpose_E), bool(transpose_B), int(policy), bool(clear_accum), c0, c1, k)
