"""TileLang's dequantizing GEMV (`dequantize_gemm/example_dequant_gemv_fp16xint4.py`), written
the way that example writes it: per-thread code over `T.thread_binding` indices, a CUDA helper
brought in with `T.import_source` and called through `T.call_extern` with `T.access_ptr`
pointers into local arrays, `T.dp4a` for int8, and `T.tvm_thread_allreduce` across a warp.

`gemv(...)` builds the kernel; `reference(...)` is its float64 NumPy reference. The weights `B`
hold two unsigned 4-bit values per int8 byte. With `decode="lop3"` the helper turns each 32-bit
word of 8 nibbles into 8 half values with `lop3.b32` and `sub.f16x2` (the FP16 magic-number
trick TileLang's lop3 helpers use); it reads nibble `i` into output `2i` and nibble `i + 4`
into output `2i + 1`, so `reference` decodes the same way. With `decode="tir"` the nibbles are
unpacked by an integer expression, in order.
"""
from __future__ import annotations

import numpy as np

from tilelang_core import language as T

__test__ = False

# 8 unsigned nibbles of one 32-bit word -> 8 half values: h[i] = (0x6400 | nibble) - 0x6400 in
# each half of a half2, i.e. the nibble's value exactly (1024 + n - 1024).
LOP3_DECODER = r"""
template <typename T1, typename T2>
__device__ void decode_u4x8_to_f16(T1* packed, T2* out) {
  uint* h = reinterpret_cast<uint*>(out);
  uint const q = *reinterpret_cast<uint*>(packed);
  static constexpr uint LUT = (0xf0 & 0xcc) | 0xaa;  // (a & b) | c
  static constexpr uint MASK = 0x000f000f;
  static constexpr uint MAGIC = 0x64006400;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    asm volatile("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(h[i]) : "r"(q >> (4 * i)), "n"(MASK), "n"(MAGIC), "n"(LUT));
    asm volatile("sub.f16x2 %0, %1, %2;\n" : "=r"(h[i]) : "r"(h[i]), "r"(MAGIC));
  }
}
"""


def gemv(N: int, K: int, in_dtype: str = "float16", accum_dtype: str = "float32", decode: str = "lop3",
         n_partition: int = 4, reduce_thread: int = 32):
    """C[0, n] = sum_k A[0, k] * dequant(B)[n, k]: `in_dtype` "float16" (then C is float16) or
    "int8" (then `T.dp4a`, C is int32)."""
    use_dp4a = in_dtype == "int8"
    out_dtype = "int32" if use_dp4a else "float16"
    accum_dtype = "int32" if use_dp4a else accum_dtype
    micro_k = 128 // (8 if use_dp4a else 16)  # one 16-byte load of A per thread
    micro_k_packed = micro_k // 2
    block_K = reduce_thread * micro_k
    assert K % block_K == 0 and N % n_partition == 0
    import_source = LOP3_DECODER if decode == "lop3" else None

    @T.prim_func
    def main(A: T.Tensor((1, K), in_dtype), B: T.Tensor((N, K // 2), "int8"), C: T.Tensor((1, N), out_dtype)):
        with T.Kernel(N // n_partition, 1, threads=(reduce_thread, n_partition)) as (bx, by):
            A_local = T.alloc_local((micro_k,), in_dtype)
            B_quant_local = T.alloc_local((micro_k_packed,), "int8")
            B_dequantize_local = T.alloc_local((micro_k,), in_dtype)
            accum_res = T.alloc_local((1,), accum_dtype)
            reduced_accum_res = T.alloc_local((1,), accum_dtype)
            kr = T.thread_binding(0, reduce_thread, thread="threadIdx.x")
            ni = T.thread_binding(0, n_partition, thread="threadIdx.y")
            T.import_source(import_source)
            T.clear(accum_res)
            for ko in T.serial(K // block_K):
                for v in T.vectorized(micro_k):
                    A_local[v] = A[by, ko * block_K + kr * micro_k + v]
                for v in T.vectorized(micro_k_packed):
                    B_quant_local[v] = B[bx * n_partition + ni, ko * (reduce_thread * micro_k_packed) + kr * micro_k_packed + v]
                if decode == "lop3":
                    for w in T.serial(micro_k // 8):
                        T.call_extern("handle", "decode_u4x8_to_f16", T.access_ptr(B_quant_local[w * 4], "r"),
                                      T.access_ptr(B_dequantize_local[w * 8], "w"))
                else:
                    for ki in T.serial(micro_k):
                        B_dequantize_local[ki] = T.Cast(in_dtype, (T.Cast("int32", B_quant_local[ki // 2]) >> (ki % 2 * 4)) & 15)
                if use_dp4a:
                    for ki in T.serial(micro_k // 4):
                        T.dp4a(A_local[ki * 4], B_dequantize_local[ki * 4], accum_res[0])
                else:
                    for ki in T.serial(micro_k):
                        accum_res[0] += T.Cast(accum_dtype, A_local[ki]) * T.Cast(accum_dtype, B_dequantize_local[ki])
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, accum_dtype)]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), accum_res[0], True, reduced_accum_res[0], kr,
                                                  dtype="handle"))
            if kr == 0:
                C[by, bx * n_partition + ni] = T.Cast(out_dtype, reduced_accum_res[0])

    return main


def unpack(B: np.ndarray, decode: str = "lop3") -> np.ndarray:
    """The 4-bit values the kernel decodes from `B` (N, K // 2) int8, as (N, K) int64."""
    nibbles = np.stack([B.view(np.uint8) & 0x0F, B.view(np.uint8) >> 4], axis=-1).reshape(B.shape[0], -1)
    if decode == "tir":
        return nibbles.astype(np.int64)
    # per 32-bit word (8 nibbles, little-endian): outputs 2i and 2i + 1 are nibbles i and i + 4
    words = nibbles.reshape(B.shape[0], -1, 8)
    order = [0, 4, 1, 5, 2, 6, 3, 7]
    return words[:, :, order].reshape(B.shape[0], -1).astype(np.int64)


def reference(A: np.ndarray, B: np.ndarray, decode: str = "lop3") -> np.ndarray:
    """C (1, N) in float64."""
    return A.astype(np.float64) @ unpack(B, decode).T.astype(np.float64)
