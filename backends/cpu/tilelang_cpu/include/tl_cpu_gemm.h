/* A register-blocked fp32 GEMM micro-kernel for block-local tiles of the CPU backend.

     C(M x N) += op(A)(M x K) * op(B)(K x N)        all row-major, float32

   Variants (no templates: one C function per transpose pair, `ld*` = row stride in elements):
     tl_cpu_gemm_f32_nn(M, N, K, A, lda, B, ldb, C, ldc)   A is M x K, B is K x N
     tl_cpu_gemm_f32_nt(...)                               A is M x K, B is N x K
     tl_cpu_gemm_f32_tn(...)                               A is K x M, B is K x N
     tl_cpu_gemm_f32_tt(...)                               A is K x M, B is N x K
     tl_cpu_gemm_f32(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc)   dispatches

   The micro-tile is MR rows x (2 vectors) columns held in registers: 8 x 32 with AVX-512,
   6 x 16 with AVX/AVX2, 6 x 8 elsewhere (SSE, NEON, or plain C through GCC/clang vector
   extensions). B is read as contiguous vectors (packed first when transposed); A is
   broadcast one element at a time. Edges fall back to plain loops the compiler vectorizes. */
#ifndef TL_CPU_GEMM_H_
#define TL_CPU_GEMM_H_

#include <stddef.h>

#if defined(__AVX512F__)
#define TL_GEMM_VW 16
#define TL_GEMM_MR 8
#elif defined(__AVX__)
#define TL_GEMM_VW 8
#define TL_GEMM_MR 6
#else
#define TL_GEMM_VW 4
#define TL_GEMM_MR 6
#endif
#define TL_GEMM_NR (2 * TL_GEMM_VW)
#define TL_GEMM_KC 256 /* k-chunk of a packed B panel: 256 x NR floats (32 KiB with AVX-512) */

typedef float tl_gemm_vec __attribute__((vector_size(TL_GEMM_VW * sizeof(float)), aligned(4), may_alias));

#define TL_GEMM_INLINE static inline __attribute__((always_inline, unused))

