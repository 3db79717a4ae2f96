// The TCE of mp_31 ("Pinghu"): SQMMA matrix multiply-accumulate, issued by a warp squad (128
// threads) with both operands in shared memory. Included when a kernel calls a tl_musa_tce*
// helper. See lower_tce.py for the facts (and their public sources) this is built on.
#pragma once

#include "tl_musa_common.h"

// The 32-bit SQMMA descriptor of an operand tile at `shared_ptr`: its shared-memory byte
// address (bits 0..17), the leading-stride code (bits 18..20: 8 B -> 1 ... 256 B -> 6) and no
// swizzle (bits 21..22 = 0).
TL_DEVICE int32_t tl_musa_tce_desc(const void* shared_ptr, int leading_stride_code) {
  uint32_t address = (uint32_t)__cvta_generic_to_shared(shared_ptr);
  return (int32_t)((address & 0x3ffffu) | ((uint32_t)leading_stride_code << 18));
}

// acc[0 .. M*N/128) += A * B for one M x N tile, K = `Kstep`; `MmaType` F16F16 = 2 or
// BF16BF16 = 3; `MajorA`/`MajorB`: K = 0, MN = 1. The accumulator registers are the float
// values of the SQMMA accumulator layout, passed as the int32 registers the intrinsic takes.
#define TL_MUSA_TCE_SHAPE(M, N)                                                                    \
  template <int MmaType, int MajorA, int MajorB, int Kstep>                                         \
  TL_DEVICE void tl_musa_tce_m##M##n##N(float* acc, int32_t desc_a, int32_t desc_b) {               \
    int32_t* d = reinterpret_cast<int32_t*>(acc);                                                  \
    __musa_sqmma_m##M##n##N##_mma(d, &desc_a, &desc_b, d, MajorA, 1 - MajorB, 0, 0, 0, 0, Kstep, MmaType); \
  }
TL_MUSA_TCE_SHAPE(64, 128)
TL_MUSA_TCE_SHAPE(64, 64)
TL_MUSA_TCE_SHAPE(64, 32)
TL_MUSA_TCE_SHAPE(64, 16)
TL_MUSA_TCE_SHAPE(32, 128)
TL_MUSA_TCE_SHAPE(32, 64)
TL_MUSA_TCE_SHAPE(32, 32)
TL_MUSA_TCE_SHAPE(16, 64)
#undef TL_MUSA_TCE_SHAPE

// Close the group of SQMMAs issued so far, and wait until at most `Pending` groups are in
// flight (a constant: mutlass passes it as a template argument, `warpsquad_wait<N>`).
TL_DEVICE void tl_musa_tce_commit() { __musa_tce_commit_group(); }
template <int Pending> TL_DEVICE void tl_musa_tce_wait() { __musa_tce_wait_group(Pending); }
