"""Thread-level intrinsics a kernel names itself (T.shfl_*, votes, lane/warp ids, named and
grid barriers, IEEE-rounded math) in each SIMT dialect: CUDA through NVRTC for sm_90a (no
GPU needed), HIP/MUSA/Metal on the text, and the dialect that lacks one refusing it by name."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tilelang_core import language as T
from tilelang_core.codegen import CodegenError

if str(Path(__file__).resolve().parents[2]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.cuda.test_cuda_codegen import render  # noqa: E402


def _intrinsics_kernel(grid_sync: bool = True):
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32"),
             C: T.Tensor((128,), "uint64"), D: T.Tensor((128,), "int32")):
        with T.Kernel(4, threads=128) as bx:
            tx = T.get_thread_binding()
            v = A[tx]
            B[tx] = (T.shfl_sync(v, 0) + T.shfl_up(v, 1) + T.shfl_down(v, 1, 16) + T.shfl_xor(v, 2)
                     + T.ieee_add(v, v, "rz") + T.ieee_sub(v, v, "rd") + T.ieee_mul(v, v, "ru")
                     + T.ieee_fmaf(v, v, v, "ru") + T.ieee_frsqrt(v) + T.fast_rcp(v) + T.ieee_fdiv(v, v)
                     + T.ieee_fsqrt(v, "rd") + T.ieee_frcp(v))
            C[tx] = T.ballot_sync(v > 0) + T.ballot(v > 1) + T.activemask()
            T.sync_warp()
            T.sync_threads()
            T.sync_threads(1, 64)
            D[tx] = (T.any_sync(v > 0) + T.all_sync(v > 0) + T.get_lane_idx() + T.get_warp_idx()
                     + T.get_warp_idx_sync() + T.get_warp_group_idx() + T.syncthreads_count(v > 0)
                     + T.syncthreads_and(v > 0) + T.syncthreads_or(v > 0)
                     + T.cast(T.match_any_sync(tx), "int32") + T.cast(T.match_all_sync(tx), "int32")
                     + T.cast(T.shuffle_elect(64), "int32"))
            T.named_barrier_arrive(2, 64)
            if grid_sync:
                T.sync_grid()

    return main


def test_cuda_intrinsics_compile_under_nvrtc_for_sm_90a():
    from tilelang_cuda.compile import compile_cuda, disassemble

    source = render(_intrinsics_kernel(), "cuda/sm_90a")
    text = source.source
    for spelled in ("__shfl_sync(", "__shfl_up_sync(", "__shfl_down_sync(", "__shfl_xor_sync(",
                    "__ballot_sync(", "__activemask()", "__syncwarp(", "__any_sync(", "__all_sync(",
                    "__syncthreads_count(", "__match_any_sync(", "tl_match_all_sync(", "tl_ieee_add_rz(",
                    "tl_ieee_fma_ru(", "tl_get_lane_idx(32)", "tl_get_warp_group_idx(32, 4)",
                    "tl_shuffle_elect(64)", "tl_named_barrier_arrive(2, 64)", "tl_sync_grid()",
                    '#include "tl_cuda_threads.h"', "#define TL_GRID_SYNC 1"):
        assert spelled in text, spelled
    assert source.extra["cooperative"] is True
    sass = disassemble(compile_cuda(text, "sm_90a", {"name": "intrinsics"}))
    for instruction in ("SHFL.IDX", "SHFL.UP", "SHFL.DOWN", "SHFL.BFLY", "VOTE.ANY", "MATCH.ANY", "BAR.ARV"):
        assert instruction in sass, instruction


def test_a_kernel_without_grid_sync_is_not_cooperative():
    source = render(_intrinsics_kernel(grid_sync=False), "cuda/sm_90a")
    assert source.extra["cooperative"] is False
    assert "TL_GRID_SYNC" not in source.source


@pytest.mark.parametrize("target, spelled", [
    ("hip/gfx942", ["__shfl(", "__shfl_up(", "__ballot(", "__any(", "__fadd_rn(", "% (64)"]),
    ("musa/mp_31", ["__shfl_sync(", "__ballot_sync(", "__any_sync(", "__syncwarp("]),
])
def test_other_simt_dialects_spell_the_warp_intrinsics(target, spelled):
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), D: T.Tensor((128,), "int32"), C: T.Tensor((128,), "int64")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            v = A[tx]
            A[tx] = T.shfl_sync(v, 0) + T.shfl_up(v, 1) + (T.ieee_add(v, v) if target.startswith("hip") else v)
            C[tx] = T.cast(T.ballot_sync(v > 0), "int64")
            D[tx] = T.any_sync(v > 0) + T.get_lane_idx()
            if not target.startswith("hip"):
                T.sync_warp()

    text = render(main, target).source
    for s in spelled:
        assert s in text, s


def test_metal_has_votes_but_refuses_shuffles_with_a_width():
    @T.prim_func
    def votes(A: T.Tensor((32,), "int32"), C: T.Tensor((32,), "uint64")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            A[tx] = T.any_sync(A[tx] > 0) + T.all_sync(A[tx] > 0)
            C[tx] = T.ballot(A[tx] > 0)

    text = render(votes, "metal/apple-m2").source
    assert "simd_any(" in text and "simd_ballot(" in text

    @T.prim_func
    def shuffle(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            A[tx] = T.shfl_sync(A[tx], 0)

    with pytest.raises(CodegenError, match=r"T.shfl_sync \(tl.shfl_sync\).*does not provide"):
        render(shuffle, "metal/apple-m2")


def test_hip_refuses_directed_rounding_naming_what_it_has():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4) as bx:
            A[0] = T.ieee_add(A[1], A[2], "ru")

    with pytest.raises(CodegenError, match=r"rounding 'ru'.*it spells \('tl.ieee_add', 'rn'\)"):
        render(main, "hip/gfx942")


def test_set_max_nreg_moves_registers_per_warpgroup_on_sm_90a():
    from tilelang_cuda.compile import compile_cuda, disassemble

    @T.prim_func
    def main(A: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            tx = T.get_thread_binding()
            if tx < 128:
                T.dec_max_nreg(40)
                A[tx] = 1.0
            else:
                T.set_max_nreg(232, 1)
                A[tx] = 2.0

    text = render(main, "cuda/sm_90a").source
    assert "tl::setmaxnreg_dec<40>()" in text and "tl::setmaxnreg_inc<232>()" in text
    assert "__launch_bounds__(256, 1)" in text  # setmaxnreg needs one block per SM
    sass = disassemble(compile_cuda(text, "sm_90a", {"name": "nreg"}))
    assert "USETMAXREG" in sass
    with pytest.raises(ValueError, match="multiple of 8 from 24 to 256"):
        T.set_max_nreg(30, 1)


def test_fence_and_tma_store_group_names_compile_on_sm_90a():
    from tilelang_cuda.compile import compile_cuda

    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            S[tx] = A[tx]
            T.fence_proxy_async()
            T.tma_store_arrive()
            T.tma_store_wait()
            A[tx] = S[127 - tx]

    text = render(main, "cuda/sm_90a").source
    for call in ("tl::fence_proxy_async()", "tl::tma_store_commit()", "tl::tma_store_wait_read()"):
        assert call in text, call
    assert compile_cuda(text, "sm_90a", {"name": "fences"})[:4] == b"\x7fELF"
    with pytest.raises(ValueError, match="only count=0, read=True"):
        T.tma_store_wait(1)


@pytest.mark.parametrize("dtype, native, word", [("float16", "__half2", "unsigned int"),
                                                 ("bfloat16", "__nv_bfloat162", "unsigned int"),
                                                 ("float32", "float2", "uint2")])
def test_packed_two_lane_math_works_on_the_stored_words(dtype, native, word):
    from tilelang_cuda.compile import compile_cuda, disassemble

    @T.prim_func
    def main(A: T.Tensor((128,), dtype), B: T.Tensor((128,), dtype)):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            B[T.Ramp(tx * 2, 1, 2)] = T.fma2(T.add2(A[T.Ramp(tx * 2, 1, 2)], A[T.Ramp(tx * 2, 1, 2)]),
                                             T.abs2(A[T.Ramp(tx * 2, 1, 2)]),
                                             T.max2(A[T.Ramp(tx * 2, 1, 2)], T.min2(A[T.Ramp(tx * 2, 1, 2)],
                                                                                   A[T.Ramp(tx * 2, 1, 2)])))

    text = render(main, "cuda/sm_90a").source
    # TileLang's spelling: tl::<op> on the native vector type, named at the call
    assert (f"(*({word}*)(&B[tx * 2])) = tl_word(tl::fma2(tl_as<{native}>(tl_word(tl::add2("
            f"tl_as<{native}>((*({word}*)(&A[tx * 2])))") in text
    assert "2float(" not in text  # the words are never converted lane by lane
    sass = disassemble(compile_cuda(text, "sm_90a", {"name": "packed"}))
    if dtype != "float32":
        assert "HFMA2" in sass


def test_packed_op_without_a_spelling_names_the_dtype():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A[T.Ramp(0, 1, 2)] = T.max2(A[T.Ramp(0, 1, 2)], A[T.Ramp(2, 1, 2)])

    import tilelang_core as tilelang

    with pytest.raises(Exception, match=r"T.max2.*\(tl.max2\), which the c dialect"):
        tilelang.compile(main, target="cpu")


def test_ptx_level_names_compile_to_their_instructions_on_sm_90a():
    from tilelang_cuda.compile import compile_cuda, disassemble

    @T.prim_func
    def main(A: T.Tensor((1024,), "float32"), B: T.Tensor((1024,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((256,), "float32")
            T.sts128(S[tx * 4], T.ldg128(A[tx * 4]))
            T.ptx_cp_async(T.access_ptr(S[tx * 4], "w"), T.access_ptr(A[tx * 4 + 256], "r"), 4)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.cluster_sync()
            T.pdl_sync()
            T.stg64(B[tx * 2], T.lds64(S[tx * 2]), tx < 32)
            T.stg32(B[tx + 512], T.ldg32(A[tx], tx < 60))
            B[tx + 600] = T.cast(T.block_rank_in_cluster(), "float32")
            T.warpgroup_arrive()
            T.warpgroup_commit_batch()
            T.warpgroup_wait(0)
            T.pdl_trigger()

    text = render(main, "cuda/sm_90a").source
    assert "tl::sts128(&S[tx * 4], tl::ldg128(&A[tx * 4]));" in text
    assert "tl::cp_async_ca<16>(&S[tx * 4], &A[tx * 4 + 256]);" in text
    sass = disassemble(compile_cuda(text, "sm_90a", {"name": "ptx_names"}))
    for instruction in ("LDG.E.128", "STS.128", "LDS.64", "STG.E.64", "LDGSTS.E.128", "UCGABAR_ARV",
                        "UCGABAR_WAIT", "ACQBULK", "WARPGROUP.ARRIVE"):
        assert instruction in sass, instruction
    from tilelang_core.language.parser import KernelSyntaxError

    with pytest.raises(KernelSyntaxError, match="S is in shared.dyn memory; T.stg32 addresses global memory"):
        @T.prim_func
        def wrong(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                S = T.alloc_shared((4,), "float32")
                T.stg32(S[0], T.lds32(S[0]))
    with pytest.raises(ValueError, match="12 bytes; cp.async copies 4, 8 or 16"):
        T.ptx_cp_async(T.access_ptr(T.Tensor((8,), "float32")[0], "w"), None, 3)


def test_warp_reductions_per_dialect():
    from tilelang_cuda.compile import compile_cuda, disassemble

    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            A[tx] = T.warp_reduce_sum(A[tx]) + T.warp_reduce_max(A[tx]) + T.warp_reduce_min(A[tx])
            B[tx] = T.warp_reduce_bitand(B[tx]) | T.warp_reduce_bitor(B[tx])

    text = render(main, "cuda/sm_90a").source
    assert "tl_warp_reduce_sum(A[tx])" in text and "tl_warp_reduce_bitor(B[tx])" in text
    assert disassemble(compile_cuda(text, "sm_90a", {"name": "warp_reduce"})).count("SHFL.BFLY") >= 20  # 5 x 5 steps, first shuffles shared
    assert "tl_warp_reduce_max(" in render(main, "hip/gfx942").source
    metal = render(main, "metal/apple-m2").source
    assert "simd_sum(" in metal and "simd_and(" in metal
    with pytest.raises(TypeError, match="bitwise reductions take integers"):
        T.warp_reduce_bitor(T.float32(1.0))


def test_philox_stream_compiles_under_nvrtc():
    from tilelang_cuda.compile import compile_cuda

    @T.prim_func
    def main(A: T.Tensor((128,), "uint32"), F: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            T.rng_init(42)
            A[tx] = T.rng_rand()
            F[tx] = T.rng_rand_float() + T.rng_rand_float(dist="normal") + T.cast(T.rng_rand_float(64, "normal"), "float32")

    text = render(main, "cuda/sm_90a").source
    assert "TL_HELPER void tl_rng_init(uint32_t* s" in text and "tl_rng_normal_double(" in text
    assert compile_cuda(text, "sm_90a", {"name": "philox"})[:4] == b"\x7fELF"


def test_annotate_restrict_buffers_drops_restrict_on_the_named_parameters():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32"), Z: T.Tensor((64,), "float32")):
        T.annotate_restrict_buffers(X, Y)
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            Y[tx] = X[tx] + Z[tx]

    text = render(main, "cuda/sm_90a").source
    assert "const float* X," in text and "float* Y," in text and "const float* __restrict__ Z)" in text


def _ws_gemm(hint):
    M = N = K = 512

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        hint()
        with T.Kernel(T.ceildiv(N, 256), T.ceildiv(M, 128), threads=256) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 256), "float16")
            C_l = T.alloc_fragment((128, 256), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
                T.copy(A[by * 128, ko * 64], A_s)
                T.copy(B[ko * 64, bx * 256], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 256])

    return render(main, "cuda/sm_90a").source


def test_register_hints_steer_the_warp_specialized_pipeline():
    assert "tl::setmaxnreg_inc<232>()" in _ws_gemm(lambda: None)  # the default split
    assert "setmaxnreg" not in _ws_gemm(T.no_set_max_nreg)
    assert "setmaxnreg" not in _ws_gemm(T.disable_warp_group_reg_alloc)
    def both():
        T.annotate_producer_reg_dealloc(24)
        T.annotate_consumer_reg_alloc(240)

    def bounded():
        T.no_set_max_nreg()
        T.annotate_min_blocks_per_sm(2)

    hinted = _ws_gemm(both)
    assert "tl::setmaxnreg_inc<240>()" in hinted and "tl::setmaxnreg_dec<24>()" in hinted
    assert "__launch_bounds__(384, 2)" in _ws_gemm(bounded)
    with pytest.raises(ValueError, match="multiple of 8 from 24 to 256"):
        T.annotate_consumer_reg_alloc(250)


def test_mbarrier_names_by_hand_compile_on_sm_90a():
    from tilelang_cuda.compile import compile_cuda, disassemble

    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            bars = T.create_barriers(2)
            S = T.alloc_shared((128,), "float32")
            if tx == 0:
                T.ptx_init_barrier_thread_count(bars[0], 128)
                T.ptx_init_barrier_thread_count(bars[1], 128)
                T.ptx_fence_barrier_init()
            T.sync_threads()
            T.ptx_cp_async(T.access_ptr(S[tx], "w"), T.access_ptr(A[tx], "r"), 1)
            T.ptx_cp_async_barrier(bars[0])
            T.ptx_wait_barrier(bars[0], 0)
            T.cp_async_barrier_noinc(bars[1])
            T.mbarrier_expect_tx(bars[1], 0)
            T.mbarrier_arrive_expect_tx(bars[1], 0)
            T.ptx_arrive_barrier(bars[1])
            T.ptx_arrive_barrier_expect_tx(bars[1], 0)
            T.ptx_wait_barrier(bars[1], 0)
            A[tx] = S[127 - tx]

    text = render(main, "cuda/sm_90a").source
    for call in ("tl::mbarrier_init(&bars[1], 128U)", "tl::cp_async_mbarrier_arrive(&bars[0])",
                 "tl::cp_async_mbarrier_arrive_noinc(&bars[1])", "tl::mbarrier_expect_tx_only(&bars[1], 0U)",
                 "tl::mbarrier_wait(&bars[1], 0)"):
        assert call in text, call
    sass = disassemble(compile_cuda(text, "sm_90a", {"name": "mbarriers"}))
    assert "SYNCS" in sass  # the mbarrier unit's instructions
    with pytest.raises(TypeError, match="expects a barrier"):
        T.ptx_arrive_barrier(T.Tensor((4,), "uint64")[0])


def test_mma_layout_helpers_cover_the_tiles_once():
    assert T.get_mma_micro_size("float16") == (16, 16, 16) and T.get_mma_micro_size("int8") == (16, 16, 32)
    stored = {T.mma_store_index_map(lane, local) for lane in range(32) for local in range(8)}
    assert stored == {(r, c) for r in range(16) for c in range(16)}
    assert T.mma_store_index_map(5, 3) == (9, 3)  # c3 of lane 5: groupID 1 + 8, column 2 * 1 + 1
    for transposed in (False, True):
        loaded = {T.get_ldmatrix_offset("A", lane, local, 16, "float16", transposed)
                  for lane in range(32) for local in range(8)}
        assert loaded == {(r, c) for r in range(16) for c in range(16)}
    int8 = {T.get_ldmatrix_offset("A", lane, local, 32, "int8") for lane in range(32) for local in range(16)}
    assert int8 == {(r, c) for r in range(16) for c in range(32)}


def test_mma_fill_and_store_compile():
    from tilelang_cuda.compile import compile_cuda

    @T.prim_func
    def main(C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_local((8,), "float32")
            T.mma_fill("float32", 8, T.access_ptr(acc, "w"), 0)
            T.mma_store("float32", 16, 16, T.access_ptr(C, "w"), T.access_ptr(acc, "r"), 0, 16)

    text = render(main, "cuda/sm_90a").source
    assert "tl::mma_fill(" in text and "tl::mma_store_16x16(" in text
    assert compile_cuda(text, "sm_90a", {"name": "mma_store"})[:4] == b"\x7fELF"


def test_cluster_kernel_declares_its_clusters():
    from tilelang_cuda.compile import compile_cuda

    @T.prim_func
    def main(A: T.Tensor((8,), "int32")):
        with T.ClusterKernel(8, cluster_dims=2, threads=128) as bx:
            T.cluster_sync()
            A[bx] = T.block_rank_in_cluster()

    text = render(main, "cuda/sm_90a").source
    assert "__cluster_dims__(2, 1, 1) __launch_bounds__(128)" in text
    assert compile_cuda(text, "sm_90a", {"name": "clusters"})[:4] == b"\x7fELF"
    with pytest.raises(CodegenError, match="lacks \\(capability feature 'cluster'"):
        render(main, "cuda/sm_80")

    @T.prim_func
    def ragged(A: T.Tensor((8,), "int32")):
        with T.ClusterKernel(7, cluster_dims=2, threads=128) as bx:
            A[0] = 1

    with pytest.raises(CodegenError, match="grid extent 7 along x is not a multiple"):
        render(ragged, "cuda/sm_90a")


def test_cluster_barrier_and_bulk_copy_compile():
    from tilelang_cuda.compile import compile_cuda

    @T.prim_func
    def main(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.ClusterKernel(2, cluster_dims=2, threads=128) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            bars = T.alloc_cluster_barrier([1, 1])
            if tx == 0:
                T.mbarrier_arrive_expect_tx(bars[0], 512)
                T.ptx_cp_async_bulk("float32", S.data, 0, A.data, bx * 128, 512, bars[0])
            T.ptx_wait_barrier(bars[0], 0)
            if tx == 0:
                T.ptx_arrive_cluster_barrier(bars[1], 1 - T.block_rank_in_cluster())
            T.ptx_wait_barrier(bars[1], 0)
            B[bx * 128 + tx] = S[tx]

    text = render(main, "cuda/sm_90a").source
    issue = text[text.index("tl::cp_async_bulk(&S[0], &A[bx * 128], 512U, &bars[0]);"):]
    assert issue.split("\n")[1].strip() == "}", "no block barrier inside the one-thread issue branch"
    assert "tl::mbarrier_arrive_cluster(&bars[1]" in text
    assert compile_cuda(text, "sm_90a", {"name": "cluster_barrier"})[:4] == b"\x7fELF"


def test_wgmma_by_hand_compiles_to_hgmma():
    from tilelang_cuda.compile import compile_cuda, disassemble

    @T.prim_func
    def main(A: T.Tensor((64, 16), "float16"), B: T.Tensor((64, 16), "float16"), C: T.Tensor((128, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            A_s = T.alloc_shared((64, 16), "float16")
            B_s = T.alloc_shared((64, 16), "float16")
            acc = T.alloc_local((32,), "float32")
            da = T.alloc_wgmma_desc()
            db = T.alloc_descriptor("wgmma")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.fence_proxy_async()
            T.initialize_wgmma_descriptor(da, T.access_ptr(A_s[0, 0], "r"), 0, 128, 256)
            T.initialize_wgmma_descriptor(db, B_s[0, 0], 0, 128, 256)
            T.increase_descriptor_offset(db, 0)
            T.warpgroup_arrive()
            T.ptx_wgmma_ss("float32", "m64n64k16", True, True, "fp16", "fp16", "fp32", da, 0, db, 0, acc.data, 0, 0)
            T.warpgroup_commit_batch()
            T.warpgroup_wait(0)
            T.warpgroup_fence_operand(acc)
            for i in T.serial(32):
                C[tx, i] = acc[i]

    text = render(main, "cuda/sm_90a").source
    assert "da = tl::wgmma_desc(&A_s[0], 128U, 256U, 0U);" in text
    assert "tl::wgmma_m64n64k16_f32_f16<0, 0>(&acc[0], da + (uint64_t)0LL, db + (uint64_t)0LL, 0);" in text
    assert "tl::wgmma_fence_operands<32>(&acc[0]);" in text
    assert "HGMMA.64x64x16.F32" in disassemble(compile_cuda(text, "sm_90a", {"name": "wgmma_by_hand"}))
    with pytest.raises(ValueError, match="not a wgmma form"):
        T.ptx_wgmma_ss("float32", "m64n64k16", True, True, "fp16", "bf16", "fp32", None, 0, None, 0, None, 0, 0)
    with pytest.raises(ValueError, match="Blackwell"):
        T.alloc_descriptor("tcgen05")


def _gemm_kernel(gemm, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((128, 64), dtype), B: T.Tensor((64, 128), dtype), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 64), dtype)
            B_s = T.alloc_shared((64, 128), dtype)
            C_l = T.alloc_fragment((128, 128), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            gemm(A_s, B_s, C_l, clear_accum=True)
            T.copy(C_l, C)

    return main


def test_wgmma_gemm_requires_wgmma():
    text = render(_gemm_kernel(T.wgmma_gemm), "cuda/sm_90a").source
    assert "tl::wgmma_m64n" in text
    assert T.wgmma_mma is T.wgmma_gemm
    with pytest.raises(CodegenError, match="T.wgmma_gemm, but its GEMM did not lower to wgmma on cuda/sm_80"):
        render(_gemm_kernel(T.wgmma_gemm), "cuda/sm_80")
    assert "mma" in render(_gemm_kernel(T.gemm), "cuda/sm_80").source  # T.gemm falls back


def test_wgmma_with_a_from_registers_compiles():
    from tilelang_cuda.compile import compile_cuda, disassemble

    @T.prim_func
    def main(B: T.Tensor((64, 16), "bfloat16"), C: T.Tensor((128, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            B_s = T.alloc_shared((64, 16), "bfloat16")
            a = T.alloc_local((8,), "bfloat16")
            acc = T.alloc_local((32,), "float32")
            db = T.alloc_wgmma_desc()
            for i in T.serial(8):
                a[i] = T.cast(tx + i, "bfloat16")
            T.copy(B, B_s)
            T.fence_proxy_async()
            T.initialize_wgmma_descriptor(db, B_s[0, 0], 0, 128, 256)
            T.warpgroup_arrive()
            T.ptx_wgmma_rs("float32", "m64n64k16", True, "bf16", "bf16", "fp32", a.data, 0, db, 0, acc.data, 0, 0)
            T.warpgroup_commit_batch()
            T.warpgroup_wait(0)
            for i in T.serial(32):
                C[tx, i] = acc[i]

    text = render(main, "cuda/sm_90a").source
    assert "tl::wgmma_m64n64k16_rs_f32_bf16<0>(&acc[0], tl::as_words(&a[0]), db + (uint64_t)0LL, 0);" in text
    assert "HGMMA.64x64x16.F32.BF16" in disassemble(compile_cuda(text, "sm_90a", {"name": "wgmma_rs"}))


def test_cuda_source_code_kernel_launches_the_given_entry(tmp_path):
    from tilelang_cuda.compile import compile_cuda

    source = ('#include "tl_cuda_common.h"\n'
              'extern "C" __global__ void scale(const float* A, float* B, int n) {\n'
              '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
              '  if (i < n) B[i] = 2.0f * A[i];\n}\n')
    path = tmp_path / "scale.cu"
    path.write_text(source)

    for given in (source, str(path)):
        @T.prim_func
        def main(A: T.Tensor((1000,), "float32"), B: T.Tensor((1000,), "float32"), n: T.int32):
            T.CUDASourceCodeKernel(T.ceildiv(1000, 128), threads=128, source_code_or_path=given, entry_name="scale")

        kernel = render(main, "cuda/sm_90a")
        assert kernel.source == source and kernel.entry == "scale"
        assert tuple(kernel.grid) == (8, 1, 1) and tuple(kernel.block) == (128, 1, 1)
        assert kernel.extra["written_params"] == "0,1"
        assert compile_cuda(kernel.source, "sm_90a", {"name": "scale"})[:4] == b"\x7fELF"
    with pytest.raises(Exception, match="holds no __global__ function"):
        @T.prim_func
        def nothing(A: T.Tensor((8,), "float32")):
            T.CUDASourceCodeKernel(1, threads=32, source_code_or_path="int x;")


@pytest.mark.parametrize("shape, k_regs", [("m16n8k32", 8), ("m16n8k16", 4)])
def test_sparse_mma_compiles_to_hmma_sp(shape, k_regs):
    from tilelang_cuda.compile import compile_cuda, disassemble

    @T.prim_func
    def main(C: T.Tensor((32, 4), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            a = T.alloc_local((k_regs,), "float16")
            b = T.alloc_local((k_regs,), "float16")
            c = T.alloc_local((4,), "float32")
            e = T.alloc_local((1,), "uint32")
            for i in T.serial(k_regs):
                a[i] = T.cast(i, "float16")
                b[i] = T.cast(tx, "float16")
            for i in T.serial(4):
                c[i] = 0.0
            e[0] = T.uint32(0x44444444)
            T.ptx_mma_sp("float32", shape, "row", "col", "fp16", "fp16", "fp32", a.data, 0, b.data, 0, c.data, 0,
                         e.data, 0, 0, False)
            for i in T.serial(4):
                C[tx, i] = c[i]

    text = render(main, "cuda/sm_90a").source
    assert f"tl::mma_sp_{shape}_f16_f32<0>(&c[0], tl::as_words(&a[0]), tl::as_words(&b[0]), tl::as_words(&e[0]));" in text
    assert "HMMA.SP" in disassemble(compile_cuda(text, "sm_90a", {"name": "mma_sp"}))


@pytest.mark.parametrize("dtype, native", [("float16", "__half2"), ("bfloat16", "__nv_bfloat162")])
def test_packed_math_through_an_index_vector_local(dtype, native):
    """`idx = T.Ramp(...)` makes an int32x2 local; inlined, `C[idx]` is a vector access."""
    from tilelang_cuda.compile import compile_cuda

    @T.prim_func
    def main(A: T.Tensor((256,), dtype), B: T.Tensor((256,), dtype), C: T.Tensor((256,), dtype)):
        with T.Kernel(1, threads=128) as bx:
            tid = T.get_thread_binding()
            idx = T.Ramp(tid * 2, 1, 2)
            C[idx] = T.add2(A[idx], B[idx])

    text = render(main, "cuda/sm_80").source
    assert f"(*(unsigned int*)(&C[tid * 2])) = tl_word(tl::add2(tl_as<{native}>((*(unsigned int*)(&A[tid * 2])))" in text
    assert compile_cuda(text, "sm_80", {"name": "packed_idx"})[:4] == b"\x7fELF"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ieee_round_to_nearest_in_half_precision_compiles(dtype):
    from tilelang_cuda.compile import compile_cuda

    @T.prim_func
    def main(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            v = A[tx]
            B[tx] = (T.ieee_add(v, v) + T.ieee_sub(v, v) + T.ieee_mul(v, v) + T.ieee_fdiv(v, v)
                     + T.ieee_fmaf(v, v, v) + T.ieee_frcp(v) + T.ieee_fsqrt(v) + T.ieee_frsqrt(v))

    text = render(main, "cuda/sm_80").source
    assert "tl_ieee_fma_rn(" in text and "tl_ieee_rsqrt(" in text
    assert compile_cuda(text, "sm_80", {"name": "ieee_half"})[:4] == b"\x7fELF"
    with pytest.raises(ValueError, match="Only rounding mode 'rn' is available for half precision"):
        T.ieee_mul(T.cast(T.float32(1.0), dtype), T.cast(T.float32(2.0), dtype), "ru")