/* C[MR x NR] += A[MR x K] * B[K x NR]; A(i, k) = A[i * rsa + k * csa]; B rows `ldb` apart. */
TL_GEMM_INLINE void tl_gemm_f32_micro(ptrdiff_t K, const float* restrict A, ptrdiff_t rsa,
                                      ptrdiff_t csa, const float* restrict B, ptrdiff_t ldb,
                                      float* restrict C, ptrdiff_t ldc) {
  tl_gemm_vec c0[TL_GEMM_MR], c1[TL_GEMM_MR];
#pragma GCC unroll 16
  for (int r = 0; r < TL_GEMM_MR; ++r) {
    c0[r] = *(const tl_gemm_vec*)(C + r * ldc);
    c1[r] = *(const tl_gemm_vec*)(C + r * ldc + TL_GEMM_VW);
  }
  for (ptrdiff_t k = 0; k < K; ++k) {
    tl_gemm_vec b0 = *(const tl_gemm_vec*)(B + k * ldb);
    tl_gemm_vec b1 = *(const tl_gemm_vec*)(B + k * ldb + TL_GEMM_VW);
#pragma GCC unroll 16
    for (int r = 0; r < TL_GEMM_MR; ++r) {
      float a = A[r * rsa + k * csa];
      c0[r] += a * b0;
      c1[r] += a * b1;
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < TL_GEMM_MR; ++r) {
    *(tl_gemm_vec*)(C + r * ldc) = c0[r];
    *(tl_gemm_vec*)(C + r * ldc + TL_GEMM_VW) = c1[r];
  }
}

/* The same product on an m x n corner (m <= MR or n <= NR), in plain loops. */
TL_GEMM_INLINE void tl_gemm_f32_edge(ptrdiff_t m, ptrdiff_t n, ptrdiff_t K, const float* A,
                                     ptrdiff_t rsa, ptrdiff_t csa, const float* B, ptrdiff_t ldb,
                                     float* C, ptrdiff_t ldc) {
  for (ptrdiff_t i = 0; i < m; ++i) {
    for (ptrdiff_t k = 0; k < K; ++k) {
      float a = A[i * rsa + k * csa];
      for (ptrdiff_t j = 0; j < n; ++j) C[i * ldc + j] += a * B[k * ldb + j];
    }
  }
}

/* C += A * B where B's rows are contiguous; A has strides (rsa, csa). */
TL_GEMM_INLINE void tl_gemm_f32_rowb(int M, int N, int K, const float* A, ptrdiff_t rsa,
                                     ptrdiff_t csa, const float* B, ptrdiff_t ldb, float* C,
                                     ptrdiff_t ldc) {
  int n_full = N - N % TL_GEMM_NR, m_full = M - M % TL_GEMM_MR;
  for (int j = 0; j < n_full; j += TL_GEMM_NR) {
    for (int i = 0; i < m_full; i += TL_GEMM_MR)
      tl_gemm_f32_micro(K, A + i * rsa, rsa, csa, B + j, ldb, C + (ptrdiff_t)i * ldc + j, ldc);
    if (m_full < M)
      tl_gemm_f32_edge(M - m_full, TL_GEMM_NR, K, A + m_full * rsa, rsa, csa, B + j, ldb,
                       C + (ptrdiff_t)m_full * ldc + j, ldc);
  }
  if (n_full < N)
    tl_gemm_f32_edge(M, N - n_full, K, A, rsa, csa, B + n_full, ldb, C + n_full, ldc);
}

/* C += A * B^T for B stored N x K: B is packed panel by panel into K x NR blocks. */
TL_GEMM_INLINE void tl_gemm_f32_packb(int M, int N, int K, const float* A, ptrdiff_t rsa,
                                      ptrdiff_t csa, const float* B, ptrdiff_t ldb, float* C,
                                      ptrdiff_t ldc) {
  float panel[TL_GEMM_KC * TL_GEMM_NR] __attribute__((aligned(64)));
  for (int j = 0; j < N; j += TL_GEMM_NR) {
    int n = N - j < TL_GEMM_NR ? N - j : TL_GEMM_NR;
    for (int k0 = 0; k0 < K; k0 += TL_GEMM_KC) {
      int kc = K - k0 < TL_GEMM_KC ? K - k0 : TL_GEMM_KC;
      for (int jj = 0; jj < n; ++jj)
        for (int k = 0; k < kc; ++k) panel[k * TL_GEMM_NR + jj] = B[(ptrdiff_t)(j + jj) * ldb + k0 + k];
      const float* a = A + k0 * csa;
      if (n == TL_GEMM_NR) {
        int m_full = M - M % TL_GEMM_MR;
        for (int i = 0; i < m_full; i += TL_GEMM_MR)
          tl_gemm_f32_micro(kc, a + i * rsa, rsa, csa, panel, TL_GEMM_NR, C + (ptrdiff_t)i * ldc + j, ldc);
        if (m_full < M)
          tl_gemm_f32_edge(M - m_full, n, kc, a + m_full * rsa, rsa, csa, panel, TL_GEMM_NR,
                           C + (ptrdiff_t)m_full * ldc + j, ldc);
      } else {
        tl_gemm_f32_edge(M, n, kc, a, rsa, csa, panel, TL_GEMM_NR, C + j, ldc);
      }
    }
  }
}

TL_GEMM_INLINE void tl_cpu_gemm_f32_nn(int M, int N, int K, const float* A, int lda,
                                       const float* B, int ldb, float* C, int ldc) {
  tl_gemm_f32_rowb(M, N, K, A, lda, 1, B, ldb, C, ldc);
}
TL_GEMM_INLINE void tl_cpu_gemm_f32_tn(int M, int N, int K, const float* A, int lda,
                                       const float* B, int ldb, float* C, int ldc) {
  tl_gemm_f32_rowb(M, N, K, A, 1, lda, B, ldb, C, ldc);
}
TL_GEMM_INLINE void tl_cpu_gemm_f32_nt(int M, int N, int K, const float* A, int lda,
                                       const float* B, int ldb, float* C, int ldc) {
  tl_gemm_f32_packb(M, N, K, A, lda, 1, B, ldb, C, ldc);
}
TL_GEMM_INLINE void tl_cpu_gemm_f32_tt(int M, int N, int K, const float* A, int lda,
                                       const float* B, int ldb, float* C, int ldc) {
  tl_gemm_f32_packb(M, N, K, A, 1, lda, B, ldb, C, ldc);
}
TL_GEMM_INLINE void tl_cpu_gemm_f32(int trans_a, int trans_b, int M, int N, int K, const float* A,
                                    int lda, const float* B, int ldb, float* C, int ldc) {
  if (trans_b) {
    if (trans_a) tl_cpu_gemm_f32_tt(M, N, K, A, lda, B, ldb, C, ldc);
    else tl_cpu_gemm_f32_nt(M, N, K, A, lda, B, ldb, C, ldc);
  } else {
    if (trans_a) tl_cpu_gemm_f32_tn(M, N, K, A, lda, B, ldb, C, ldc);
    else tl_cpu_gemm_f32_nn(M, N, K, A, lda, B, ldb, C, ldc);
  }
}

#endif /* TL_CPU_GEMM_H_ */
