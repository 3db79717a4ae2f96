"""Compile-time checks at the user's line, the same on every target (they run in the core's
`check` pass): launch parameters, nested kernels, indices the compiler can bound, and lossy
conversions in tile ops. Legal programs (guarded accesses, fp32 -> fp16 copies, int8 GEMMs
into int32) still compile."""
from __future__ import annotations

import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.transform.errors import TileLangCompileError

TARGETS = ["cpu", "cuda/sm_90a", "cuda/sm_80", "hip/gfx942"]


def grid(extent):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(extent, threads=32) as bx:
            for i in T.Parallel(64):
                A[i] = 1.0
    return main


def threads(count):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=count) as bx:
            for i in T.Parallel(64):
                A[i] = 1.0
    return main


def stages(count):
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((16, 64), "float32")
            for k in T.Pipelined(4, num_stages=count):
                T.copy(A[k * 16, 0], S)
                T.copy(S, B[k * 16, 0])
    return main


def nested():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            with T.Kernel(2, threads=32) as by:
                A[by] = 1.0
    return main


def constant_index():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            A[100] = 1.0
    return main


def parallel_past_the_end():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(128):
                B[i % 64] = A[i]
    return main


def shared_past_the_end():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((32,), "float32")
            for i in T.Parallel(64):
                S[i] = A[i]
            for i in T.Parallel(32):
                A[i] = S[i]
    return main


def grid_past_the_end():
    @T.prim_func
    def main(A: T.Tensor((100,), "float32")):
        with T.Kernel(4, threads=32) as bx:  # 4 blocks of 32 cover 128 > 100, unguarded
            for i in T.Parallel(32):
                A[bx * 32 + i] = 0.0
    return main


