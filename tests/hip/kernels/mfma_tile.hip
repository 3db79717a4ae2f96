// One wavefront computes C (16x16, f32) = A (16x16, f16, row-major) * B (16x16, f16,
// row-major) with a single 16x16x16 MFMA. Launch with one block of 64 threads.
#include "tl_hip_mfma.h"

extern "C" __global__ void __launch_bounds__(64) mfma_tile(const half_t* __restrict__ A,
                                                           const half_t* __restrict__ B,
                                                           float* __restrict__ C) {
  const int lane = threadIdx.x;
  const int row_or_col = lane % 16;
  const int k0 = 4 * (lane / 16);
  tl_halfx4 a, b;
  for (int i = 0; i < 4; ++i) {
    a[i] = static_cast<_Float16>(tl_to_float(A[row_or_col * 16 + k0 + i]));
    b[i] = static_cast<_Float16>(tl_to_float(B[(k0 + i) * 16 + row_or_col]));
  }
  tl_floatx4 c = {0.0f, 0.0f, 0.0f, 0.0f};
  c = tl_mfma_f32_16x16x16_f16(a, b, c);
  for (int i = 0; i < 4; ++i) C[(k0 + i) * 16 + row_or_col] = c[i];
}
