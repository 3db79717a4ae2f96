"""Compile-time checks at the user's line, the same on every target (they run in the core's
`check` pass): launch parameters, nested kernels, indices the compiler can bound, and lossy
conversions in tile ops. Legal programs (guarded accesses, fp32 -> fp16 copies, int8 GEMMs
into int32) still compile."""
from __future__ import annotations

import re

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
        with T.Kernel(4, threads=32) as bx:  # 4 blocks of 32 cover 128 > 100: guarded at run time
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


def store(src, dst, value="load"):
    @T.prim_func
    def main(A: T.Tensor((64,), src), B: T.Tensor((64,), dst)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(64):
                if value == "load":
                    B[i] = A[i]
                elif value == "index":
                    B[i] = i
                elif value == "index*4":
                    B[i] = i * 4
                else:
                    B[i] = A[i] + 1
    return main


def store_into_var():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.serial(64):
                x = T.alloc_var("int32")
                x = A[i] * 2.0
                B[i] = x
    return main


def scalar_param_into_int():
    @T.prim_func
    def main(A: T.Tensor((64,), "int32"), s: T.float32):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(64):
                A[i] = s
    return main


def explicit_store_casts():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int8"), C: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(64):
                B[i] = T.cast(T.round(A[i]), "int8")
                C[i] = A[i].astype("int32")
                C[i] = T.int32(A[i]) + C[i]
    return main


N_PAST_INT32 = 2 ** 31 + 5  # a static dimension past the int32 range


def past_int32(index_bits):
    @T.prim_func
    def main(A: T.Tensor((N_PAST_INT32,), "int8"), B: T.Tensor((N_PAST_INT32,), "int8")):
        with T.Kernel(T.ceildiv(N_PAST_INT32, 1024), threads=128) as bx:
            for i in T.Parallel(1024):
                if index_bits == 64:
                    if T.Cast("int64", bx) * 1024 + i < N_PAST_INT32:
                        B[T.Cast("int64", bx) * 1024 + i] = A[T.Cast("int64", bx) * 1024 + i]
                else:  # the last block runs past the end
                    B[bx * 1024 + i] = A[bx * 1024 + i]
    return main


def negative_dim():
    @T.prim_func
    def main(X: T.Tensor((-4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            X[0] = 1.0
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
    ("shared", shared_past_the_end, [r"write to S\[i\]", "0..63", r"shape \(32,\)"]),
    ("gemm float->int32", lambda: gemm("float16", "int32"), [r"float16 x float16 operands into the int32 accumulator",
                                                            "float32", r"T\.gemm\(As, Bs, Cl\)"]),
    ("threads2048", lambda: threads(2048), [r"asks for 2048 threads per block", "allows at most 1024",
                                            "max_threads_per_block", "threads= of at most 1024", "threads=count"]),
    ("threads(32,64)", lambda: threads((32, 64)), [r"asks for 2048 threads per block", "the product, for a tuple"]),
    ("store f32->i8", lambda: store("float32", "int8"), [r"store into B \(int8\) converts the float32 value",
                                                         "truncated toward zero", "-126", r'T\.Cast\("int8"',
                                                         r"B\[i\] = A\[i\]"]),
    ("store f32->i32", lambda: store("float32", "int32"), [r"into B \(int32\) converts the float32 value", "2.7 -> 2"]),
    ("store f16->u8", lambda: store("float16", "uint8"), [r"into B \(uint8\) converts the float16 value"]),
    ("store i32->i8", lambda: store("int32", "int8"), [r"into B \(int8\) converts the int32 value",
                                                       "outside int8's range wrap"]),
    ("store i64->i32", lambda: store("int64", "int32", "plus1"), [r"into B \(int32\) converts the int64 value"]),
    ("store i*4->i8", lambda: store("int32", "int8", "index*4"), ["int32 values outside int8's range wrap",
                                                                 r"this value spans 0\.\.252", r"B\[i\] = i \* 4"]),
    ("alloc_var f32->i32", store_into_var, [r"into x \(int32\) converts the float32 value", r"x = A\[i\] \* 2\.0"]),
    ("scalar f32->i32", scalar_param_into_int, [r"into A \(int32\) converts the float32 value", r"A\[i\] = s"]),
    ("index past int32", lambda: past_int32(32), [r"out-of-bounds write to B\[bx \* 1024 \+ i\]",
                                                  r"0\.\.2147484671", r"shape \(2147483653,\)"]),
    ("negative dim", negative_dim, [r"X has shape \(-4,\)", "cannot be negative"]),
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


@pytest.mark.parametrize("target", ["cpu", "cuda/sm_90a", "hip/gfx942"])
@pytest.mark.parametrize("make", [
    guarded, lambda: copy("float32", "float16"), lambda: copy("float16", "float32"),
    lambda: copy("int8", "int32"), lambda: copy("int32", "int8"), lambda: copy("float32", "int8"), lambda: copy("int32", "float32"), lambda: gemm("int8", "int32"),
    lambda: gemm("float16", "float32"), explicit_cast, lambda: stages(0), lambda: stages(3), named_rows,
    lambda: threads(1024), lambda: store("float32", "float16"), lambda: store("float32", "bfloat16"),
    lambda: store("int8", "int32"), lambda: store("int32", "float32"), lambda: store("int32", "int8", "index"),
    lambda: store("int32", "uint8", "index"), lambda: store("float16", "float32", "plus1"), explicit_store_casts,
    lambda: past_int32(64), parallel_past_the_end, grid_past_the_end,
], ids=["guarded", "f32->f16", "f16->f32", "i8->i32", "copy i32->i8", "copy f32->i8", "i32->f32", "gemm i8->i32", "gemm f16->f32",
        "explicit cast", "num_stages=0", "num_stages=3", "named rows", "threads=1024", "store f32->f16",
        "store f32->bf16", "store i8->i32", "store i32->f32", "store i (0..63) -> i8", "store i -> u8",
        "store f16+1 -> f32", "explicit store casts", "64-bit index past int32",
        "global read partly past the end (guarded)", "grid partly past the end (guarded)"])
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


def float_constant_into_int(value):
    @T.prim_func
    def main(A: T.Tensor((16,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.Parallel(16):
                A[i] = value
    return main


def test_float_constant_truncated_into_an_int_store_is_refused_at_parse():
    # TVMScript would fold 1.5 into the int32 constant 1, which no later pass can tell apart
    from tilelang_core.language.parser import KernelSyntaxError

    with pytest.raises(KernelSyntaxError, match=r"float constant 1.5 stored into A \(int32\) would be truncated to 1"
                                                r"(.|\n)*A\[i\] = value"):
        float_constant_into_int(1.5)
    tilelang.lower(float_constant_into_int(2.0), target="cpu")  # an integral float is exact


def test_static_dimension_past_int32_indexes_in_64_bits(cache_dir):
    """A static shape past 2**31 - 1 elements compiles with 64-bit element offsets: a kernel
    touching only the last elements (the pages of np.zeros are committed lazily) finds them."""
    import numpy as np

    tail = 1024

    @T.prim_func
    def main(A: T.Tensor((N_PAST_INT32,), "int8"), B: T.Tensor((N_PAST_INT32,), "int8")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.Parallel(tail):
                B[T.int64(N_PAST_INT32 - tail) + i] = A[T.int64(N_PAST_INT32 - tail) + i] + T.int8(1)

    kernel = tilelang.compile(main, target="cpu")
    assert "int64_t" in kernel.get_kernel_source()
    a = np.zeros(N_PAST_INT32, dtype=np.int8)
    b = np.zeros(N_PAST_INT32, dtype=np.int8)
    a[-tail:] = np.arange(tail) % 100
    kernel(a, b)
    np.testing.assert_array_equal(b[-tail:], a[-tail:] + 1)
    assert not b[: -tail][-4096:].any() and not b[:4096].any()  # nothing written below (no wrap to the start)


def test_int32_literal_past_the_range_gets_a_64_bit_hint():
    """An int32 index compared with a literal past int32 is never truncated: TVMScript either
    refuses it (then with our hint) or, once TVM's own parser has run in the process (it
    leaves int64 promotion on), compares in 64 bits."""
    from tilelang_core.language.parser import KernelSyntaxError

    try:
        @T.prim_func
        def main(A: T.Tensor((N_PAST_INT32,), "int8")):
            with T.Kernel(T.ceildiv(N_PAST_INT32, 1024), threads=128) as bx:
                for i in T.Parallel(1024):
                    if bx * 1024 + i < N_PAST_INT32:
                        A[bx * 1024 + i] = T.int8(0)
    except KernelSyntaxError as err:
        assert re.search(r"exceeds range of int32(.|\n)*hint: loop and thread indices are int32"
                         r"(.|\n)*T\.Cast\(\"int64\", bx\)", str(err)), str(err)
    else:
        assert f'T.Cast("int64", bx * 1024 + i) < T.int64({N_PAST_INT32})' in main.script()


def typed(dtype):
    @T.prim_func
    def main(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=32) as bx:
            T.copy(A, B)
    return main


@pytest.mark.parametrize("target, dtype", [("cpu", "float8_e4m3fn"), ("cuda/sm_80", "float8_e4m3fn"),
                                           ("hip/gfx942", "float8_e4m3fn"), ("cpu", "int4"),
                                           ("cuda/sm_90a", "int4"), ("hip/gfx942", "int4")])
def test_dtype_the_target_lacks_is_a_capability_error(target, dtype):
    from tilelang_core.transform.errors import CapabilityError

    with pytest.raises(CapabilityError, match=rf"tensor A has dtype {dtype}, which {target}\S* does not support "
                                              r"\(its dtypes: bool, int8"):
        _lower(typed(dtype), target)


def test_fp8_on_the_target_that_has_it_compiles():
    _lower(typed("float8_e4m3fn"), "cuda/sm_90a")


@pytest.mark.parametrize("target", ["cpu", "cuda/sm_90a", "hip/gfx942"])
def test_unsigned_integers_are_dtypes_of_every_c_target(target):
    # T.ballot (uint64), T.rng_rand (uint32) and TileLang's packed-word idioms hold unsigned words
    _lower(typed("uint32"), target)
    _lower(typed("uint64"), target)


def test_copy_converts_to_the_destination_dtype_as_tilelang_does():
    """T.copy between dtypes converts like C (TileLang's int8 GEMM copies its int32 accumulator
    into an int8 output): int32 -> int8 keeps the low byte, float -> int truncates toward zero."""
    import numpy as np

    import tilelang_core as tilelang

    wide = np.array([1, -2, 127, 128, 300, -129] * 10 + [0, 0, 0, 0], dtype=np.int32)
    narrow = np.zeros(64, np.int8)
    tilelang.compile(copy("int32", "int8"), target="cpu")(wide, narrow)
    np.testing.assert_array_equal(narrow, wide.astype(np.int8))
    floats = np.linspace(-3.7, 3.7, 64).astype(np.float32)
    ints = np.zeros(64, np.int32)
    tilelang.compile(copy("float32", "int32"), target="cpu")(floats, ints)
    np.testing.assert_array_equal(ints, np.trunc(floats).astype(np.int32))
