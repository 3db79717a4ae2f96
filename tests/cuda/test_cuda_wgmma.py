"""T.gemm on wgmma (sm_90a, operands in shared memory through descriptors).

Without a GPU: the layouts against the PTX ISA's (as `wgmma_emulator.py` spells them), whole
lowered kernels in the emulator against NumPy, NVRTC's SASS for sm_90a (HGMMA, no local
memory), and `tl.disable_wgmma` keeping mma.sync.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_cuda.layout_wgmma import choose_warpgroups, d_element, wgmma_accumulator_layout, wgmma_tile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_lowering import _operands, _sass_ops, _target, gemm_kernel  # noqa: E402
from tma_emulator import run_kernel as run_tma_kernel  # noqa: E402
from wgmma_emulator import run_kernel, swizzled_address  # noqa: E402


@pytest.mark.parametrize("rows, cols, element, mn_major", [
    *[(r, c, 2, mn) for r, c in [(128, 64), (64, 128), (32, 32), (16, 16), (64, 256)] for mn in (False, True)],
    (128, 32, 4, False), (64, 16, 4, False), (64, 64, 4, False), (64, 8, 4, False),  # tf32: 128/64/256/32-byte rows
    (128, 64, 1, False), (64, 128, 1, False), (64, 32, 1, False),  # fp8 / s8
])
def test_tile_placement_is_what_a_descriptor_reads(rows, cols, element, mn_major):
    """Every k slice of one instruction (32 bytes of K) a descriptor of the tile names (at
    the lowering's start element, lbo and sbo) reads the logical elements the tile placed there."""
    tile = wgmma_tile(rows, cols, element)
    lbo, sbo = tile.descriptor_offsets(mn_major)
    base = 4096  # a 1024-aligned tile
    step = 32 // element
    # MN-major: rows are k, columns m/n; K-major: rows are m/n, columns k
    k_extent, mn_extent = (rows, cols) if mn_major else (cols, rows)
    for k0 in range(0, k_extent, step):
        for mn0 in range(0, mn_extent, tile.slab if mn_major else 8):
            row, col = (k0, mn0) if mn_major else (mn0, k0)
            start = base + element * tile.flat(row, col)
            for r in range(min(64, mn_extent - mn0)):
                for k in range(step):
                    want = (k0 + k, mn0 + r) if mn_major else (mn0 + r, k0 + k)
                    addr = swizzled_address(start, lbo, sbo, tile.width, mn_major, r, k, element)
                    assert addr == base + element * tile.flat(*want), (r, k, want)


def _run(lowered, *arrays) -> None:
    """Run a lowered kernel in the emulator, the one with TMA where it loads or stores by TMA
    (an epilogue from a wgmma accumulator is staged and stored by TMA when it can be)."""
    if lowered.attrs is not None and "cuda.tensor_maps" in lowered.attrs:
        run_tma_kernel(lowered, *arrays)
    else:
        run_kernel(lowered, *arrays)


def test_accumulator_layout_covers_the_tile_once():
    for m, n, groups in [(128, 128, 1), (128, 256, 2), (64, 256, 2), (256, 128, 2)]:
        tiling = choose_warpgroups(m, n, groups)
        layout = wgmma_accumulator_layout(tiling)
        seen = np.zeros((m, n), int)
        for t in range(layout.threads):
            for s in range(layout.slots):
                seen[layout.element_of(t, s)] += 1
        assert (seen == 1).all()
    # the D fragment of the PTX ISA figure for m64nNk16: thread 0 holds (0,0),(0,1),(8,0),(8,1),(0,8)...
    assert [d_element(0, i) for i in range(5)] == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8)]
    assert d_element(37, 0) == (16 + 1, 2)


