"""Structured-sparse operands for `T.gemm_sp`, in NumPy: compress a 2:4 (1:2 for 32-bit
types) sparse matrix into its kept values and metadata, and back.

The format is TileLang's (its compressor in `examples/gemm_sp/sparse_utils.py` writes the same
bits; `tilelang_core.language.sparse_gemm` describes it): along the last axis, each group of
`group` elements keeps `elem` values in order; one 4-bit nibble per group gives their
positions (bits [1:0] and [3:2]; for 32-bit types in 16-bit halves, 0b0100 or 0b1110), packed
little-endian into integers of the metadata dtype. A group with fewer non-zeros than `elem`
keeps zeros at the first free positions, as TileLang's compressor does. These are reference
helpers for tests and host-side preparation; kernels read the result with `T.gemm_sp`.
"""
from __future__ import annotations

import numpy as np

from tilelang_core.ir.constants import SPARSE_GROUPS

__all__ = ["compress", "decompress", "random_semi_sparse", "sparse_group"]

_NIBBLE_BITS = 4


def sparse_group(dtype) -> tuple[int, int]:
    """`(kept, group)` of a dense dtype name (`"float16"` -> (2, 4), `"float32"` -> (1, 2))."""
    name = str(dtype)
    if name not in SPARSE_GROUPS:
        raise ValueError(f"structured sparsity is defined for {', '.join(sorted(SPARSE_GROUPS))}, got {name}")
    return SPARSE_GROUPS[name]


def _meta_nibbles(meta_dtype: np.dtype) -> int:
    meta_dtype = np.dtype(meta_dtype)
    if meta_dtype.kind not in "iu" or meta_dtype.itemsize not in (1, 2, 4):
        raise ValueError(f"the metadata must be an 8-, 16- or 32-bit integer dtype, got {meta_dtype}")
    return meta_dtype.itemsize * 8 // _NIBBLE_BITS


def compress(dense: np.ndarray, dtype: str | None = None, meta_dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """`(values, meta)` of a 2-D sparse `dense` (rows, K): values (rows, K * elem / group),
    meta (rows, K / e_factor). `dtype` names the element type when NumPy cannot (bfloat16 or
    float8 stored as another dtype); `meta_dtype` defaults to int32 for int8 and int16 otherwise,
    as TileLang's. A group with more non-zeros than it may keep is an error."""
    dense = np.asarray(dense)
    name = dtype or str(dense.dtype)
    elem, group = sparse_group(name)
    meta_dtype = np.dtype(meta_dtype or (np.int32 if name == "int8" else np.int16))
    nibbles = _meta_nibbles(meta_dtype)
    rows, k = dense.shape
    if k % (group * nibbles):
        raise ValueError(f"K={k} must be a multiple of {group * nibbles} ({nibbles} groups of {group} per {meta_dtype})")
    groups = dense.reshape(rows, k // group, group)
    nonzero = groups != 0
    if (nonzero.sum(-1) > elem).any():
        row, g = np.argwhere(nonzero.sum(-1) > elem)[0]
        raise ValueError(f"row {row}, group {g} holds {int(nonzero[row, g].sum())} non-zeros; at most {elem} of {group}")
    # positions: the non-zeros first, then the free positions in order (stable sort)
    order = np.argsort(~nonzero, axis=-1, kind="stable")[..., :elem]
    order = np.sort(order, axis=-1)
    values = np.take_along_axis(groups, order, axis=-1).reshape(rows, k * elem // group)
    codes = order * 2 + np.array([0, 1]) if group == 2 else order  # 16-bit halves for 32-bit types
    nibble = codes[..., 0] | (codes[..., 1] << 2)
    nibble = nibble.reshape(rows, k // group // nibbles, nibbles).astype(np.uint64)
    packed = np.zeros(nibble.shape[:2], dtype=np.uint64)
    for i in range(nibbles):
        packed |= nibble[..., i] << np.uint64(_NIBBLE_BITS * i)
    meta = packed.astype(np.dtype(f"u{meta_dtype.itemsize}")).view(meta_dtype)
    return values, meta


def decompress(values: np.ndarray, meta: np.ndarray, dtype: str | None = None) -> np.ndarray:
    """The dense (rows, K) matrix of `compress`'s `(values, meta)`: what `T.gemm_sp` multiplies."""
    values, meta = np.asarray(values), np.asarray(meta)
    elem, group = sparse_group(dtype or str(values.dtype))
    nibbles = _meta_nibbles(meta.dtype)
    rows, kept = values.shape
    k = kept * group // elem
    unsigned = meta.view(np.dtype(f"u{meta.dtype.itemsize}")).astype(np.uint64)
    shifts = np.arange(nibbles, dtype=np.uint64) * np.uint64(_NIBBLE_BITS)
    nibble = ((unsigned[..., None] >> shifts) & np.uint64(0xF)).reshape(rows, k // group).astype(np.int64)
    dense = np.zeros((rows, k // group, group), dtype=values.dtype)
    kept_values = values.reshape(rows, k // group, elem)
    for slot in reversed(range(elem)):
        position = (nibble >> (2 * slot)) & 3
        if group == 2:
            position >>= 1
        np.put_along_axis(dense, position[..., None], kept_values[..., slot:slot + 1], axis=-1)
    return dense.reshape(rows, k)


def random_semi_sparse(rows: int, k: int, dtype: str = "float16", seed: int = 0) -> np.ndarray:
    """A random (rows, k) matrix with `elem` non-zeros kept in every group of `group` along k
    (normal values; small integers for integer dtypes), as a NumPy array of `dtype`
    (float32 for bfloat16 and float8, which NumPy lacks)."""
    elem, group = sparse_group(dtype)
    rng = np.random.default_rng(seed)
    if dtype.startswith(("int", "uint")):
        low = 0 if dtype.startswith("uint") else -4
        dense = rng.integers(low, 5, size=(rows, k)).astype(dtype)
        dense[dense == 0] = 1
    else:
        dense = rng.standard_normal((rows, k)).astype(dtype if dtype in ("float16", "float32") else "float32")
    keep = np.argsort(rng.random((rows, k // group, group)), axis=-1)[..., :elem]
    mask = np.zeros((rows, k // group, group), dtype=bool)
    np.put_along_axis(mask, keep, True, axis=-1)
    return np.where(mask.reshape(rows, k), dense, 0).astype(dense.dtype)
