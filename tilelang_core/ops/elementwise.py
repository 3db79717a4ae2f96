"""Elementwise operators: gelu, silu, bias_gelu, swiglu, rope.

Two kernels each. "vector" (SIMT targets): every thread moves 16 bytes per access (a Ramp
load into registers, the math per element, a Ramp store), consecutive threads on consecutive
16-byte pieces, one pass; a block's tail piece runs element by element. "plain" (block-serial
targets): a whole-tile loop the C compiler vectorizes.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from .. import language as T
from .launch import OpError, aligned, check_dtype, contiguous, filled, kernel_for, target_for
from .registry import ConfigRule, Operator, register

__all__ = ["gelu", "silu", "bias_gelu", "swiglu", "rope"]

FLOATS = ("float32", "float16", "bfloat16")
_SQRT1_2 = 1.0 / math.sqrt(2.0)


def _gelu(v):
    return v * 0.5 * (1.0 + T.erf(v * _SQRT1_2))


def _silu(v):
    return v / (1.0 + T.exp(-v))


# -- kernels --------------------------------------------------------------------------------


def _vector_lanes(dtype: str, vector_bytes: int) -> int:
    from ..ir import dtype_bytes

    return max(1, vector_bytes // dtype_bytes(dtype))


def _unary_vector(fn: Callable, with_bias: bool):
    def build(problem: dict, config: dict):
        N, C, dtype = problem["N"], problem["C"], problem["dtype"]
        threads, per = config["threads"], config["per_thread"]
        vec = _vector_lanes(dtype, config["vector_bytes"])
        block = threads * vec * per
        bias_piece = with_bias and C % vec == 0  # a piece of x meets one unbroken piece of the bias

        @T.prim_func
        def main(X: T.Tensor((N,), dtype), B: T.Tensor((C,), dtype), Y: T.Tensor((N,), dtype)):
            with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
                x = T.alloc_local((vec,), dtype)
                b = T.alloc_local((vec,), dtype)
                for p, t in T.Parallel(per, threads):
                    base = bx * block + (p * threads + t) * vec
                    if base + vec <= N:
                        x[T.Ramp(0, 1, vec)] = X[T.Ramp(base, 1, vec)]
                        if bias_piece:
                            b[T.Ramp(0, 1, vec)] = B[T.Ramp(base % C, 1, vec)]
                        for v in T.serial(vec):
                            if bias_piece:
                                x[v] = T.cast(fn(T.cast(x[v], "float32") + T.cast(b[v], "float32")), dtype)
                            elif with_bias:
                                x[v] = T.cast(fn(T.cast(x[v], "float32") + T.cast(B[(base + v) % C], "float32")), dtype)
                            else:
                                x[v] = T.cast(fn(T.cast(x[v], "float32")), dtype)
                        Y[T.Ramp(base, 1, vec)] = x[T.Ramp(0, 1, vec)]
                    else:
                        for v in T.serial(vec):
                            if base + v < N:
                                if with_bias:
                                    Y[base + v] = T.cast(fn(T.cast(X[base + v], "float32")
                                                            + T.cast(B[(base + v) % C], "float32")), dtype)
                                else:
                                    Y[base + v] = T.cast(fn(T.cast(X[base + v], "float32")), dtype)

        return main

    return build


def _unary_plain(fn: Callable, with_bias: bool):
    def build(problem: dict, config: dict):
        N, C, dtype = problem["N"], problem["C"], problem["dtype"]
        block = config["block"]

        @T.prim_func
        def main(X: T.Tensor((N,), dtype), B: T.Tensor((C,), dtype), Y: T.Tensor((N,), dtype)):
            with T.Kernel(T.ceildiv(N, block), threads=config["threads"]) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < N:
                        if with_bias:
                            Y[bx * block + i] = T.cast(fn(T.cast(X[bx * block + i], "float32")
                                                          + T.cast(B[(bx * block + i) % C], "float32")), dtype)
                        else:
                            Y[bx * block + i] = T.cast(fn(T.cast(X[bx * block + i], "float32")), dtype)

        return main

    return build


def _binary_vector(problem: dict, config: dict):
    """swiglu: Y = silu(G) * U."""
    N, dtype = problem["N"], problem["dtype"]
    threads, per = config["threads"], config["per_thread"]
    vec = _vector_lanes(dtype, config["vector_bytes"])
    block = threads * vec * per

    @T.prim_func
    def main(G: T.Tensor((N,), dtype), U: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            g = T.alloc_local((vec,), dtype)
            u = T.alloc_local((vec,), dtype)
            for p, t in T.Parallel(per, threads):
                base = bx * block + (p * threads + t) * vec
                if base + vec <= N:
                    g[T.Ramp(0, 1, vec)] = G[T.Ramp(base, 1, vec)]
                    u[T.Ramp(0, 1, vec)] = U[T.Ramp(base, 1, vec)]
                    for v in T.serial(vec):
                        g[v] = T.cast(_silu(T.cast(g[v], "float32")) * T.cast(u[v], "float32"), dtype)
                    Y[T.Ramp(base, 1, vec)] = g[T.Ramp(0, 1, vec)]
                else:
                    for v in T.serial(vec):
                        if base + v < N:
                            Y[base + v] = T.cast(_silu(T.cast(G[base + v], "float32"))
                                                 * T.cast(U[base + v], "float32"), dtype)

    return main


def _binary_plain(problem: dict, config: dict):
    N, dtype, block = problem["N"], problem["dtype"], config["block"]

    @T.prim_func
    def main(G: T.Tensor((N,), dtype), U: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=config["threads"]) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Y[bx * block + i] = T.cast(_silu(T.cast(G[bx * block + i], "float32"))
                                               * T.cast(U[bx * block + i], "float32"), dtype)

    return main


_TABLE = (
    ConfigRule("block-serial", {"kernel": "plain", "block": 4096, "threads": 1}),
    ConfigRule("simt", {"kernel": "vector", "warps": 8, "per_thread": 2, "vector_bytes": 16}),
)
_TUNE = {"warps": (4, 8, 16), "per_thread": (1, 2, 4)}


# -- references -----------------------------------------------------------------------------


def _np():
    import numpy as np

    return np


def _erf(x):
    np = _np()
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def reference_gelu(x):
    x = _np().asarray(x, dtype="float64")
    return 0.5 * x * (1.0 + _erf(x * _SQRT1_2))


def reference_silu(x):
    np = _np()
    x = np.asarray(x, dtype="float64")
    return x / (1.0 + np.exp(-x))


def reference_bias_gelu(x, bias):
    np = _np()
    return reference_gelu(np.asarray(x, dtype="float64") + np.asarray(bias, dtype="float64"))


def reference_swiglu(gate, up):
    return reference_silu(gate) * _np().asarray(up, dtype="float64")


for _name, _fn, _bias, _ref, _summary in (
        ("gelu", _gelu, False, reference_gelu, "GELU (erf form), elementwise"),
        ("silu", _silu, False, reference_silu, "SiLU x*sigmoid(x), elementwise"),
        ("bias_gelu", _gelu, True, reference_bias_gelu, "GELU(x + bias), bias broadcast over the last axis")):
    register(Operator(_name, _summary, {"vector": _unary_vector(_fn, _bias), "plain": _unary_plain(_fn, _bias)},
                      _TABLE, _ref, (2,), {"N": 4096 * 4096, "C": 4096 if _bias else 1, "dtype": "float16"}, _TUNE))
register(Operator("swiglu", "silu(gate) * up, elementwise", {"vector": _binary_vector, "plain": _binary_plain},
                  _TABLE, reference_swiglu, (2,), {"N": 4096 * 11008, "dtype": "float16"}, _TUNE))


# -- calls ----------------------------------------------------------------------------------


def _unary(name: str, x, bias=None, target=None):
    dtype = check_dtype(name, "x", x, FLOATS)
    x = aligned(x)
    if bias is None:
        bias = x.reshape(-1)[:1]
        channels = 1
    else:
        if tuple(bias.shape) != tuple(x.shape[-1:]):
            raise OpError(f"{name}: bias has shape {tuple(bias.shape)}; it must be (x.shape[-1],) = {tuple(x.shape[-1:])}")
        if check_dtype(name, "bias", bias, FLOATS) != dtype:
            raise OpError(f"{name}: bias is {bias.dtype}, x is {x.dtype}; give both one dtype")
        bias = contiguous(bias)
        channels = int(x.shape[-1])
    if not all(x.shape):  # as torch: an empty input gives an empty result
        return filled(x, tuple(x.shape))
    flat = x.reshape(-1)
    tgt = target_for([x, bias], target, name)
    from .registry import get

    kernel, _, _ = kernel_for(get(name), tgt, {"N": int(flat.shape[0]), "C": channels, "dtype": dtype})
    return kernel(flat, bias).reshape(x.shape)


def gelu(x, target=None):
    """GELU of every element (erf form, as `torch.nn.functional.gelu`), computed in float32."""
    return _unary("gelu", x, target=target)


def silu(x, target=None):
    """SiLU of every element: x * sigmoid(x), computed in float32."""
    return _unary("silu", x, target=target)


def bias_gelu(x, bias, target=None):
    """GELU(x + bias), `bias` of shape (x.shape[-1],) broadcast over the leading axes."""
    return _unary("bias_gelu", x, bias, target=target)


def swiglu(gate, up, target=None):
    """silu(gate) * up, elementwise; `gate` and `up` of one shape and dtype."""
    dtype = check_dtype("swiglu", "gate", gate, FLOATS)
    if tuple(gate.shape) != tuple(up.shape) or check_dtype("swiglu", "up", up, FLOATS) != dtype:
        raise OpError(f"swiglu: gate {tuple(gate.shape)} {gate.dtype} and up {tuple(up.shape)} {up.dtype} "
                      f"must have one shape and dtype")
    if not all(gate.shape):
        return filled(gate, tuple(gate.shape))
    gate, up = aligned(gate), aligned(up)
    tgt = target_for([gate, up], target, "swiglu")
    from .registry import get

    kernel, _, _ = kernel_for(get("swiglu"), tgt, {"N": int(gate.reshape(-1).shape[0]), "dtype": dtype})
    return kernel(gate.reshape(-1), up.reshape(-1)).reshape(gate.shape)


# -- rope -----------------------------------------------------------------------------------


def _rope_kernel(problem: dict, config: dict):
    """Rotary embedding, rotate-half form: out[.., :h] = x1*cos - x2*sin, out[.., h:] = x2*cos + x1*sin,
    for rows (tokens*heads) of x, positions `row // heads`."""
    R, D, S, H, dtype = problem["rows"], problem["dim"], problem["seq"], problem["heads"], problem["dtype"]
    half = D // 2
    block_R = config["block_rows"]

    @T.prim_func
    def main(X: T.Tensor((R, D), dtype), Cos: T.Tensor((S, half), "float32"), Sin: T.Tensor((S, half), "float32"),
             Y: T.Tensor((R, D), dtype)):
        with T.Kernel(T.ceildiv(R, block_R), threads=config["threads"]) as bx:
            for r, j in T.Parallel(block_R, half):
                row = bx * block_R + r
                if row < R:
                    pos = (row // H) % S
                    x1 = T.cast(X[row, j], "float32")
                    x2 = T.cast(X[row, j + half], "float32")
                    Y[row, j] = T.cast(x1 * Cos[pos, j] - x2 * Sin[pos, j], dtype)
                    Y[row, j + half] = T.cast(x2 * Cos[pos, j] + x1 * Sin[pos, j], dtype)

    return main


def _rope_vector(problem: dict, config: dict):
    """The same with 16-byte accesses: a thread takes `lanes` consecutive columns of the first
    half of a row and the matching ones of the second half (cos/sin read per element: a small
    table the caches keep). Halves that are no whole number of 16-byte pieces take "rows"."""
    R, D, S, H, dtype = problem["rows"], problem["dim"], problem["seq"], problem["heads"], problem["dtype"]
    half = D // 2
    vec = _vector_lanes(dtype, config["vector_bytes"])
    if half % vec:
        return _rope_kernel(problem, config)
    pieces = half // vec
    block_R = config["block_rows"]

    @T.prim_func
    def main(X: T.Tensor((R, D), dtype), Cos: T.Tensor((S, half), "float32"), Sin: T.Tensor((S, half), "float32"),
             Y: T.Tensor((R, D), dtype)):
        with T.Kernel(T.ceildiv(R, block_R), threads=config["threads"]) as bx:
            a = T.alloc_local((vec,), dtype)
            b = T.alloc_local((vec,), dtype)
            for r, q in T.Parallel(block_R, pieces):
                row = bx * block_R + r
                if row < R:
                    pos = (row // H) % S
                    a[T.Ramp(0, 1, vec)] = X[row, T.Ramp(q * vec, 1, vec)]
                    b[T.Ramp(0, 1, vec)] = X[row, T.Ramp(q * vec + half, 1, vec)]
                    for v in T.unroll(vec):
                        x1 = T.cast(a[v], "float32")
                        x2 = T.cast(b[v], "float32")
                        a[v] = T.cast(x1 * Cos[pos, q * vec + v] - x2 * Sin[pos, q * vec + v], dtype)
                        b[v] = T.cast(x2 * Cos[pos, q * vec + v] + x1 * Sin[pos, q * vec + v], dtype)
                    Y[row, T.Ramp(q * vec, 1, vec)] = a[T.Ramp(0, 1, vec)]
                    Y[row, T.Ramp(q * vec + half, 1, vec)] = b[T.Ramp(0, 1, vec)]

    return main


def reference_rope(x, cos, sin):
    np = _np()
    x = np.asarray(x, dtype="float64")
    half = x.shape[-1] // 2
    c = np.asarray(cos, dtype="float64")[None, :, None, :]
    s = np.asarray(sin, dtype="float64")[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


register(Operator("rope", "rotary position embedding (rotate-half) of x (batch, seq, heads, dim)",
                  {"rows": _rope_kernel, "vector": _rope_vector},
                  (ConfigRule("block-serial", {"kernel": "rows", "block_rows": 64, "threads": 1}),
                   ConfigRule("simt", {"kernel": "vector", "block_rows": 32, "warps": 4, "vector_bytes": 16})),
                  reference_rope, (3,), {"rows": 4 * 2048 * 32, "dim": 128, "seq": 2048, "heads": 32, "dtype": "float16"},
                  {"block_rows": (4, 8, 16, 32)}))


def rope(x, cos, sin, target=None):
    """Rotary position embedding of `x` (batch, seq, heads, dim), rotate-half form, with
    float32 tables `cos`, `sin` of shape (seq, dim // 2)."""
    dtype = check_dtype("rope", "x", x, FLOATS)
    if len(x.shape) != 4 or x.shape[-1] % 2:
        raise OpError(f"rope: x has shape {tuple(x.shape)}; it must be (batch, seq, heads, dim) with an even dim")
    b, s, h, d = (int(v) for v in x.shape)
    for name, t in (("cos", cos), ("sin", sin)):
        check_dtype("rope", name, t, ("float32",))
        if tuple(t.shape) != (s, d // 2):
            raise OpError(f"rope: {name} has shape {tuple(t.shape)}; it must be (seq, dim // 2) = {(s, d // 2)}")
    if not all(x.shape):
        return filled(x, tuple(x.shape))
    x = aligned(x)
    tgt = target_for([x, cos, sin], target, "rope")
    from .registry import get

    problem = {"rows": b * s * h, "dim": d, "seq": s, "heads": h, "dtype": dtype}
    kernel, _, _ = kernel_for(get("rope"), tgt, problem)
    return kernel(x.reshape(b * s * h, d), contiguous(cos), contiguous(sin)).reshape(x.shape)
