// TME (mp_31, "Pinghu"): bulk tensor copies global -> shared that complete on an ASYNC barrier.
// Included when a kernel calls a tl_musa_tme_* helper. See lower_tme.py for the facts (and
// their public sources) this is built on.
//
//   MUtensorDescriptor   the tensor's descriptor (address, dims, strides; no box), built on the
//                        host by muTensorDescriptorEncode and passed by value as a
//                        `__attribute__((grid_constant)) const` kernel parameter.
//   tl_musa_tme_load_<r>d(desc, bar, smem, c0.., d0..)
//                        the box of d0 x d1 x ... elements (d0 innermost) whose first element is
//                        at coordinates (c0 innermost, ...) of the descriptor's tensor, into
//                        `smem` row after row (d0 contiguous), unswizzled; its bytes count toward
//                        barrier `bar`'s phase (announced with tl_musa_barrier_expect).
#pragma once

#include "tl_musa_async.h"
#if !defined(TL_MUSA_SYNTAX_CHECK)
#include <musa.h>  // MUtensorDescriptor (the driver API), as the port's copy_mp31.h includes it
#endif

typedef int32_t tl_musa_v2i32 __attribute__((vector_size(8)));
typedef int32_t tl_musa_v3i32 __attribute__((vector_size(12)));
typedef int32_t tl_musa_v4i32 __attribute__((vector_size(16)));
typedef int32_t tl_musa_v5i32 __attribute__((vector_size(20)));

// The last arguments of __musa_tme_ld_tile_<r>d: swizzle granularity NONE (0), swizzle stride
// B256 (3), swizzle line B256 (1), no prefetch (0), inner and outer cache hint CACHE_NORMAL (2),
// and 0 (the port's defaults, copy_mp31.h).
#define TL_MUSA_TME_FLAGS 0, 3, 1, 0, 2, 2, 0

TL_DEVICE void TL_MUSA_SHARED* tl_musa_tme_smem(void* smem) {
  return (void TL_MUSA_SHARED*)(uint64_t)(uint32_t)__cvta_generic_to_shared(smem);
}

TL_DEVICE uint64_t tl_musa_tme_desc(const MUtensorDescriptor* desc) { return (uint64_t)desc; }

TL_DEVICE void tl_musa_tme_load_1d(const MUtensorDescriptor* desc, uint32_t bar, void* smem, int32_t c0, int32_t d0) {
  __musa_tme_ld_tile_1d(bar, tl_musa_tme_smem(smem), tl_musa_tme_desc(desc), d0, c0, TL_MUSA_TME_FLAGS);
}

TL_DEVICE void tl_musa_tme_load_2d(const MUtensorDescriptor* desc, uint32_t bar, void* smem, int32_t c0, int32_t c1,
                                   int32_t d0, int32_t d1) {
  tl_musa_v2i32 crd = {c0, c1}, dim = {d0, d1};
  __musa_tme_ld_tile_2d(bar, tl_musa_tme_smem(smem), tl_musa_tme_desc(desc), dim, crd, TL_MUSA_TME_FLAGS);
}

TL_DEVICE void tl_musa_tme_load_3d(const MUtensorDescriptor* desc, uint32_t bar, void* smem, int32_t c0, int32_t c1,
                                   int32_t c2, int32_t d0, int32_t d1, int32_t d2) {
  tl_musa_v3i32 crd = {c0, c1, c2}, dim = {d0, d1, d2};
  __musa_tme_ld_tile_3d(bar, tl_musa_tme_smem(smem), tl_musa_tme_desc(desc), dim, crd, TL_MUSA_TME_FLAGS);
}

TL_DEVICE void tl_musa_tme_load_4d(const MUtensorDescriptor* desc, uint32_t bar, void* smem, int32_t c0, int32_t c1,
                                   int32_t c2, int32_t c3, int32_t d0, int32_t d1, int32_t d2, int32_t d3) {
  tl_musa_v4i32 crd = {c0, c1, c2, c3}, dim = {d0, d1, d2, d3};
  __musa_tme_ld_tile_4d(bar, tl_musa_tme_smem(smem), tl_musa_tme_desc(desc), dim, crd, TL_MUSA_TME_FLAGS);
}

TL_DEVICE void tl_musa_tme_load_5d(const MUtensorDescriptor* desc, uint32_t bar, void* smem, int32_t c0, int32_t c1,
                                   int32_t c2, int32_t c3, int32_t c4, int32_t d0, int32_t d1, int32_t d2, int32_t d3,
                                   int32_t d4) {
  tl_musa_v5i32 crd = {c0, c1, c2, c3, c4}, dim = {d0, d1, d2, d3, d4};
  __musa_tme_ld_tile_5d(bar, tl_musa_tme_smem(smem), tl_musa_tme_desc(desc), dim, crd, TL_MUSA_TME_FLAGS);
}

#undef TL_MUSA_TME_FLAGS
