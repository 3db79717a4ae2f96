"""Elementwise kernels: one per dtype (the dtype claims), native 16-bit arithmetic, math
functions, a scalar parameter and a 2-D grid, all with masked tails."""
from __future__ import annotations

import numpy as np

from tilelang_core import language as T

from ..case import Arg, Case, Scalar, Spec, add, case

__all__ = ["ELEMENTWISE_DTYPES", "compute_dtype", "dtype_case"]

ELEMENTWISE_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16",
                      "float32", "float64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                      "float8_e5m2fnuz")

N = 1000  # not a multiple of the block: the last block is masked
BLOCK = 256


def compute_dtype(dtype: str) -> str:
    """The dtype `2*a + b` is computed in before the result is cast back."""
    if dtype in ("float64", "int64", "uint64"):
        return dtype
    if dtype.startswith(("int", "uint")):
        return "int32"
    return "float32"


def axpy_kernel(n: int, dtype: str, block: int = BLOCK):
    """C = cast(2 * A + B), computed in `compute_dtype`."""
    cdt = compute_dtype(dtype)

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = T.cast(
                        T.cast(A[bx * block + i], cdt) * T.cast(2, cdt) + T.cast(B[bx * block + i], cdt), dtype)

    return main


def xor_kernel(n: int, block: int = BLOCK):
    """C = A != B on bool tensors."""

    @T.prim_func
    def main(A: T.Tensor((n,), "bool"), B: T.Tensor((n,), "bool"), C: T.Tensor((n,), "bool")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] != B[bx * block + i]

    return main


def dtype_spec(dtype: str) -> Spec:
    args = [Arg("A", (N,), dtype), Arg("B", (N,), dtype), Arg("C", (N,), dtype, "out")]
    if dtype == "bool":
        return Spec(xor_kernel(N), args, lambda A, B: {"C": A != B})
    return Spec(axpy_kernel(N, dtype), args, lambda A, B: {"C": 2 * A + B})


def dtype_case(dtype: str) -> Case:
    """The elementwise case of one dtype: the probe of a declared dtype."""
    return Case(f"elementwise.{dtype}", "elementwise", (dtype,), lambda target: dtype_spec(dtype),
                f"C = 2*A + B in {dtype} over {N} elements (masked tail)", claims=(dtype,))


for _dtype in ELEMENTWISE_DTYPES:
    add(dtype_case(_dtype))


def native_kernel(n: int, dtype: str, block: int = BLOCK):
    """C = A * B + A in `dtype` arithmetic, through fragments (T.copy with a masked tail)."""

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            a = T.alloc_fragment((block,), dtype)
            b = T.alloc_fragment((block,), dtype)
            T.copy(A[bx * block], a)
            T.copy(B[bx * block], b)
            for i in T.Parallel(block):
                a[i] = a[i] * b[i] + a[i]
            T.copy(a, C[bx * block])

    return main


def _native(dtype: str) -> Spec:
    args = [Arg("A", (N,), dtype), Arg("B", (N,), dtype), Arg("C", (N,), dtype, "out")]
    # two roundings in the narrow dtype
    rtol = {"float16": 2e-3, "bfloat16": 2e-2}[dtype]
    return Spec(native_kernel(N, dtype), args, lambda A, B: {"C": A * B + A}, {"C": (rtol, rtol)})


@case("elementwise.native.float16", feature="elementwise", needs=("float16",))
def native_float16():
    """C = A*B + A in float16 arithmetic, through fragments."""
    return _native("float16")


@case("elementwise.native.bfloat16", feature="elementwise", needs=("bfloat16",))
def native_bfloat16():
    """C = A*B + A in bfloat16 arithmetic, through fragments."""
    return _native("bfloat16")


def math_kernel(n: int, block: int = 128):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = (
                        T.exp(X[bx * block + i]) + T.log(T.abs(X[bx * block + i]))
                        + T.sqrt(T.abs(X[bx * block + i])) + T.rsqrt(T.abs(X[bx * block + i]))
                        + T.exp2(X[bx * block + i]) + T.tanh(X[bx * block + i])
                        + T.if_then_else(X[bx * block + i] > 0, 1.0, -1.0)
                        + T.max(X[bx * block + i], 0.5) + T.min(X[bx * block + i], -0.5))

    return main


def _math_reference(X):
    a = np.abs(X)
    return {"Y": np.exp(X) + np.log(a) + np.sqrt(a) + 1 / np.sqrt(a) + np.exp2(X) + np.tanh(X)
            + np.where(X > 0, 1.0, -1.0) + np.maximum(X, 0.5) + np.minimum(X, -0.5)}


@case("elementwise.math", feature="elementwise", needs=("float32",))
def math_float32():
    """exp, log, sqrt, rsqrt, exp2, tanh, abs, if_then_else, max, min in float32."""
    n = 777
    return Spec(math_kernel(n), [Arg("X", (n,), "float32", low=0.1, high=2.0), Arg("Y", (n,), "float32", "out")],
                _math_reference, {"Y": (1e-5, 1e-5)})


def scale_kernel(n: int, block: int = 256):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32"),
             alpha: T.float32):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] * alpha + B[bx * block + i]

    return main


@case("elementwise.scalar_param", feature="elementwise", needs=("float32",))
def scalar_param():
    """C = A*alpha + B with alpha a float32 scalar parameter."""
    n = 999
    return Spec(scale_kernel(n),
                [Arg("A", (n,), "float32"), Arg("B", (n,), "float32"), Arg("C", (n,), "float32", "out"),
                 Scalar("alpha", -1.75)],
                lambda A, B, alpha: {"C": A * alpha + B})


def grid2d_kernel(m: int, n: int, bm: int = 32, bn: int = 64):
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                if by * bm + i < m and bx * bn + j < n:
                    C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] - B[bx * bn + j]

    return main


@case("elementwise.grid2d", feature="elementwise", needs=("float32",))
def grid2d():
    """C = A - B[None, :] over a 2-D grid, tails in both dimensions."""
    m, n = 100, 150
    return Spec(grid2d_kernel(m, n), [Arg("A", (m, n), "float32"), Arg("B", (n,), "float32"),
                                      Arg("C", (m, n), "float32", "out")],
                lambda A, B: {"C": A - B[None, :]})