def _emulate(M, N, K, dtype="float16", trans_a=False, trans_b=False, relu=False, **kw):
    func = gemm_kernel(M, N, K, dtype=dtype, trans_a=trans_a, trans_b=trans_b, relu=relu, **kw)
    lowered = lower(func, _target("sm_90a"), CompileOptions())
    script = lowered.script()
    assert "tl::wgmma_m64n" in script
    rng = np.random.default_rng(1)
    a_shape, b_shape = ((K, M) if trans_a else (M, K)), ((N, K) if trans_b else (K, N))
    a, b, av, bv = _operands(dtype, a_shape, b_shape, rng)
    c = np.zeros((M, N), np.float32)
    _run(lowered, a, b, c)  # loads or stores through TMA: test_cuda_tma.py's emulator
    ref = (av.T if trans_a else av) @ (bv.T if trans_b else bv)
    if relu:  # an elementwise epilogue on C in the D layout
        ref = np.maximum(ref, 0)
    return float(np.abs(c - ref).max() / max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("case", [
    dict(),  # 128B swizzle, A K-major, B MN-major, 2 pipelined k-tiles
    dict(trans_b=True),
    dict(trans_a=True),
    dict(dtype="bfloat16"),
    dict(bk=32),  # 64B swizzle
    dict(bk=16, trans_b=True),  # 32B swizzle
    dict(threads=256),  # 2 warpgroups split M
    dict(bn=64, threads=256, relu=True),
])
def test_wgmma_gemm_in_emulator(case):
    args = dict(bm=128, bn=128, bk=64, threads=128)
    args.update(case)
    assert _emulate(128, 128, 128, **args) < 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("tile", [(128, 128, 64, 128), (128, 256, 64, 256), (128, 128, 32, 128)])
def test_wgmma_gemm_compiles_to_hgmma(dtype, tile):
    bm, bn, bk, threads = tile
    kernel = tilelang_core.compile(gemm_kernel(1024, 1024, 1024, bm, bn, bk, dtype, stages=3, threads=threads),
                                   target="cuda/sm_90a", cache=False)
    ops = _sass_ops(kernel)
    assert ops.get("HGMMA", 0) >= bk // 16 and ops.get("HMMA", 0) == 0
    assert ops.get("LDL", 0) == 0 and ops.get("STL", 0) == 0, "the accumulator must stay in registers"
    assert "__align__(1024)" in kernel.get_kernel_source()


def test_disable_wgmma_keeps_mma_sync():
    kernel = tilelang_core.compile(gemm_kernel(1024, 1024, 1024, 128, 128, 32, stages=3), target="cuda/sm_90a",
                                   cache=False, pass_configs={"tl.disable_wgmma": True})
    ops = _sass_ops(kernel)
    assert ops.get("HMMA", 0) >= 32 and ops.get("HGMMA", 0) == 0


@pytest.mark.parametrize("dtype, mn_major", [("int8", ((False, False), (True, True))),
                                             ("float32", ((True, False), (True, True)))])
def test_k_major_only_dtypes_keep_mma_sync_for_mn_major_operands(dtype, mn_major):
    """tf32 and s8 wgmma read both operands K-major: an MN-major A (K, M) stays on mma.sync, and
    so does an s8 B (K, N); a float32 B (K, N) takes the swapped form (below)."""
    for trans_a, trans_b in mn_major:
        func = gemm_kernel(256, 256, 256, 128, 128, 32, dtype, trans_a=trans_a, trans_b=trans_b, stages=3)
        script = lower(func, _target("sm_90a"), CompileOptions()).script()
        assert "wgmma" not in script and "tl::mma_m16n8k" in script, (trans_a, trans_b)


def _truncate_tf32(x):
    """float32 values with the 13 low mantissa bits cleared (what the tf32 unit reads)."""
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def _k_major_run(M, N, K, dtype, rng, **kw):
    """Lower a K-major gemm (A (M, K), B (N, K)) for sm_90a, run it in the emulator; (C, A, B)
    as the kernel stores them, and the lowered script."""
    options = CompileOptions.from_pass_configs(kw.pop("pass_configs", None))
    func = gemm_kernel(M, N, K, dtype=dtype, trans_b=True, acc="int32" if dtype == "int8" else "float32", **kw)
    lowered = lower(func, _target("sm_90a"), options)
    if dtype == "float32":
        a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((N, K)).astype(np.float32)
    elif dtype == "int8":
        a, b = rng.integers(-128, 128, (M, K)).astype(np.int8), rng.integers(-128, 128, (N, K)).astype(np.int8)
    else:  # fp8 as raw bytes: every finite code
        import ml_dtypes

        fp8 = getattr(ml_dtypes, dtype)
        codes = np.arange(256, dtype=np.uint8)
        finite = codes[np.isfinite(codes.view(fp8).astype(np.float64))]
        a, b = rng.choice(finite, (M, K)), rng.choice(finite, (N, K))
    c = np.full((M, N), -7 if dtype == "int8" else np.nan, np.int32 if dtype == "int8" else np.float32)
    _run(lowered, a, b, c)
    return c, a, b, lowered.script()


def _values(x, dtype):
    if dtype.startswith("float8"):
        import ml_dtypes

        return x.view(getattr(ml_dtypes, dtype)).astype(np.float64)
    return x.astype(np.float64)


@pytest.mark.parametrize("case", [
    dict(),  # TMA loads, 128B swizzle (32 floats a row), 2 k-tiles of 4 k8 steps
    dict(bk=16, threads=256),  # 64B swizzle, 2 warpgroups split M
    dict(bn=64, bk=64, stages=2, pass_configs={"tl.disable_tma_lower": True}),  # cp.async, 2 slabs of K
])
def test_tf32_wgmma_gemm_in_emulator(case):
    """float32 T.gemm on wgmma tf32 (both operands K-major): the emulator's result is the
    product of the operands with their 13 low mantissa bits dropped, summed in float32 (a
    bound of 2 (K + 2) 2^-24 |A| |B|); it is not the product of the unrounded operands within
    that bound (so the check sees tf32), and C holds no poison."""
    args = dict(bm=128, bn=128, bk=32, threads=128, stages=3)
    args.update(case)
    M, N, K = 128, 128, 64
    c, a, b, script = _k_major_run(M, N, K, "float32", np.random.default_rng(3), **args)
    assert "k8_f32_tf32\"" in script and "tl::mma_m16n8k" not in script
    at, bt = _truncate_tf32(a).astype(np.float64), _truncate_tf32(b).astype(np.float64)
    bound = 2 * (K + 2) * 2.0 ** -24 * (np.abs(at) @ np.abs(bt).T)
    assert (np.abs(c - at @ bt.T) <= bound).all()
    assert not (np.abs(c - a.astype(np.float64) @ b.astype(np.float64).T) <= bound).all()


def test_tf32_wgmma_negative_control_wrong_k_step(monkeypatch):
    """The emulator catches a lowering whose descriptors step K by 16 bytes (4 floats) instead
    of the instruction's 32: half of K is read twice, half never."""
    import tilelang_cuda.lower_wgmma as lw

    descriptor = lw._descriptor
    monkeypatch.setattr(lw, "_descriptor", lambda region, tile, mn_major, mn, kk, k_step=16:
                        descriptor(region, tile, mn_major, mn, kk, k_step // 2))
    c, a, b, script = _k_major_run(128, 128, 32, "float32", np.random.default_rng(4), bm=128, bn=128, bk=32,
                                   threads=128, stages=1)
    assert "k8_f32_tf32\"" in script
    ref = _truncate_tf32(a).astype(np.float64) @ _truncate_tf32(b).astype(np.float64).T
    assert np.abs(c - ref).max() > 1.0


# -- tf32 from registers: the swapped form (B as (K, N)) and the rs form --------------------


def test_tf32_register_fragment_is_the_ptx_one():
    """`tf32_a_element` against the PTX ISA's wgmma .m64nNk8 A figure for 32-bit types, read
    as CuTe writes it (ALayout_64x8: thread (4, 8, 4) : (64, 1, 16), value (2, 2) : (8, 256),
    into a column-major 64 x 8 tile); the block layouts cover their tiles once; the tf32 A
    layout of warpgroups stacked along M is mma.sync's A layout with the warps stacked along M
    (so layout inference's mma.sync constraint gives wgmma its registers)."""
    from tilelang_cuda.layout import a_operand_layout, choose_warps, mma_instruction
    from tilelang_cuda.layout_wgmma import tf32_a_element, tf32_a_layout, transposed_accumulator_layout

    for t in range(128):
        for j in range(4):
            index = 64 * (t % 4) + (t // 4) % 8 + 16 * (t // 32) + 8 * (j % 2) + 256 * (j // 2)
            assert tf32_a_element(t, j) == (index % 64, index // 64), (t, j)
    for layout in (tf32_a_layout(128, 32, 2), transposed_accumulator_layout(choose_warpgroups(128, 256, 2))):
        seen = np.zeros(layout.shape, int)
        for t in range(layout.threads):
            for slot in range(layout.slots):
                seen[layout.element_of(t, slot)] += 1
        assert (seen == 1).all()
    d = wgmma_accumulator_layout(choose_warpgroups(128, 256, 2))
    transposed = transposed_accumulator_layout(choose_warpgroups(128, 256, 2))
    assert transposed.shape == (256, 128) and transposed.element_of(37, 5) == d.element_of(37, 5)[::-1]
    mma = a_operand_layout(choose_warps(128, 256, 8, policy=1), mma_instruction("float32", "float32"), 32)
    assert tf32_a_layout(128, 32, 2) == mma
    assert tf32_a_layout(128, 32, 2) != a_operand_layout(choose_warps(128, 256, 8, policy=0),
                                                         mma_instruction("float32", "float32"), 32)


def _swapped_run(M, N, K, rng, **kw):
    """Lower a float32 gemm with B as (K, N) for sm_90a and run it in the emulator, C poisoned
    with NaN; (C, A, B, script)."""
    options = CompileOptions.from_pass_configs(kw.pop("pass_configs", None))
    lowered = lower(gemm_kernel(M, N, K, dtype="float32", **kw), _target("sm_90a"), options)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    _run(lowered, a, b, c)
    return c, a, b, lowered.script()


@pytest.mark.parametrize("case", [
    dict(),  # TMA loads on a lag-1 pipeline, one warpgroup, B's tile in 128-byte slabs
    dict(bm=128, bn=128, threads=256),  # 2 warpgroups split N (C^T's rows)
    dict(bm=64, bn=256, bk=16, threads=256, relu=True),  # 2 m64 blocks a warpgroup; 64B-swizzled A
    dict(stages=2, pass_configs={"tl.disable_tma_lower": True}),  # cp.async-fed
])
def test_swapped_tf32_gemm_in_emulator(case):
    """float32 A (M, K) @ B (K, N) on wgmma tf32 as C^T = B^T A^T: every element of C is the
    product of the operands with their 13 low mantissa bits dropped (within float32 summation's
    bound), not that of the unrounded operands, and none is left poisoned."""
    args = dict(bm=128, bn=128, bk=32, threads=128, stages=3)
    args.update(case)
    relu = args.get("relu", False)
    M, N, K = 128, 256, 64
    c, a, b, script = _swapped_run(M, N, K, np.random.default_rng(11), **args)
    assert "k8_rs_f32_tf32\"" in script and "tl::mma_m16n8k" not in script
    at, bt = _truncate_tf32(a).astype(np.float64), _truncate_tf32(b).astype(np.float64)
    ref = np.maximum(at @ bt, 0) if relu else at @ bt
    bound = 2 * (K + 2) * 2.0 ** -24 * (np.abs(at) @ np.abs(bt))
    assert not np.isnan(c).any() and (np.abs(c - ref) <= bound).all()
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert not (np.abs(c - (np.maximum(exact, 0) if relu else exact)) <= bound).all()


def test_swapped_tf32_negative_control_wrong_register_fragment(monkeypatch):
    """The emulator catches a swapped lowering that loads B^T into registers in the wrong
    fragment order (k halves and row halves exchanged)."""
    import tilelang_cuda.lower_wgmma as lw

    fragment = lw.tf32_a_element
    monkeypatch.setattr(lw, "tf32_a_element", lambda t, j: fragment(t, (j % 2) * 2 + j // 2))
    c, a, b, script = _swapped_run(128, 128, 32, np.random.default_rng(12), bm=128, bn=128, bk=32, threads=128,
                                   stages=1)
    assert "k8_rs_f32_tf32\"" in script
    ref = _truncate_tf32(a).astype(np.float64) @ _truncate_tf32(b).astype(np.float64)
    assert np.abs(c - ref).max() > 1.0


def test_swapped_tf32_gemm_keeps_the_users_placement_of_b():
    """B of the swapped form is read with plain loads: a placement the user gave it (row k
    rotated by 4 k % 8 floats) stays, its tiles then come through cp.async (a TMA box writes only the
    swizzled placement), and the result is right; A's tile, read by descriptor, still takes
    the wgmma placement."""
    from tilelang_core import language as T

    M, N, K, bk = 128, 128, 64, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as _:
            A_s = T.alloc_shared((M, bk), "float32")
            B_s = T.alloc_shared((bk, N), "float32")
            C_f = T.alloc_fragment((M, N), "float32")
            T.annotate_layout({B_s: T.Layout((bk, N), lambda k, n: (k, (n + 4 * (k % 8)) % N))})
            T.clear(C_f)
            for ko in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[0, ko * bk], A_s)
                T.copy(B[ko * bk, 0], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C)

    lowered = lower(main, _target("sm_90a"), CompileOptions())
    script = lowered.script()
    assert "k8_rs_f32_tf32\"" in script and "cp_async" in script and "tma_load" not in script
    rng = np.random.default_rng(14)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    _run(lowered, a, b, c)
    at, bt = _truncate_tf32(a).astype(np.float64), _truncate_tf32(b).astype(np.float64)
    assert (np.abs(c - at @ bt) <= 2 * (K + 2) * 2.0 ** -24 * (np.abs(at) @ np.abs(bt))).all()


def test_tf32_rs_gemm_reads_a_from_registers_in_emulator():
    """A float32 A fragment times B (N, K) K-major: wgmma imposes the tf32 A fragment on A
    (mma.sync has no float32 A from registers) and the rs form passes A's slots as the
    instruction's registers."""
    from tilelang_core import language as T

    M, N, K = 128, 64, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=256) as _:
            A_s = T.alloc_shared((M, K), "float32")
            B_s = T.alloc_shared((N, K), "float32")
            A_f = T.alloc_fragment((M, K), "float32")
            C_f = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(A_s, A_f)
            T.clear(C_f)
            T.gemm(A_f, B_s, C_f, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_f, C)

    lowered = lower(main, _target("sm_90a"), CompileOptions())
    assert "k8_rs_f32_tf32\"" in lowered.script() and "mma_m16n8k8" not in lowered.script()
    rng = np.random.default_rng(13)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((N, K)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    _run(lowered, a, b, c)
    at, bt = _truncate_tf32(a).astype(np.float64), _truncate_tf32(b).astype(np.float64)
    assert (np.abs(c - at @ bt.T) <= 2 * (K + 2) * 2.0 ** -24 * (np.abs(at) @ np.abs(bt).T)).all()


def test_swapped_tf32_gemm_compiles_to_hgmma_from_registers():
    """The gemm operator's float32 a @ b on sm_90a (precision "high"): the table's transposed
    tile (256 x 128, a loading warpgroup, TMA), HGMMA 64x256x8 TF32 with A from registers
    loaded by LDS, no mma.sync, no local memory; the register loads of k-step kk wait for the
    previous call's group kk only (`DEPBAR.LE gsb0, 0x3`: 3 groups stay in flight)."""
    from tilelang_core import ops
    from tilelang_core.ops.launch import kernel_for
    from tilelang_cuda.compile import disassemble

    op = ops.get("gemm")
    problem = {**op.example, "M": 2048, "N": 2048, "K": 2048, "dtype": "float32"}
    kernel, config, _ = kernel_for(op, _target("sm_90a"), problem)
    source = kernel.get_kernel_source()
    assert "wgmma_m64n256k8_rs_f32_tf32(" in source and "tl::tma_load(" in source and "setmaxnreg" in source
    sass = disassemble(kernel.binary)
    ops_ = _sass_ops(kernel)
    assert "HGMMA.64x256x8.F32.TF32 R" in sass and ops_.get("HMMA", 0) == 0 and ops_.get("LDS", 0) >= 16
    assert ops_.get("LDL", 0) == 0 and ops_.get("STL", 0) == 0
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x3" in sass


@pytest.mark.parametrize("dtype", ["int8", "float8_e4m3fn", "float8_e5m2"])
def test_8bit_wgmma_gemm_in_emulator(dtype):
    """s8 -> s32 (exact) and fp8 -> f32 on wgmma k32, both operands K-major."""
    M, N, K = 128, 64, 64
    c, a, b, script = _k_major_run(M, N, K, dtype, np.random.default_rng(5), bm=128, bn=64, bk=64, threads=128,
                                   stages=2)
    kind = {"int8": "s32_s8", "float8_e4m3fn": "f32_e4m3", "float8_e5m2": "f32_e5m2"}[dtype]
    assert f"k32_{kind}\"" in script and "tl::mma_m16n8k" not in script
    av, bv = _values(a, dtype), _values(b, dtype)
    ref = av @ bv.T
    if dtype == "int8":
        assert (c == ref).all()
    else:
        assert (np.abs(c - ref) <= 2 * (K + 2) * 2.0 ** -24 * (np.abs(av) @ np.abs(bv).T)).all()


@pytest.mark.parametrize("dtype, sass", [("float32", "HGMMA"), ("float8_e4m3fn", "QGMMA"), ("int8", "IGMMA")])
def test_k_major_wgmma_compiles_to_gmma(dtype, sass):
    bk = 32 if dtype == "float32" else 64
    kernel = tilelang_core.compile(gemm_kernel(1024, 1024, 1024, 128, 128, bk, dtype, trans_b=True, stages=3,
                                               acc="int32" if dtype == "int8" else "float32"),
                                   target="cuda/sm_90a", cache=False)
    ops = _sass_ops(kernel)
    steps = bk * {"float32": 4, "float8_e4m3fn": 1, "int8": 1}[dtype] // 32
    assert ops.get(sass, 0) >= steps and ops.get("HMMA", 0) == 0 and ops.get("IMMA", 0) == 0
    assert ops.get("LDL", 0) == 0 and ops.get("STL", 0) == 0, "the accumulator must stay in registers"


def _attention_chain(M, N, K, D, dtype, threads, trans_v=False):
    """S = Q @ K^T (ss), P = S in `dtype`, O = P @ V (rs: P from registers), FlashAttention's
    two gemms without the softmax."""
    from tilelang_core import language as T

    v_shape = (D, N) if trans_v else (N, D)

    @T.prim_func
    def main(Q: T.Tensor((M, K), dtype), Kt: T.Tensor((N, K), dtype), V: T.Tensor(v_shape, dtype),
             O: T.Tensor((M, D), "float32")):
        with T.Kernel(1, threads=threads) as _:
            Q_s = T.alloc_shared((M, K), dtype)
            K_s = T.alloc_shared((N, K), dtype)
            V_s = T.alloc_shared(v_shape, dtype)
            S = T.alloc_fragment((M, N), "float32")
            P = T.alloc_fragment((M, N), dtype)
            acc = T.alloc_fragment((M, D), "float32")
            T.copy(Q, Q_s)
            T.copy(Kt, K_s)
            T.copy(V, V_s)
            T.clear(S)
            T.gemm(Q_s, K_s, S, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(S, P)
            T.clear(acc)
            T.gemm(P, V_s, acc, transpose_B=trans_v, policy=T.GemmWarpPolicy.FullRow)
            T.copy(acc, O)

    return main


@pytest.mark.parametrize("M, N, K, D, dtype, threads, trans_v", [
    (64, 64, 64, 64, "float16", 128, False),
    (128, 128, 64, 128, "float16", 256, False),  # FlashAttention's 128 x 128 tiles, 2 warpgroups
    (128, 64, 64, 64, "float16", 256, False),  # (the emulator has no float -> bf16 cast: bf16 is compiled below)
    (64, 64, 64, 128, "float16", 128, True),  # V given as (D, N): B K-major
])
def test_rs_gemm_reads_a_from_registers_in_emulator(M, N, K, D, dtype, threads, trans_v):
    lowered = lower(_attention_chain(M, N, K, D, dtype, threads, trans_v), _target("sm_90a"), CompileOptions())
    script = lowered.script()
    assert "k16_rs_f32_" in script and "mma_m16n8k16" not in script, "P @ V must run on wgmma from registers"
    rng = np.random.default_rng(7)
    q, k, qv, kv = _operands(dtype, (M, K), (N, K), rng)
    v, _, vv, _ = _operands(dtype, (D, N) if trans_v else (N, D), (1, 1), rng)
    o = np.full((M, D), np.nan, np.float32)
    _run(lowered, q, k, v, o)
    s = qv @ kv.T
    ref = s.astype(np.float16).astype(np.float64) @ (vv.T if trans_v else vv)  # P is rounded to fp16 in the kernel
    assert np.abs(o - ref).max() / max(1.0, np.abs(ref).max()) < 1e-3


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rs_gemm_compiles_to_hgmma_without_ldmatrix(dtype):
    kernel = tilelang_core.compile(_attention_chain(128, 128, 64, 128, dtype, 256), target="cuda/sm_90a",
                                   cache=False)
    assert f"k16_rs_f32_{'f16' if dtype == 'float16' else 'bf16'}<" in kernel.get_kernel_source()
    ops = _sass_ops(kernel)
    assert ops.get("HGMMA", 0) >= 8 and ops.get("HMMA", 0) == 0 and ops.get("LDSM", 0) == 0
    assert ops.get("LDL", 0) == 0 and ops.get("STL", 0) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("wgmma", [True, False])
def test_tf32_operand_rounding_on_the_gpu(wgmma):
    """What the H100 does to float32 operands: every A element is 1 + 2^-11 + 2^-13 (TF32 to
    nearest: 1 + 2^-10; truncated: 1), B picks column 0. wgmma (the emulator's model)
    truncates; mma.sync rounds them with cvt.rna first (`tl.disable_wgmma`)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("needs an sm_90 GPU through torch")
    kernel = tilelang_core.compile(gemm_kernel(64, 64, 32, 64, 64, 32, "float32", trans_b=True, stages=1),
                                   target="cuda/sm_90a", cache=False, pass_configs={"tl.disable_wgmma": not wgmma})
    assert ("k8_f32_tf32(" in kernel.get_kernel_source()) is wgmma
    a = torch.full((64, 32), 1 + 2.0 ** -11 + 2.0 ** -13, device="cuda")
    b = torch.zeros((64, 32), device="cuda")
    b[0] = 1.0
    c = torch.full((64, 64), float("nan"), device="cuda")
    kernel(a, b, c)
    want = 32.0 if wgmma else 32.0 * (1 + 2.0 ** -10)
    assert (c[:, 0] == want).all(), (c[:, 0].unique(), want)
    assert (c[:, 1:] == 0).all()


@pytest.mark.gpu
def test_swapped_tf32_gemm_on_the_gpu():
    """float32 A (M, K) @ B (K, N) on the H100's swapped wgmma (B^T from registers, TMA-fed,
    3 wgmma groups in flight while the next k-step's registers load): every element within
    the TF32 bound of the float64 product, none left poisoned (what the emulator cannot see:
    a register rewritten while a wgmma still reads it)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("needs an sm_90 GPU through torch")
    M, N, K = 512, 384, 1024
    kernel = tilelang_core.compile(gemm_kernel(M, N, K, 128, 128, 32, "float32", stages=4, threads=256),
                                   target="cuda/sm_90a", cache=False)
    assert "k8_rs_f32_tf32(" in kernel.get_kernel_source()
    a, b = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    c = torch.full((M, N), float("nan"), device="cuda")
    kernel(a, b, c)
    truncate = lambda x: (x.view(torch.int32) & -8192).view(torch.float32).double()  # noqa: E731
    at, bt = truncate(a), truncate(b)
    bound = (2 * (K + 2) * 2.0 ** -24 + 1.01 * 2.0 ** -9) * (at.abs() @ bt.abs())
    assert torch.isfinite(c).all() and ((c.double() - at @ bt).abs() <= bound).all()


def _accumulate_through_registers(M, N, K, dtype="float16", threads=128):
    """acc = A_s @ B_s^T (ss, on wgmma), then acc += P @ X_s with P a register fragment (rs):
    TileLang's mamba chunk scan. The rs gemm takes the accumulator layout the first gemm gave
    acc (before: it asked for mma.sync's, acc went to shared memory and the compile failed)."""
    from tilelang_core import language as T

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), P: T.Tensor((M, K), dtype),
             X: T.Tensor((K, N), dtype), O: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads) as _:
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((N, K), dtype)
            P_s = T.alloc_shared((M, K), dtype)
            X_s = T.alloc_shared((K, N), dtype)
            p = T.alloc_fragment((M, K), dtype)
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(P, P_s)
            T.copy(X, X_s)
            T.gemm(A_s, B_s, acc, transpose_B=True, clear_accum=True)
            T.copy(P_s, p)
            for i, j in T.Parallel(M, K):
                p[i, j] = p[i, j] * 2
            T.gemm(p, X_s, acc)
            T.copy(acc, O)

    return main


def test_rs_gemm_accumulates_into_a_wgmma_accumulator_in_emulator():
    M = N = K = 64
    lowered = lower(_accumulate_through_registers(M, N, K), _target("sm_90a"), CompileOptions())
    script = lowered.script()
    assert "k16_rs_f32_" in script and "mma_m16n8k16" not in script and "acc_reg" in script
    rng = np.random.default_rng(11)
    a, b, av, bv = _operands("float16", (M, K), (N, K), rng)
    p, x, pv, xv = _operands("float16", (M, K), (K, N), rng)
    o = np.full((M, N), np.nan, np.float32)
    _run(lowered, a, b, p, x, o)
    ref = av @ bv.T + (pv * 2) @ xv
    assert np.abs(o - ref).max() / max(1.0, np.abs(ref).max()) < 1e-3


def _sliced_in_ranges(M=64, N=64, K=128, W=256):
    """Two warpgroups with roles (`if tx < 128` / `else`), each running T.wgmma_gemm (a kernel
    that asks for wgmma gets it inside such scopes; others keep mma.sync there) on column ranges
    of shared tiles (TileLang's MLA kernels split the head dim so): C0 = Q_s[:, :64] @ K_s[:, :64]^T
    + Q_s[:, 64:] @ K_s[:, 64:]^T, the starts `j * 64` of an unrolled loop (K-major ranges);
    C1 = P_s @ V_s[:, 64:128], a range of whole slabs of an MN-major B."""
    from tilelang_core import language as T

    @T.prim_func
    def main(Q: T.Tensor((M, K), "float16"), Kt: T.Tensor((N, K), "float16"), P: T.Tensor((M, 64), "float16"),
             V: T.Tensor((64, W), "float16"), C0: T.Tensor((M, N), "float32"), C1: T.Tensor((M, 64), "float32")):
        with T.Kernel(1, threads=256) as _:
            tx = T.get_thread_binding()
            Q_s = T.alloc_shared((M, K), "float16")
            K_s = T.alloc_shared((N, K), "float16")
            P_s = T.alloc_shared((M, 64), "float16")
            V_s = T.alloc_shared((64, W), "float16")
            acc0 = T.alloc_fragment((M, N), "float32")
            acc1 = T.alloc_fragment((M, 64), "float32")
            T.copy(Q, Q_s)
            T.copy(Kt, K_s)
            T.copy(P, P_s)
            T.copy(V, V_s)
            if tx < 128:
                T.clear(acc0)
                for j in T.unroll(K // 64):
                    T.wgmma_gemm(Q_s[:, j * 64:(j + 1) * 64], K_s[:, j * 64:(j + 1) * 64], acc0, transpose_B=True)
                T.copy(acc0, C0)
            else:
                T.clear(acc1)
                T.wgmma_gemm(P_s, V_s[:, 64:128], acc1)
                T.copy(acc1, C1)

    return main


def test_wgmma_in_warpgroup_roles_reads_column_ranges_in_emulator():
    lowered = lower(_sliced_in_ranges(), _target("sm_90a"), CompileOptions())
    script = lowered.script()
    assert script.count("tl::wgmma_m64n64k16_f32_f16") >= 2 and "mma_m16n8k16" not in script
    rng = np.random.default_rng(5)
    q, k, qv, kv = _operands("float16", (64, 128), (64, 128), rng)
    p, v, pv, vv = _operands("float16", (64, 64), (64, 256), rng)
    c0, c1 = np.full((64, 64), np.nan, np.float32), np.full((64, 64), np.nan, np.float32)
    _run(lowered, q, k, p, v, c0, c1)
    assert np.abs(c0 - qv @ kv.T).max() < 1e-2
    assert np.abs(c1 - pv @ vv[:, 64:128]).max() < 1e-2


def _gemm_with_row_buffers(row_elems: int):
    """A 64x64x64 wgmma GEMM block with four small shared buffers beside its tiles."""
    import tilelang_core.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32"),
             R: T.Tensor((4, row_elems), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            r0 = T.alloc_shared((row_elems,), "float32")
            r1 = T.alloc_shared((row_elems,), "float32")
            r2 = T.alloc_shared((row_elems,), "float32")
            r3 = T.alloc_shared((row_elems,), "float32")
            C_l = T.alloc_fragment((64, 64), "float32")
            for i in T.Parallel(row_elems):  # live across the GEMM: no bytes shared with the tiles
                r0[i] = A[0, i]
                r1[i] = A[1, i]
                r2[i] = A[2, i]
                r3[i] = A[3, i]
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_l, clear_accum=True)
            T.copy(C_l, C)
            for i in T.Parallel(row_elems):
                R[0, i] = r0[i]
                R[1, i] = r1[i]
                R[2, i] = r2[i]
                R[3, i] = r3[i]
    return main


def test_small_shared_buffers_of_a_wgmma_kernel_are_not_rounded_to_1024_bytes():
    """Tiles a descriptor reads start on 1024-byte boundaries; row buffers beside them take
    the alignment their size allows (TileLang's FlashMLA needed 232,704 bytes, 256 past the
    H200's opt-in, with each 256-byte buffer rounded up to 1024)."""
    kernel = tilelang_core.compile(_gemm_with_row_buffers(64), target="cuda/sm_90a", cache=False)
    source = kernel.get_kernel_source()
    assert "tl::wgmma_m64n" in source
    assert kernel.meta.shared_memory == 2 * 64 * 64 * 2 + 4 * 64 * 4  # not 3 * 1024 + 256 for the rows


def test_shared_memory_past_the_opt_in_after_alignment_is_a_compile_error():
    import dataclasses

    from tilelang_core.codegen import CodegenError

    target = _target("sm_90a")
    tiles = 2 * 64 * 64 * 2
    # the core's plan (16-byte alignment) fits; the printer's (128 bytes per small buffer) does not
    small = dataclasses.replace(target, capabilities=dataclasses.replace(target.capabilities,
                                                                         shared_memory_optin=tiles + 4 * 16))
    with pytest.raises(CodegenError, match="shared_memory_optin"):
        tilelang_core.compile(_gemm_with_row_buffers(4), target=small, cache=False)
