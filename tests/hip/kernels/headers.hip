// Every wrapper of tl_hip_mfma.h and every helper of tl_hip_common.h, in one kernel.
#include "tl_hip_mfma.h"

extern "C" __global__ void headers(const tl_halfx4* a, const tl_bf16x4* b, tl_floatx4* c,
                                   tl_floatx16* d, tl_intx4* e, float* f, int* g,
                                   bfloat16_t* h, half_t* hh) {
  const int l = threadIdx.x;
  static_assert(tl_wavefront_size == 64, "CDNA runs wave64");
  c[l] = tl_mfma_f32_16x16x16_f16(a[l], a[l], c[l]);
  d[l] = tl_mfma_f32_32x32x8_f16(a[l], a[l], d[l]);
  c[l] = tl_mfma_f32_16x16x16_bf16(b[l], b[l], c[l]);
  d[l] = tl_mfma_f32_32x32x8_bf16(b[l], b[l], d[l]);
#if TL_MFMA_I8_K == 32
  e[l] = tl_mfma_i32_16x16x32_i8((long)g[l], (long)g[l + 1], e[l]);
#else
  e[l] = tl_mfma_i32_16x16x16_i8(g[l], g[l + 1], e[l]);
#endif
  tl_atomic_add(f, 1.0f);
  tl_atomic_max(f + 1, f[l]);
  tl_atomic_min(f + 2, f[l]);
  tl_atomic_add(g, 1);
  tl_atomic_max(g + 1, g[l]);
  tl_atomic_min(g + 2, g[l]);
  g[l] = tl_floordiv(g[l], -3) + tl_floormod(g[l], 7) + tl_ceildiv(g[l], 4);
  f[l] = tl_floormod(f[l], 2.0f) + tl_floordiv(f[l], 3.0f);
  h[l] = tl_from_float<bfloat16_t>(tl_to_float(h[l]) * 2.0f);
  hh[l] = tl_from_float<half_t>(tl_to_float(hh[l]) + 1.0f);
  TL_DEVICE_ASSERT(g[l] >= 0, "g must be non-negative");
}
