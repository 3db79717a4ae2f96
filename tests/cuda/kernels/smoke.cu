// Hand-written kernels that exercise the backend's headers and runtime without the compiler:
//   tl_smoke_axpby   every scalar kind the runtime packs (f32, f64, i64, i32) and a masked tail
//
// Symbolic sizes (n; M, N, K) come last, the order tilelang_core's Kernel appends them in.
//   tl_smoke_gemm    a warp tile of C = A @ B in fp16 -> fp32 through cp.async (zero-filled
//                    tails), ldmatrix (+ .trans) and mma.sync m16n8k16, in dynamic shared memory
//   tl_smoke_fault   an illegal address or a failed device assert, reported on synchronize
#include "tl_cuda_common.h"
#include "tl_cuda_mma.h"

// out[i] = alpha * a[i] + beta * b[i] + offset, for i < n.
extern "C" __global__ void tl_smoke_axpby(const float* __restrict__ a, const float* __restrict__ b,
                                          float* __restrict__ out, float alpha, double beta, int64_t offset,
                                          int32_t n) {
  int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = alpha * a[i] + static_cast<float>(beta * b[i] + static_cast<double>(offset));
  }
}

// One warp per 16x16 tile of C (grid = (ceildiv(N, 16), ceildiv(M, 16)), block = 32).
// A is M x K row-major fp16, B is K x N row-major fp16, C is M x N row-major fp32.
// K, N must be multiples of 8 (16-byte rows of 8 halves); M, N, K need not be multiples of 16.
extern "C" __global__ void tl_smoke_gemm(const half_t* __restrict__ A, const half_t* __restrict__ B,
                                         float* __restrict__ C, int32_t M, int32_t N, int32_t K) {
  extern __shared__ __align__(16) unsigned char smem[];
  half_t* As = reinterpret_cast<half_t*>(smem);  // 16 x 16, row-major
  half_t* Bs = As + 16 * 16;                     // 16 x 16, row-major (k, n)

  const int lane = threadIdx.x;
  const int row0 = blockIdx.y * 16;
  const int col0 = blockIdx.x * 16;
  float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};

  for (int k0 = 0; k0 < K; k0 += 16) {
    // 32 lanes x 16 bytes = one 16x16 half tile: lane -> (row lane/2, halves 8*(lane%2) ..).
    const int r = lane / 2;
    const int c = (lane % 2) * 8;
    const bool a_ok = row0 + r < M && k0 + c < K;
    const bool b_ok = k0 + r < K && col0 + c < N;
    tl::cp_async_cg16_zfill(As + r * 16 + c, a_ok ? A + (size_t)(row0 + r) * K + k0 + c : A, a_ok);
    tl::cp_async_cg16_zfill(Bs + r * 16 + c, b_ok ? B + (size_t)(k0 + r) * N + col0 + c : B, b_ok);
    tl::cp_async_commit();
    tl::cp_async_wait<0>();
    __syncwarp();

    // A fragment: four 8x8 matrices (rows 0-7/8-15 x cols 0-7/8-15), lane gives row lane%16
    // of column half lane/16.
    uint32_t a_frag[4];
    tl::ldmatrix_x4(a_frag, As + (lane % 16) * 16 + (lane / 16) * 8);
    // B fragments for n 0-7 and 8-15: .trans turns row-major (k, n) into the col layout.
    // Matrices: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15).
    uint32_t b_frag[4];
    tl::ldmatrix_x4_trans(b_frag, Bs + (lane % 16) * 16 + (lane / 16) * 8);
    const uint32_t b0[2] = {b_frag[0], b_frag[1]};
    const uint32_t b1[2] = {b_frag[2], b_frag[3]};
    tl::mma_m16n8k16_f16_f32(acc[0], a_frag, b0, acc[0]);
    tl::mma_m16n8k16_f16_f32(acc[1], a_frag, b1, acc[1]);
    __syncwarp();
  }

  // C fragment: lane holds (row lane/4, cols 2*(lane%4) + {0,1}) and the same 8 rows down.
  for (int half_n = 0; half_n < 2; ++half_n) {
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + lane / 4 + (i / 2) * 8;
      const int col = col0 + half_n * 8 + 2 * (lane % 4) + (i % 2);
      if (row < M && col < N) {
        C[(size_t)row * N + col] = acc[half_n][i];
      }
    }
  }
}

// A store to `bad_address` when it is not 0 (an illegal address), then a device assert that
// fails when `assert_value` is not 0: both must surface as errors on the next synchronize.
extern "C" __global__ void tl_smoke_fault(float* out, int64_t bad_address, int32_t assert_value) {
  if (bad_address != 0 && threadIdx.x == 0) {
    *reinterpret_cast<float*>(static_cast<uintptr_t>(bad_address)) = 1.0f;
  }
  tl_device_assert(assert_value == 0, "assert_value == 0", "smoke.cu:tl_smoke_fault");
  out[threadIdx.x] = 0.0f;
}
