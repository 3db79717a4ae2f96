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

// ---------------------------------------------------------------------------------------------
// ASYNC barriers (mp_31): hardware barriers named by an id 1..63 (0 is reserved). A barrier
// counts arriving warps; a phase completes when `warps` warps have arrived and every byte
// announced with tl_musa_barrier_expect has landed (TME loads name the barrier).
// ---------------------------------------------------------------------------------------------

// Set barrier `id` to expect `warps` warp arrivals per phase, starting in phase 0.
TL_DEVICE void tl_musa_barrier_init(uint32_t id, uint32_t warps) { __musa_async_init_arrival(id, warps, 0u); }

// Announce `bytes` more bytes for the current phase of barrier `id` (the TME loads that follow
// bring them; the caller's warp arrives afterwards with tl_musa_barrier_arrive).
TL_DEVICE void tl_musa_barrier_expect(uint32_t id, uint32_t bytes) { __musa_async_add_trans(id, bytes); }

// The calling warp arrives on barrier `id`.
TL_DEVICE void tl_musa_barrier_arrive(uint32_t id) { (void)__musa_async_arrive(id); }

// Wait until the phase of barrier `id` with parity `phase` has completed.
TL_DEVICE void tl_musa_barrier_wait(uint32_t id, uint32_t phase) { __musa_async_wait(id, phase); }

// The number of ASYNC barriers the kernel uses (ids 1..Count), recorded once at its start (a
// constant, as Moore Threads' port prints it).
template <int Count> TL_DEVICE void tl_musa_barrier_record() { __musa_async_bar_record(Count); }
