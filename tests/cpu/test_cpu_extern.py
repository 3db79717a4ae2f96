"""Code a kernel brings along and calls, end to end on the CPU backend: `T.import_source` of C
helpers called through `T.call_extern` with `T.access_ptr` pointers (into global memory, a
local array and a one-element local buffer), `T.dp4a`'s portable form, `T.thread_binding`,
and the imported text in the cache key. Every result is checked against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T

HELPERS = """
static inline float add_bias(float x, float bias) { return x + bias; }
static inline void reverse_row(const float* src, float* dst, int n) {
  for (int i = 0; i < n; ++i) dst[i] = src[n - 1 - i];
}
static inline void row_sum(const float* src, float* out, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += src[i];
  *out = s;
}
"""


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))


def helpers_kernel(m, n):
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32"),
             C: T.Tensor((m, n), "float32"), S: T.Tensor((m,), "float32")):
        with T.Kernel(m, threads=1) as bx:
            T.import_source(HELPERS)
            row = T.alloc_local((n,), "float32")
            total = T.alloc_local((1,), "float32")
            T.import_source(HELPERS)  # the same text again: printed once
            T.call_extern("handle", "reverse_row", T.access_ptr(A[bx, 0], "r", extent=n),
                          T.access_ptr(row, "w"), n)
            T.call_extern("handle", "row_sum", T.access_ptr(A[bx, 0], "r", n), T.access_ptr(total, "w"), n)
            for j in T.serial(n):
                B[bx, j] = row[j]
                C[bx, j] = T.call_extern("float32", "add_bias", A[bx, j], T.float32(1.5))
            S[bx] = total[0]

    return main


def test_imported_helpers_run_with_pointers_to_global_and_local_memory(host_compiler):
    m, n = 5, 24
    kernel = tilelang.compile(helpers_kernel(m, n), target="cpu")
    source = kernel.get_kernel_source()
    assert source.count("static inline void reverse_row(") == 1
    assert source.index("reverse_row(const float* src") < source.index("main_kernel(")
    assert "float total[1]" in source  # its address is taken: an array, not a scalar
    a = np.random.default_rng(7).standard_normal((m, n)).astype(np.float32)
    b, c, s = np.full_like(a, np.nan), np.full_like(a, np.nan), np.full(m, np.nan, np.float32)
    kernel(a, b, c, s)
    np.testing.assert_array_equal(b, a[:, ::-1])
    np.testing.assert_array_equal(c, a + np.float32(1.5))
    np.testing.assert_allclose(s, a.astype(np.float64).sum(1), rtol=1e-5)


def biased(bias_source):
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            T.import_source(bias_source)
            for i in T.serial(16):
                B[i] = T.call_extern("float32", "bias", A[i])

    return main


def test_the_imported_text_is_part_of_the_cache_key(host_compiler):
    one = tilelang.compile(biased("static inline float bias(float x) { return x + 1.0f; }"), target="cpu")
    two = tilelang.compile(biased("static inline float bias(float x) { return x + 2.0f; }"), target="cpu")
    a = np.arange(16, dtype=np.float32)
    b1, b2 = np.zeros_like(a), np.zeros_like(a)
    one(a, b1)
    two(a, b2)
    np.testing.assert_array_equal(b1, a + 1)
    np.testing.assert_array_equal(b2, a + 2)


def dot_kernel(m, k):
    @T.prim_func
    def main(A: T.Tensor((m, k), "int8"), B: T.Tensor((k,), "int8"), C: T.Tensor((m,), "int32")):
        with T.Kernel(m, threads=1) as bx:
            acc = T.alloc_local((1,), "int32")
            acc[0] = 7
            for q in T.serial(k // 4):
                T.dp4a(A[bx, q * 4], B[q * 4], acc[0])
            C[bx] = acc[0]

    return main


def test_dp4a_portable_form_matches_numpy(host_compiler):
    m, k = 6, 64
    kernel = tilelang.compile(dot_kernel(m, k), target="cpu")
    assert "tl_dp4a(&A[" in kernel.get_kernel_source()
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k,), dtype=np.int8)
    a[0, :] = -128  # the extreme products
    b[:] = np.where(np.arange(k) % 2 == 0, -128, 127).astype(np.int8)
    c = np.zeros(m, np.int32)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64) + 7)


def test_thread_binding_names_the_launched_index(host_compiler):
    @T.prim_func
    def main(A: T.Tensor((4, 8), "int32")):
        with T.Kernel(1, threads=(8, 4)) as bx:
            kr = T.thread_binding(0, 8, thread="threadIdx.x")
            ni = T.thread_binding(0, 4, thread="threadIdx.y")
            A[ni, kr] = ni * 100 + kr

    kernel = tilelang.compile(main, target="cpu")
    a = np.full((4, 8), -1, np.int32)
    kernel(a)
    np.testing.assert_array_equal(a, np.arange(4)[:, None] * 100 + np.arange(8)[None, :])
