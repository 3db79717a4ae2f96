// TMA (sm_90): bulk tensor copies global -> shared that complete on an mbarrier.
//
//   tensor_map                      the 128-byte CUtensorMap, built on the host
//                                   (cuTensorMapEncodeTiled) and passed by value as a
//                                   `const __grid_constant__` kernel parameter.
//   mbarrier_expect_tx(bar, bytes)  the calling thread arrives once and raises the phase's
//                                   transaction count by `bytes` (PTX ISA 9.7.13.15.11,
//                                   mbarrier.arrive.expect_tx): the phase completes when every
//                                   expected arrival has happened and `bytes` have landed.
//   tma_load(map, smem, bar, c0..)  cp.async.bulk.tensor.Nd (PTX ISA 9.7.9.25.5.1): the box
//                                   at coordinates (c0 innermost, ...) of the map's tensor into
//                                   `smem`, in the map's swizzle; elements outside the tensor
//                                   land as zeros; the bytes count toward `bar`'s transaction.
//   tma_prefetch_map(map)           prefetch.tensormap: the descriptor into the cache early.
//   tma_store(map, smem, c0..)      cp.async.bulk.tensor.Nd.global.shared::cta (PTX ISA 9.7.9.25.5.2):
//                                   `smem` (the box, in the map's swizzle) to the box at (c0
//                                   innermost, ...) of the map's tensor; elements of the box
//                                   outside the tensor are not written. Issued after a
//                                   fence.proxy.async of the threads that wrote `smem`.
//   tma_store_commit()              cp.async.bulk.commit_group: the stores issued so far form a group.
//   tma_store_wait_read()           cp.async.bulk.wait_group.read 0: every committed store has
//                                   read its shared memory (which may then be written again).
//   setmaxnreg_inc<N>/_dec<N>()     setmaxnreg (sm_90a): this warpgroup's registers per thread
//                                   become N (the loading warpgroup gives its registers to the
//                                   consumers; needs a register cap at entry:
//                                   __launch_bounds__(threads, 1)).
//   named_barrier_sync(id, n)       bar.sync / bar.arrive on named barrier `id` (1..15) over n
//   named_barrier_arrive(id, n)     threads (whole warps): arrive does not wait; the warpgroups of
//                                   an overlapped pipeline take turns issuing wgmma with them.
//   warp_index()                    threadIdx.x / 32 as a value ptxas knows is the same on every
//                                   lane: a branch on it is not divergent, so wgmma inside it is
//                                   not serialized (ptxas C7518, "wgmma.mma_async instructions
//                                   are serialized due to ... divergent path").
#pragma once

#include "tl_cuda_mma.h"

namespace tl {

struct alignas(64) tensor_map {
  unsigned long long opaque[16];
};

TL_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

TL_DEVICE void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

TL_DEVICE int warp_index() { return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 32, 0); }

template <int N>
TL_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N>
TL_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

TL_DEVICE void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

TL_DEVICE void tma_prefetch_map(const tensor_map* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

TL_DEVICE void tma_load(const tensor_map* map, void* smem, uint64_t* bar, int c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];\n"
      ::"r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0)
      : "memory");
}

TL_DEVICE void tma_load(const tensor_map* map, void* smem, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}

TL_DEVICE void tma_load(const tensor_map* map, void* smem, uint64_t* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n"
      ::"r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

TL_DEVICE void tma_load(const tensor_map* map, void* smem, uint64_t* bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n"
      ::"r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
      "r"(c3)
      : "memory");
}

TL_DEVICE void tma_load(const tensor_map* map, void* smem, uint64_t* bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n"
      ::"r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
      "r"(c3), "r"(c4)
      : "memory");
}

#define TL_TMA_STORE(DIMS, COORDS, ...)                                                                     \
  asm volatile("cp.async.bulk.tensor." #DIMS "d.global.shared::cta.bulk_group [%0, {" COORDS "}], [%1];\n" \
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(smem)), __VA_ARGS__ : "memory")

TL_DEVICE void tma_store(const tensor_map* map, void* smem, int c0) { TL_TMA_STORE(1, "%2", "r"(c0)); }
TL_DEVICE void tma_store(const tensor_map* map, void* smem, int c0, int c1) {
  TL_TMA_STORE(2, "%2, %3", "r"(c0), "r"(c1));
}
TL_DEVICE void tma_store(const tensor_map* map, void* smem, int c0, int c1, int c2) {
  TL_TMA_STORE(3, "%2, %3, %4", "r"(c0), "r"(c1), "r"(c2));
}
TL_DEVICE void tma_store(const tensor_map* map, void* smem, int c0, int c1, int c2, int c3) {
  TL_TMA_STORE(4, "%2, %3, %4, %5", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
TL_DEVICE void tma_store(const tensor_map* map, void* smem, int c0, int c1, int c2, int c3, int c4) {
  TL_TMA_STORE(5, "%2, %3, %4, %5, %6", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
#undef TL_TMA_STORE

TL_DEVICE void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

TL_DEVICE void tma_store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }

}  // namespace tl
