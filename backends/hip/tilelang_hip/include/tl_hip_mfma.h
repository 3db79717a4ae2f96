// MFMA (matrix fused multiply-add) wrappers for one wavefront of 64 lanes, gfx90a and gfx942.
//
// Each wrapper computes D = A * B + C for one tile and returns D; the operands are the lane's
// registers. Lane l of the wave holds (i: element of the lane's vector):
//
//   16x16xK (K = 16 for f16/bf16 and gfx90a int8, K = 32 for gfx942 int8; E = K / 4 elements)
//     A (16 x K, row-major view): A[l % 16][E * (l / 16) + i]
//     B (K x 16):                 B[E * (l / 16) + i][l % 16]
//     C, D (16 x 16, 4 floats):   D[4 * (l / 16) + i][l % 16]
//   32x32x8 (f16, bf16)
//     A (32 x 8):                 A[l % 32][4 * (l / 32) + i]
//     B (8 x 32):                 B[4 * (l / 32) + i][l % 32]
//     C, D (32 x 32, 16 floats):  D[8 * (i / 4) + 4 * (l / 32) + i % 4][l % 32]
//
// Source: AMD Matrix Instruction Calculator, CDNA2 (gfx90a) and CDNA3 (gfx942) ISA guides.
// The trailing 0, 0, 0 of every builtin are cbsz/abid/blgp (no broadcast, no lane swizzle).
#pragma once

#include "tl_hip_common.h"

#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define TL_HIP_GFX94X 1
#endif

typedef _Float16 tl_halfx4 __attribute__((ext_vector_type(4)));
typedef short tl_bf16x4 __attribute__((ext_vector_type(4)));  // bf16 bit patterns
typedef float tl_floatx4 __attribute__((ext_vector_type(4)));
typedef float tl_floatx16 __attribute__((ext_vector_type(16)));
typedef int tl_intx4 __attribute__((ext_vector_type(4)));

// f16 -> f32 --------------------------------------------------------------------------------

TL_DEVICE tl_floatx4 tl_mfma_f32_16x16x16_f16(tl_halfx4 a, tl_halfx4 b, tl_floatx4 c) {
  return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
}

TL_DEVICE tl_floatx16 tl_mfma_f32_32x32x8_f16(tl_halfx4 a, tl_halfx4 b, tl_floatx16 c) {
  return __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
}

// bf16 -> f32: the "_1k" forms (four bf16 per lane), present on gfx90a and gfx94x ------------

TL_DEVICE tl_floatx4 tl_mfma_f32_16x16x16_bf16(tl_bf16x4 a, tl_bf16x4 b, tl_floatx4 c) {
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
}

TL_DEVICE tl_floatx16 tl_mfma_f32_32x32x8_bf16(tl_bf16x4 a, tl_bf16x4 b, tl_floatx16 c) {
  return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, 0, 0, 0);
}

// int8 -> int32: gfx90a has 16x16x16 (4 int8 per lane in an int); gfx94x dropped it for
// 16x16x32 (8 int8 per lane in a long). TL_MFMA_I8_K says which one this arch has.

#if defined(TL_HIP_GFX94X)
#define TL_MFMA_I8_K 32
TL_DEVICE tl_intx4 tl_mfma_i32_16x16x32_i8(long a, long b, tl_intx4 c) {
  return __builtin_amdgcn_mfma_i32_16x16x32_i8(a, b, c, 0, 0, 0);
}
#else
#define TL_MFMA_I8_K 16
TL_DEVICE tl_intx4 tl_mfma_i32_16x16x16_i8(int a, int b, tl_intx4 c) {
  return __builtin_amdgcn_mfma_i32_16x16x16i8(a, b, c, 0, 0, 0);
}
#endif

// ---------------------------------------------------------------------------------------------
// Register-array forms, called by the generated code of T.gemm (tilelang_hip/lower_gemm.py).
//
// D = A * B + C for one 16x16 tile of one wavefront; `a` and `b` point at the lane's E
// consecutive elements of its A and B fragments (E = K / 4), `c` and `d` at its 4 accumulator
// elements (d may alias c). Lane l holds A[l % 16][E * (l / 16) + i], B[E * (l / 16) + i][l % 16]
// and D[4 * (l / 16) + i][l % 16]; `layout.py` says the same in Python, and
// tests/hip/test_hip_codegen.py checks it against an emulator. T.gemm passes its B fragment as
// `a` and its A fragment as `b`, so D is C transposed (see layout.py for why). The copies
// through __builtin_memcpy let the arrays live in registers (no alignment is assumed).
// ---------------------------------------------------------------------------------------------

#define TL_MFMA_REGS(NAME, ELEM, VEC, ACC, ACCVEC, BUILTIN)                                     \
  TL_DEVICE void NAME(ACC* d, const ELEM* a, const ELEM* b, const ACC* c) {                     \
    VEC va, vb;                                                                                 \
    ACCVEC vc;                                                                                  \
    __builtin_memcpy(&va, a, sizeof(va));                                                       \
    __builtin_memcpy(&vb, b, sizeof(vb));                                                       \
    __builtin_memcpy(&vc, c, sizeof(vc));                                                       \
    vc = BUILTIN(va, vb, vc, 0, 0, 0);                                                          \
    __builtin_memcpy(d, &vc, sizeof(vc));                                                       \
  }

TL_MFMA_REGS(tl_mfma_16x16x16_f16, half_t, tl_halfx4, float, tl_floatx4,
             __builtin_amdgcn_mfma_f32_16x16x16f16)
TL_MFMA_REGS(tl_mfma_16x16x16_bf16, bfloat16_t, tl_bf16x4, float, tl_floatx4,
             __builtin_amdgcn_mfma_f32_16x16x16bf16_1k)
#if defined(TL_HIP_GFX94X)
TL_MFMA_REGS(tl_mfma_16x16x32_i8, int8_t, long, int, tl_intx4, __builtin_amdgcn_mfma_i32_16x16x32_i8)
TL_MFMA_REGS(tl_mfma_16x16x32_fp8, fp8_e4m3fnuz_t, long, float, tl_floatx4,
             __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8)
TL_MFMA_REGS(tl_mfma_16x16x32_bf8, fp8_e5m2fnuz_t, long, float, tl_floatx4,
             __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8)
#else
TL_MFMA_REGS(tl_mfma_16x16x16_i8, int8_t, int, int, tl_intx4, __builtin_amdgcn_mfma_i32_16x16x16i8)
#endif
#undef TL_MFMA_REGS
