// Touches every helper of tl_cuda_common.h and tl_cuda_mma.h once, so a compile of this file
// proves the headers build for an arch. Never launched.
#include "tl_cuda_common.h"
#include "tl_cuda_mma.h"

extern "C" __global__ void tl_headers_atomics(float* f, double* d, half_t* h, bfloat16_t* b, int32_t* i,
                                              uint32_t* u, int64_t* l) {
  tl_atomic_add(f, 1.0f);
  tl_atomic_max(f + 1, 2.0f);
  tl_atomic_min(f + 2, 3.0f);
  tl_atomic_add(d, 1.0);
  tl_atomic_max(d + 1, 2.0);
  tl_atomic_min(d + 2, 3.0);
  tl_atomic_add(h, __float2half(1.0f));
  tl_atomic_max(h + 1, __float2half(2.0f));
  tl_atomic_min(h + 2, __float2half(3.0f));
  tl_atomic_add(b, __float2bfloat16(1.0f));
  tl_atomic_max(b + 1, __float2bfloat16(2.0f));
  tl_atomic_min(b + 2, __float2bfloat16(3.0f));
  tl_atomic_add(i, 1);
  tl_atomic_max(i + 1, 2);
  tl_atomic_min(i + 2, 3);
  tl_atomic_add(u, 1u);
  tl_atomic_max(u + 1, 2u);
  tl_atomic_min(u + 2, 3u);
  tl_atomic_add(l, (int64_t)1);
  tl_atomic_max(l + 1, (int64_t)2);
  tl_atomic_min(l + 2, (int64_t)3);
}

extern "C" __global__ void tl_headers_math(int32_t* out, float* fout, int64_t* lout, int32_t a, int32_t b) {
  out[0] = tl::ceildiv(a, b);
  out[1] = tl::floordiv(a, b);
  out[2] = tl::floormod(a, b);
  out[3] = tl::min(a, b) + tl::max(a, b);
  lout[0] = tl::floordiv((int64_t)a, (int64_t)b) + tl::floormod((int64_t)a, (int64_t)b);
  fout[0] = tl::floordiv((float)a, (float)b) + tl::floormod((float)a, (float)b);
  tl_device_assert(b != 0, "b != 0", "headers.cu:math");
#if defined(TL_HAS_FP8)
  fp8_e4_t x(fout[1]);
  fp8_e5_t y(fout[2]);
  fout[3] = static_cast<float>(x) + static_cast<float>(y);
#endif
}

extern "C" __global__ void tl_headers_mma(const half_t* g, const int8_t* g8, float* out, int32_t* iout, int32_t n) {
  __shared__ __align__(16) half_t s[16 * 16 * 2];
  __shared__ __align__(16) int8_t s8[16 * 32];
  const int lane = threadIdx.x % 32;
  tl::cp_async_cg16(s + lane * 8, g + lane * 8);
  tl::cp_async_cg16_zfill(s + 256 + lane * 8, g + lane * 8, lane < n);
  tl::cp_async_ca<4>(s8 + lane * 4, g8 + lane * 4);
  tl::cp_async_ca<8>(s8 + 128 + lane * 4, g8 + lane * 8);
  tl::cp_async_ca<16>(s8 + 256 + (lane % 16) * 16, g8 + lane * 16);
  tl::cp_async_ca_zfill<4>(s8 + lane * 4, g8 + lane * 4, lane < n);
  tl::cp_async_ca_zfill<8>(s8 + 128 + lane * 4, g8 + lane * 8, lane < n);
  tl::cp_async_ca_zfill<16>(s8 + 256 + (lane % 16) * 16, g8 + lane * 16, lane < n);
  tl::cp_async_commit();
  tl::cp_async_wait<1>();
  tl::cp_async_wait_all();
  __syncthreads();

  uint32_t a[4], b[4], b1[1], b2[2], b1t[1], b2t[2];
  tl::ldmatrix_x4(a, s + (lane % 16) * 16 + (lane / 16) * 8);
  tl::ldmatrix_x4_trans(b, s + 256 + (lane % 16) * 16 + (lane / 16) * 8);
  tl::ldmatrix_x1(b1, s + (lane % 8) * 16);
  tl::ldmatrix_x2(b2, s + (lane % 16) * 16);
  tl::ldmatrix_x1_trans(b1t, s + (lane % 8) * 16);
  tl::ldmatrix_x2_trans(b2t, s + (lane % 16) * 16);

  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  tl::mma_m16n8k16_f16_f32(acc, a, b, acc);
  tl::mma_m16n8k16_bf16_f32(acc, a, b + 2, acc);
  uint32_t hacc[2] = {b1[0], b2[0]};
  tl::mma_m16n8k16_f16_f16(hacc, a, b2t, hacc);

  const uint32_t* a8 = reinterpret_cast<const uint32_t*>(s8) + lane;
  const uint32_t* b8 = reinterpret_cast<const uint32_t*>(s8 + 256) + lane;
  const uint32_t ia[4] = {a8[0], a8[32], a8[64], a8[96]};
  const uint32_t ib[2] = {b8[0], b8[32] + b1t[0]};
  int32_t iacc[4] = {0, 0, 0, 0};
  tl::mma_m16n8k32_s8_s32(iacc, ia, ib, iacc);

  for (int i = 0; i < 4; ++i) {
    out[lane * 4 + i] = acc[i] + __half2float(reinterpret_cast<half_t*>(hacc)[i % 2]);
    iout[lane * 4 + i] = iacc[i];
  }
}
