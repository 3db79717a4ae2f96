"""`T.gemm_sp` (tilelang_core.transform.sparse_gemm) and the NumPy helpers of its format
(tilelang_core.utils.sparse): the expansion's IR, a CPU run against NumPy in every operand
form and metadata width, and the format's bits against TileLang's own documentation."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.utils.sparse import compress, decompress, random_semi_sparse

E_BITS = {"int8": 8, "int16": 16, "int32": 32, "uint16": 16}


def e_factor(dtype, meta):
    group = 2 if dtype == "float32" else 4
    return E_BITS[meta] // 4 * group


def sparse_matmul(M, N, K, bM, bN, bK, dtype, accum, meta, trans_a=False, trans_b=False, a_frag=False, b_frag=False,
                  stages=2, threads=128):
    """TileLang's tilelibrary test kernel (its four operand forms), written again."""
    ef = e_factor(dtype, meta)
    a_shape = (K // 2, M) if trans_a else (M, K // 2)
    e_shape = (K // ef, M) if trans_a else (M, K // ef)
    b_shape = (N, K) if trans_b else (K, N)
    as_shape = (bK // 2, bM) if trans_a else (bM, bK // 2)
    es_shape = (bK // ef, bM) if trans_a else (bM, bK // ef)
    bs_shape = (bN, bK) if trans_b else (bK, bN)

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), E: T.Tensor(e_shape, meta), B: T.Tensor(b_shape, dtype),
             C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared(as_shape, dtype)
            B_s = T.alloc_shared(bs_shape, dtype)
            E_s = T.alloc_shared(es_shape, meta)
            A_f = T.alloc_fragment(as_shape, dtype)
            B_f = T.alloc_fragment(bs_shape, dtype)
            C_f = T.alloc_fragment((bM, bN), accum)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if trans_a:
                    T.copy(E[k * bK // ef, by * bM], E_s)
                    T.copy(A[k * bK // 2, by * bM], A_s)
                else:
                    T.copy(E[by * bM, k * bK // ef], E_s)
                    T.copy(A[by * bM, k * bK // 2], A_s)
                if trans_b:
                    T.copy(B[bx * bN, k * bK], B_s)
                else:
                    T.copy(B[k * bK, bx * bN], B_s)
                if a_frag:
                    T.copy(A_s, A_f)
                if b_frag:
                    T.copy(B_s, B_f)
                T.gemm_sp(A_f if a_frag else A_s, E_s, B_f if b_frag else B_s, C_f, trans_a, trans_a, trans_b)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def operands(M, N, K, dtype, meta, trans_a, trans_b, seed=0):
    dense = random_semi_sparse(M, K, dtype, seed=seed)
    values, metadata = compress(dense, dtype=dtype, meta_dtype=meta)
    rng = np.random.default_rng(seed + 1)
    b = rng.integers(-3, 4, size=(N, K) if trans_b else (K, N)).astype(dense.dtype)
    if trans_a:
        values, metadata = np.ascontiguousarray(values.T), np.ascontiguousarray(metadata.T)
    return dense, values, metadata, b


@pytest.mark.parametrize("dtype, accum, meta, trans_a, trans_b, a_frag, b_frag", [
    ("float16", "float32", "int16", False, False, False, False),
    ("float16", "float32", "int16", False, True, True, False),
    ("float16", "float32", "int8", True, False, False, True),
    ("float16", "float32", "uint16", True, True, True, True),
    ("int8", "int32", "int32", False, True, False, False),
    ("float32", "float32", "int16", False, False, False, False),
    ("float32", "float32", "int8", True, True, True, False),
], ids=["ss-f16", "rs-f16-transB", "sr-f16-int8meta-transA", "rr-f16-uint16meta-transAB", "ss-int8",
        "ss-f32-1of2", "rs-f32-int8meta-transAB"])
def test_cpu_run_matches_numpy(dtype, accum, meta, trans_a, trans_b, a_frag, b_frag):
    M, N, K = 64, 32, 128
    kernel = tilelang.compile(sparse_matmul(M, N, K, 32, 32, 64, dtype, accum, meta, trans_a, trans_b, a_frag, b_frag),
                              out_idx=[3], target="cpu")
    dense, values, metadata, b = operands(M, N, K, dtype, meta, trans_a, trans_b)
    c = kernel(values, metadata, b)
    expected = dense.astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-3)


def test_zero_metadata_is_not_the_dense_product():
    """A negative control: the same values with every nibble 0 (both positions 0) give another C."""
    M, N, K = 32, 32, 64
    kernel = tilelang.compile(sparse_matmul(M, N, K, 32, 32, 64, "float16", "float32", "int16"), out_idx=[3],
                              target="cpu")
    dense, values, metadata, b = operands(M, N, K, "float16", "int16", False, False)
    good = kernel(values, metadata, b)
    bad = kernel(values, np.zeros_like(metadata), b)
    np.testing.assert_allclose(good, dense.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)
    assert not np.allclose(good, bad)


def test_expansion_is_a_decode_loop_and_a_gemm():
    from tilelang_core.ir import collect_tile_ops
    from tilelang_core.transform.sparse_gemm import expand_sparse_gemm

    func = sparse_matmul(64, 32, 64, 64, 32, 64, "float16", "float32", "int16", a_frag=True)
    assert [op.name for op in collect_tile_ops(func)].count("gemm_sp") == 1
    expanded = expand_sparse_gemm(func, None)
    names = [op.name for op in collect_tile_ops(expanded)]
    assert "gemm_sp" not in names and names.count("gemm") == 1
    gemm = [op for op in collect_tile_ops(expanded) if op.name == "gemm"][0]
    a = gemm.regions[0]
    assert a.scope == "local.fragment" and a.static_extents() == (64, 64) and a.dtype == "float16"


def test_bits_match_tilelang_documented_format():
    """TileLang's torch_compress docstring: bits [1:0] first position, [3:2] second, nibbles
    little-endian; 1:2 types write 0b0100 / 0b1110."""
    row = np.array([[0, 5, 0, 7, 3, 0, 0, 0, 0, 0, 2, 0, 1, 0, 0, 4]], dtype=np.float16)
    values, meta = compress(row, meta_dtype=np.int16)
    assert values.tolist() == [[5, 7, 3, 0, 0, 2, 1, 4]]
    nibbles = [0b1101, 0b0100, 0b1000, 0b1100]  # (1,3), (0,1), (0,2), (0,3)
    assert int(meta.view(np.uint16)[0, 0]) == sum(n << (4 * i) for i, n in enumerate(nibbles))
    wide = np.array([[0, 2.0, 3.0, 0]], dtype=np.float32)
    values, meta = compress(np.tile(wide, (1, 4)), meta_dtype=np.int16)
    assert values.tolist() == [[2.0, 3.0] * 4]
    assert int(meta.view(np.uint16)[0, 0]) == 0b0100_1110_0100_1110


@pytest.mark.parametrize("dtype, meta", [("float16", "int8"), ("int8", "int32"), ("float32", "int16"),
                                         ("float16", "uint16")])
def test_compress_round_trip(dtype, meta):
    dense = random_semi_sparse(16, 64, dtype, seed=3)
    values, metadata = compress(dense, dtype=dtype, meta_dtype=meta)
    assert metadata.dtype == np.dtype(meta) and metadata.shape == (16, 64 // e_factor(dtype, meta))
    np.testing.assert_array_equal(decompress(values, metadata, dtype=dtype), dense)


def test_compress_refuses_a_dense_group():
    with pytest.raises(ValueError, match="row 0, group 1 holds 3 non-zeros"):
        compress(np.array([[1, 0, 0, 0, 1, 1, 1, 0] * 2], dtype=np.float16))


def test_shape_errors_name_the_operands():
    with pytest.raises(Exception, match=r"E must be \(32, 4\) \(int16 holds the metadata of 16 elements"):
        _bad_metadata_kernel()


def _bad_metadata_kernel():
    @T.prim_func
    def main(A: T.Tensor((32, 32), "float16"), E: T.Tensor((32, 2), "int16"), B: T.Tensor((64, 32), "float16"),
             C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 32), "float16")
            E_s = T.alloc_shared((32, 2), "int16")
            B_s = T.alloc_shared((64, 32), "float16")
            C_f = T.alloc_fragment((32, 32), "float32")
            T.gemm_sp(A_s, E_s, B_s, C_f)

    return main


def test_printed_kernel_parses_back_equal():
    import tvm

    func = sparse_matmul(64, 32, 64, 64, 32, 64, "float16", "float32", "int16", trans_a=True)
    text = func.script()
    assert "T.tl.gemm_sp(" in text
    tvm.ir.assert_structural_equal(func, tvm.script.from_source(text))
