"""TileLang's `tilelang.carver.template`: `MatmulTemplate`, a GEMM described by its sizes and
dtypes that recommends tile configurations for a device.

    template = MatmulTemplate(M=4096, N=4096, K=4096, in_dtype=T.float16,
                              out_dtype=T.float16, accum_dtype=T.float32).with_arch(CUDA("cuda"))
    template.equivalent_function()      # the computation as a PrimFunc (TVM TE), no schedule
    template.recommend_hints(topk=20)   # [Hint(block=[128, 128], warp=[64, 64], rstep=[32], ...)]

The hints come from `tilelang_cuda.carver_roller.matmul` (a roofline over the tiles that fit
the device; see there). TileLang's other templates (GEMV, convolution, flash attention,
elementwise, reductions) are not here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilelang_core import language as T

from .carver_roller import Hint, recommend_matmul_hints

__all__ = ["MatmulTemplate"]


@dataclass
class MatmulTemplate:
    """C[M, N] = A[M, K] @ B[K, N] (B given as [N, K] when `trans_B`, TileLang's default),
    accumulated in `accum_dtype`, plus `Bias[N]` when `with_bias`, stored as `out_dtype`."""

    M: int = None
    N: int = None
    K: int = None
    trans_A: bool = False
    trans_B: bool = True
    in_dtype: str = "float16"
    out_dtype: str = "float16"
    accum_dtype: str = "float16"
    with_bias: bool = False
    arch: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("M", "N", "K"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"MatmulTemplate: {name} must be a positive int, got {value!r}")

    def with_arch(self, arch: Any) -> "MatmulTemplate":
        """Recommend for `arch` (a `tilelang.carver.arch.CUDA`); returns this template."""
        self.arch = arch
        return self

    def equivalent_function(self) -> Any:
        """The computation as an unscheduled PrimFunc (TVM TE), arguments A, B[, Bias], C."""
        from tvm import te

        M, N, K = self.M, self.N, self.K
        accum, out = str(T.dtype(self.accum_dtype)), str(T.dtype(self.out_dtype))
        A = te.placeholder((K, M) if self.trans_A else (M, K), name="A", dtype=str(T.dtype(self.in_dtype)))
        B = te.placeholder((N, K) if self.trans_B else (K, N), name="B", dtype=str(T.dtype(self.in_dtype)))
        k = te.reduce_axis((0, K), name="k")

        def product_sum(i, j):
            a = A[k, i] if self.trans_A else A[i, k]
            b = B[j, k] if self.trans_B else B[k, j]
            return te.sum(a.astype(accum) * b.astype(accum), axis=k)

        C = te.compute((M, N), product_sum, name="C")
        args = [A, B]
        if self.with_bias:
            bias = te.placeholder((N,), name="Bias", dtype=accum)
            C = te.compute((M, N), lambda i, j: C[i, j] + bias[j], name="Bias_add")
            args.append(bias)
        if out != accum:
            C = te.compute((M, N), lambda i, j: C[i, j].astype(out), name="D")
        return te.create_prim_func([*args, C])

    def recommend_hints(self, topk: int = 10) -> list[Hint]:
        """The `topk` best tile configurations for the arch given to `with_arch`."""
        if self.arch is None:
            raise ValueError("MatmulTemplate.recommend_hints: no arch; call .with_arch(CUDA('cuda')) first")
        return recommend_matmul_hints(self.M, self.N, self.K, T.dtype(self.in_dtype).bits,
                                      T.dtype(self.accum_dtype).bits, self.arch, topk)

    def get_hardware_aware_configs(self, arch: Any = None, topk: int = 10) -> list[Hint]:
        """TileLang's other spelling: the hints for `arch` (or the template's)."""
        if arch is not None:
            self.with_arch(arch)
        return self.recommend_hints(topk)