def guarded():
    @T.prim_func
    def main(A: T.Tensor((100,), "float32"), B: T.Tensor((100,), "float32")):
        with T.Kernel(4, threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < 100:
                    B[bx * 32 + i] = A[bx * 32 + i]
            for i in T.Parallel(32):
                B[i] = T.if_then_else(i + 90 < 100, A[T.min(i + 90, 99)], 0.0)
    return main


def copy(src, dst):
    @T.prim_func
    def main(A: T.Tensor((64,), src), B: T.Tensor((64,), dst)):
        with T.Kernel(1, threads=32) as bx:
            T.copy(A, B)
    return main


def gemm(ab, acc):
    @T.prim_func
    def main(A: T.Tensor((16, 16), ab), B: T.Tensor((16, 16), ab), C: T.Tensor((16, 16), acc)):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((16, 16), ab)
            Bs = T.alloc_shared((16, 16), ab)
            Cl = T.alloc_fragment((16, 16), acc)
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(Cl)
            T.gemm(As, Bs, Cl)
            T.copy(Cl, C)
    return main


def explicit_cast():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int8")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(64):
                B[i] = T.Cast("int8", T.max(T.min(T.round(A[i]), 127.0), -128.0))
    return main


def named_rows():
    # indices through names bound in the kernel (TileLang's layernorm and per-token cast
    # examples: `row = bx * blk + k; m = Mean[row]`, `row = bx; X_amax[row * 8 + i, g]`):
    # in bounds, and the check cannot bound `row` statically, so it must not refuse them
    M, D, blk = 256, 64, 8

    @T.prim_func
    def main(X: T.Tensor((M, D), "float32"), Mean: T.Tensor((M,), "float32"), Y: T.Tensor((M, D), "float32"),
             A: T.Tensor((M // 8, 4), "float32")):
        with T.Kernel(M // blk, 4, threads=32) as (bx, by):
            for kk in T.serial(blk):
                row = bx * blk + kk
                m_v = Mean[row]
                for j in T.Parallel(D):
                    Y[row, j] = X[row, j] - m_v
            r = bx
            g = by
            for i in T.Parallel(1):
                A[r + i, g] = Mean[r]
    return main


def _lower(func, target):
    return tilelang.lower(func, target=target)


CASES = [
    ("grid0", lambda: grid(0), [r"T.Kernel launches 0 blocks", "at least 1", r"T\.Kernel\(extent"]),
    ("threads0", lambda: threads(0), [r"threads=0", "at least 1", "threads=count"]),
    ("threads-1", lambda: threads(-1), [r"threads=-1", "at least 1"]),
    ("num_stages-1", lambda: stages(-1), [r"num_stages=-1", "cannot be negative", "num_stages=0"]),
    ("nested", nested, ["nested inside another", "blockIdx.x", r"T\.Kernel\(2"]),
    ("A[100]", constant_index, [r"A\[100\]", "100", r"shape \(64,\)", "0..63", r"A\[100\] = 1.0"]),
    ("Parallel(128)", parallel_past_the_end, [r"read of A\[i\]", "0..127", r"shape \(64,\)"]),
    ("shared", shared_past_the_end, [r"write to S\[i\]", "0..63", r"shape \(32,\)"]),
    ("grid", grid_past_the_end, [r"A\[bx \* 32 \+ i\]", "0..127", r"shape \(100,\)"]),
    ("copy f32->i8", lambda: copy("float32", "int8"), [r"T.copy from A \(float32\) into B \(int8\)", "truncated",
                                                      "T.Cast", r"T\.copy\(A, B\)"]),
    ("copy i32->i8", lambda: copy("int32", "int8"), [r"\(int32\) into B \(int8\)", "wrap"]),
    ("copy f16->i32", lambda: copy("float16", "int32"), [r"\(float16\) into B \(int32\)"]),
    ("gemm float->int32", lambda: gemm("float16", "int32"), [r"float16 x float16 operands into the int32 accumulator",
                                                            "float32", r"T\.gemm\(As, Bs, Cl\)"]),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name, make, words", CASES, ids=[c[0] for c in CASES])
def test_bad_program_is_refused_at_its_line(name, make, words, target):
    with pytest.raises(TileLangCompileError) as info:
        _lower(make(), target)
    message = str(info.value)
    assert info.value.source is not None and info.value.source[0] == __file__, message
    import re
    for word in words:
        assert re.search(word, message), (word, message)


@pytest.mark.parametrize("target", ["cpu", "cuda/sm_90a"])
@pytest.mark.parametrize("make", [
    guarded, lambda: copy("float32", "float16"), lambda: copy("float16", "float32"),
    lambda: copy("int8", "int32"), lambda: copy("int32", "float32"), lambda: gemm("int8", "int32"),
    lambda: gemm("float16", "float32"), explicit_cast, lambda: stages(0), lambda: stages(3), named_rows,
], ids=["guarded", "f32->f16", "f16->f32", "i8->i32", "i32->f32", "gemm i8->i32", "gemm f16->f32",
        "explicit cast", "num_stages=0", "num_stages=3", "named rows"])
def test_legal_program_still_compiles(make, target):
    _lower(make(), target)


def shared_typo():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((64,), "flaot32")
            T.copy(A, S)
    return main


@pytest.mark.parametrize("typo, suggestion", [("floatx32", "float32"), ("flaot16", "float16"), ("itn8", "int8")])
def test_unknown_dtype_suggests_the_name(typo, suggestion):
    with pytest.raises(TypeError, match=rf"unknown dtype '{typo}' \(did you mean '{suggestion}'"):
        T.Tensor((64,), typo)


def test_unknown_dtype_in_a_kernel_body_names_the_line():
    with pytest.raises(Exception, match=r"unknown dtype 'flaot32' \(did you mean 'float32'") as info:
        shared_typo()
    assert 'S = T.alloc_shared((64,), "flaot32")' in str(info.value) and "test_compile_checks.py" in str(info.value)


def test_vector_dtypes_are_still_dtypes():
    assert str(T.Tensor((4,), "float16x2").ty.dtype) == "float16x2"
