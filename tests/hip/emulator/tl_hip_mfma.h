// Host emulation of the register-array MFMA wrappers of tilelang_hip/include/tl_hip_mfma.h
// (tests only). The 64 threads of a wave meet twice per instruction: once to publish their
// fragments, once after every lane has computed its D elements. The lane layout here is AMD's
// documented one (Matrix Instruction Calculator), written independently of tilelang_hip:
// A[m][k] in lane m + 16 * (k / E), element k % E; B[k][n] in lane n + 16 * (k / E),
// element k % E; D[m][n] in lane n + 16 * (m / 4), element m % 4; E = K / 4.
#pragma once

#include "tl_hip_common.h"

template <int K, typename In, typename Acc>
inline void tl_emu_mfma_16x16(Acc* d, const In* a, const In* b, const Acc* c) {
  constexpr int E = K / 4;
  tl_emu_wave& wave = tl_emu_current.waves[tl_emu_flat_thread / 64];
  const int lane = tl_emu_flat_thread % 64;
  for (int i = 0; i < E; ++i) {
    wave.a[lane][i] = tl_to_float(a[i]);
    wave.b[lane][i] = tl_to_float(b[i]);
  }
  for (int i = 0; i < 4; ++i) wave.c[lane][i] = static_cast<double>(c[i]);
  wave.sync->arrive_and_wait();
  double out[4];
  const int n = lane % 16;
  for (int i = 0; i < 4; ++i) {
    const int m = 4 * (lane / 16) + i;  // D[m][n] is element m % 4 == i of this lane
    double sum = wave.c[n + 16 * (m / 4)][m % 4];
    for (int k = 0; k < K; ++k) sum += wave.a[m + 16 * (k / E)][k % E] * wave.b[n + 16 * (k / E)][k % E];
    out[i] = sum;
  }
  wave.sync->arrive_and_wait();
  for (int i = 0; i < 4; ++i) d[i] = static_cast<Acc>(out[i]);
}

inline void tl_mfma_16x16x16_f16(float* d, const half_t* a, const half_t* b, const float* c) {
  tl_emu_mfma_16x16<16>(d, a, b, c);
}
inline void tl_mfma_16x16x16_bf16(float* d, const bfloat16_t* a, const bfloat16_t* b, const float* c) {
  tl_emu_mfma_16x16<16>(d, a, b, c);
}
inline void tl_mfma_16x16x16_i8(int* d, const int8_t* a, const int8_t* b, const int* c) {
  tl_emu_mfma_16x16<16>(d, a, b, c);
}
inline void tl_mfma_16x16x32_i8(int* d, const int8_t* a, const int8_t* b, const int* c) {
  tl_emu_mfma_16x16<32>(d, a, b, c);
}
inline void tl_mfma_16x16x32_fp8(float* d, const fp8_e4m3fnuz_t* a, const fp8_e4m3fnuz_t* b, const float* c) {
  tl_emu_mfma_16x16<32>(d, a, b, c);
}
inline void tl_mfma_16x16x32_bf8(float* d, const fp8_e5m2fnuz_t* a, const fp8_e5m2fnuz_t* b, const float* c) {
  tl_emu_mfma_16x16<32>(d, a, b, c);
}
