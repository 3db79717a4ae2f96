// The fmma instructions of mp_22 ("Quyuan"): one 32 x 32 x 16 multiply-accumulate per 128-thread
// warp. Included when a kernel calls a tl_musa_(b)fmma helper. See lower_fmma.py for the facts
// (and their public sources) this is built on.
#pragma once

#include "tl_musa_common.h"

// acc[0..8) += A * B for one 32 x 32 tile, K = 16: `a` and `b` hold this lane's 4 operand
// values each (two 32-bit registers), in MUTLASS's MP22 fragment layouts; `Layout` 0 = "TT",
// 1 = "TN".
template <int Layout>
TL_DEVICE void tl_musa_fmma_m32n32k16(float* acc, const tl_half_t* a, const tl_half_t* b) {
  int32_t* d = reinterpret_cast<int32_t*>(acc);
  __musa_fmma_m32n32k16_mma(d, reinterpret_cast<const int32_t*>(a), reinterpret_cast<const int32_t*>(b), d,
                            0, 0, 0, 0, 1, Layout);
}

template <int Layout>
TL_DEVICE void tl_musa_bfmma_m32n32k16(float* acc, const tl_bfloat16_t* a, const tl_bfloat16_t* b) {
  int32_t* d = reinterpret_cast<int32_t*>(acc);
  __musa_bfmma_m32n32k16_mma(d, reinterpret_cast<const int32_t*>(a), reinterpret_cast<const int32_t*>(b), d,
                             0, 0, 0, 0, 1, Layout);
}
