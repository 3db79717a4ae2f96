"""TileLang names of the language beyond the tile ops: IEEE-rounded math, launch-frame
queries, buffer views and annotation types, whole-buffer predicates, dtype names and
predicates, small integer helpers. Run on the CPU target against NumPy where the name
computes something; checked on the IR otherwise."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.codegen import CodegenError


def _run(func, *arrays):
    kernel = tilelang.compile(func, target="cpu")
    kernel(*arrays)
    return kernel


def test_ieee_round_to_nearest_runs_on_cpu():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.serial(64):
                B[i] = (T.ieee_add(A[i], 1.0) + T.ieee_sub(A[i], 0.25) + T.ieee_mul(A[i], 2.0)
                        + T.ieee_fdiv(A[i], 3.0) + T.ieee_fmaf(A[i], A[i], 0.5) + T.ieee_frcp(A[i])
                        + T.ieee_fsqrt(A[i]) + T.ieee_frsqrt(A[i]))

    a = np.random.default_rng(0).random(64, dtype=np.float32) + 0.5
    b = np.zeros(64, np.float32)
    _run(main, a, b)
    ref = (a + 1) + (a - 0.25) + a * 2 + a / 3 + (a * a + 0.5) + 1 / a + np.sqrt(a) + 1 / np.sqrt(a)
    np.testing.assert_allclose(b, ref, rtol=1e-6)


def test_ieee_directed_rounding_is_refused_on_cpu_naming_the_mode():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4) as bx:
            A[0] = T.ieee_add(A[1], A[2], "rz")

    with pytest.raises(Exception, match=r"ieee_add rounding 'rz'.*does not provide"):
        tilelang.compile(main, target="cpu")


def test_bad_rounding_mode_and_dtype_are_errors():
    with pytest.raises(ValueError, match="Invalid rounding mode 'nearest'; rounding_mode must be one of rn, rz, ru, rd"):
        T.ieee_add(T.float32(1.0), T.float32(2.0), "nearest")
    with pytest.raises(TypeError, match="must be floating-point expressions, got int32"):
        T.ieee_mul(T.int32(1), T.int32(2))
    assert T.ieee_mul(T.float16(1.0), T.float16(2.0)).ty.dtype == "float16"
    with pytest.raises(ValueError, match="Only rounding mode 'rn' is available for half precision"):
        T.ieee_add(T.bfloat16(1.0), T.bfloat16(2.0), "rz")
    with pytest.raises(TypeError, match="frsqrt is not supported for float64"):
        T.ieee_frsqrt(T.float64(2.0))


def test_warp_vote_on_cpu_is_a_codegen_error_naming_the_intrinsic():
    @T.prim_func
    def main(A: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            A[0] = T.any_sync(A[1] > 0)

    with pytest.raises(Exception, match=r"T.any_sync \(tl.any_sync\).*does not provide"):
        tilelang.compile(main, target="cpu")


def test_sync_threads_and_launch_extents_run_on_cpu():
    @T.prim_func
    def main(A: T.Tensor((8,), "int32")):
        with T.Kernel(3, 2, threads=(16, 4)) as (bx, by):
            T.sync_threads()
            A[0] = T.get_thread_extent(0)
            A[1] = T.get_thread_extent(1)
            A[2] = T.get_thread_extent(2)
            A[3] = T.get_block_extent(0)
            A[4] = T.get_block_extents()[1]
            A[5] = T.get_thread_extents()[0] * T.get_block_extent(2)
            A[6] = T.align_up(13, 8)
            A[7] = T.cdiv(13, 8)

    a = np.zeros(8, np.int32)
    _run(main, a)
    assert a.tolist() == [16, 4, 1, 3, 2, 16, 16, 2]


def test_launch_queries_outside_a_kernel_are_errors():
    with pytest.raises(RuntimeError, match="only valid inside `with T.Kernel"):
        T.get_thread_extent()
    assert T.KernelLaunchFrame is T.Kernel


def test_named_barrier_needs_both_arguments():
    with pytest.raises(ValueError, match="give both barrier_id and arrive_count"):
        T.sync_threads(1)


def test_any_of_all_of_over_a_local_buffer():
    @T.prim_func
    def main(A: T.Tensor((2, 4), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            flags = T.alloc_local((4,), "int32")
            for r in T.serial(2):
                for j in T.serial(4):
                    flags[j] = A[r, j]
                B[r * 2] = T.if_then_else(T.any_of(flags), 1, 0)
                B[r * 2 + 1] = T.if_then_else(T.all_of(flags[0:4]), 1, 0)

    a = np.array([[0, 0, 3, 0], [1, 2, 3, 4]], np.int32)
    b = np.full(4, -1, np.int32)
    _run(main, a, b)
    assert b.tolist() == [1, 0, 1, 1]


def test_view_and_reshape_read_the_same_memory():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            flat = T.reshape(A, (32,))
            for i in T.serial(32):
                B[i] = flat[i] * 2.0

    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.zeros(32, np.float32)
    _run(main, a, b)
    np.testing.assert_array_equal(b, a.reshape(-1) * 2)


def test_view_with_mismatched_bits_is_an_error():
    A = T.Tensor((4, 8), "float32")
    with pytest.raises(ValueError, match="the sizes must match"):
        T.view(A, (4, 4))


def test_shared_and_fragment_buffers_as_macro_parameter_annotations():
    @T.macro
    def scale(src: T.SharedBuffer([16], "float32"), acc: T.FragmentBuffer([16], "float32"),
              tmp: T.LocalBuffer([1], "float32")):
        for i in T.serial(16):
            tmp[0] = src[i]
            acc[i] = tmp[0] * 3.0

    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            s = T.alloc_shared((16,), "float32")
            f = T.alloc_fragment((16,), "float32")
            t = T.alloc_local((1,), "float32")
            T.copy(A, s)
            scale(s, f, t)
            T.copy(f, B)

    a = np.arange(16, dtype=np.float32)
    b = np.zeros(16, np.float32)
    _run(main, a, b)
    np.testing.assert_array_equal(b, a * 3)
    assert T.SharedBuffer((4,), "float16").scope() == "shared.dyn"
    assert T.FragmentBuffer((4,), "float16").scope() == "local.fragment"
    assert T.LocalBuffer((4,), "float16").scope() == "local"


def test_strided_tensor_and_make_tensor():
    S = T.StridedTensor((4, 4), (8, 1), "float32")
    assert [int(s) for s in S.strides] == [8, 1]
    with pytest.raises(ValueError, match="2 strides for the 3-D shape"):
        T.StridedTensor((2, 2, 2), (4, 1), "float32")


def test_dtype_names_and_predicates():
    assert T.tfloat32 == "float32" and T.tfloat32x4 == "float32x4"
    assert T.bfloat16x2 == "bfloat16x2"
    assert T.get_tvm_dtype("half") == "float16"
    assert T.is_float4("float4_e2m1fn") and T.is_float4_e2m1fn("float4_e2m1fn")
    assert not T.is_float4("float16") and not T.is_float4_e2m1_unpacked("float4_e2m1fn")
    assert T.is_float4_e2m1_unpacked("float4_e2m1_unpacked")
    assert T.is_f8f6f4_family("float8_e4m3fn") and T.is_f8f6f4_family("float6_e2m3fn")
    assert not T.is_f8f6f4_family("bfloat16")
    T.validate_gemm_ab_dtypes("float8_e4m3fn", "float8_e5m2", allow_f8f6f4_mixed=True)
    with pytest.raises(ValueError, match="mixed operand dtypes"):
        T.validate_gemm_ab_dtypes("float16", "bfloat16")
    pair = T.bfloat16x2(T.bfloat16(1.0), T.bfloat16(2.0))
    assert str(pair.ty.dtype) == "bfloat16x2"
    assert str(T.extract_lane(pair, 1).ty.dtype) == "bfloat16"
    with pytest.raises(ValueError, match="lane 2 of a 2-lane vector"):
        T.extract_lane(pair, 2)


def test_torch_dtype_as_tensor_dtype():
    torch = pytest.importorskip("torch")
    assert str(T.Tensor((4,), torch.float16).dtype) == "float16"


def test_packed_two_lane_math_checks_operands():
    x = T.float16x2(T.float16(1.0), T.float16(2.0))
    assert str(T.fma2(x, x, x).ty.dtype) == "float16x2"
    assert str(T.max2(x, x).ty.dtype) == "float16x2"
    with pytest.raises(TypeError, match="two-lane vectors"):
        T.add2(T.float32(1.0), T.float32(2.0))


def test_index_to_coordinates_and_capitalised_loops():
    assert T.index_to_coordinates(23, (2, 3, 4)) == [1, 2, 3]
    assert T.Unroll is T.unroll and T.Vectorized is T.vectorized
    assert isinstance(T.StringImm("x"), T.PrimExpr)


def test_loop_break_stops_the_loop_on_cpu():
    @T.prim_func
    def main(A: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(8):
                if i == 3:
                    T.loop_break()
                A[i] = 1

    a = np.zeros(8, np.int32)
    _run(main, a)
    assert a.tolist() == [1, 1, 1, 0, 0, 0, 0, 0]


def test_packed_float32x2_arithmetic_runs_on_cpu():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(8):

                B[T.Ramp(i * 2, 1, 2)] = T.fma2(T.add2(A[T.Ramp(i * 2, 1, 2)], A[T.Ramp(i * 2, 1, 2)]),
                                                T.sub2(A[T.Ramp(i * 2, 1, 2)], T.mul2(A[T.Ramp(i * 2, 1, 2)],
                                                                                      A[T.Ramp(i * 2, 1, 2)])),
                                                A[T.Ramp(i * 2, 1, 2)])

    a = np.linspace(-2, 2, 16, dtype=np.float32)
    b = np.zeros(16, np.float32)
    _run(main, a, b)
    np.testing.assert_allclose(b, (a + a) * (a - a * a) + a, rtol=1e-6)


def test_annotated_compile_flags_and_pass_configs_reach_compile():
    @T.prim_func
    def flagged(A: T.Tensor((4,), "int32")):
        T.annotate_compile_flags("-DTL_ANNOTATED_FLAG=7")
        T.import_source("#ifndef TL_ANNOTATED_FLAG\n#error the annotated flag did not reach the compiler\n#endif\n")
        with T.Kernel(1, threads=1) as bx:
            A[0] = 7

    a = np.zeros(4, np.int32)
    _run(flagged, a)
    assert a[0] == 7

    @T.prim_func
    def configured(A: T.Tensor((4,), "int32")):
        T.annotate_pass_configs({"tl.no_such_config": True})
        with T.Kernel(1, threads=1) as bx:
            A[0] = 1

    with pytest.raises(Exception, match="unknown pass config 'tl.no_such_config'"):
        tilelang.compile(configured, target="cpu")
    # the caller's configs are merged over the annotated ones
    with pytest.raises(TypeError, match="expects a dict"):
        T.annotate_pass_configs(["x"])
    assert T.PrimFunc is type(flagged)
    assert T.JITFunc.__name__ == "JITFunction"


def test_ieee_operations_are_rounded_one_by_one_never_fused():
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11; a fused multiply-add keeps 2^-24
    @T.prim_func
    def main(A: T.Tensor((2,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            B[0] = T.ieee_add(T.ieee_mul(A[0], A[0]), A[1])

    a = np.array([1 + 2.0 ** -12, -(1 + 2.0 ** -11)], np.float32)
    b = np.full(1, -1.0, np.float32)
    _run(main, a, b)
    assert b[0] == 0.0


def test_warp_specialize_is_ws():
    assert T.WarpSpecialize is T.ws

    @T.prim_func
    def main(A: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            with T.WarpSpecialize(1):
                A[0] = 1.0

    assert "tl.thread_groups" in main.script()
