// Asynchronous copies of generated MUSA kernels: global -> shared through the LDLMS path
// (`__musa_memcpy_g2s`, every arch here). Included when a kernel calls a tl_musa_g2s* helper.
#pragma once

#include "tl_musa_common.h"

#define TL_MUSA_SHARED __attribute__((address_space(3)))
#define TL_MUSA_GLOBAL __attribute__((address_space(1)))

// Start copying `Bytes` bytes (16: one vector) from global to shared memory; the bytes are in
// place after tl_musa_g2s_wait() on this thread (then a block barrier publishes them).
template <int Bytes>
TL_DEVICE void tl_musa_g2s(void* shared_dst, const void* global_src) {
  __musa_memcpy_g2s((void TL_MUSA_SHARED*)shared_dst, (void TL_MUSA_GLOBAL*)global_src, Bytes, 0);
}

// The same, or zeros when `valid` is false (a vector past the tensor's edge reads nothing).
template <int Bytes>
TL_DEVICE void tl_musa_g2s_zfill(void* shared_dst, const void* global_src, bool valid) {
  if (valid) {
    tl_musa_g2s<Bytes>(shared_dst, global_src);
  } else {
    uint32_t* words = (uint32_t*)shared_dst;
#pragma unroll
    for (int i = 0; i < Bytes / 4; ++i) words[i] = 0u;
  }
}

// Wait until every copy this thread started has landed.
TL_DEVICE void tl_musa_g2s_wait() { __musa_memcpy_g2s_wait(); }
