// Warp-level tensor-core and async-copy primitives for sm_80 and newer, as inline PTX:
//   mma.sync.aligned m16n8k16 (f16/bf16 -> f32), m16n8k32 (s8 -> s32), m16n8k8 (tf32 -> f32),
//   ldmatrix.sync.aligned.m8n8 (.x1/.x2/.x4, plain and .trans),
//   cp.async (.cg 16 bytes, .ca 4/8/16 bytes) with zero-fill of masked elements,
//   cp.async.commit_group / wait_group / wait_all, and warp all-reductions by shuffles;
//   mbarriers (init, arrive, parity wait, cp.async.mbarrier.arrive) for T.alloc_barrier.
//
// Fragment layouts are PTX ISA 9.7.14.5 ("Matrix fragments for mma.m16n8k16"): for
// m16n8k16, lane L holds A rows L/4 and L/4+8, B column L/4, and C/D elements
// (row L/4, cols 2*(L%4) + {0,1}) then (row L/4 + 8, same cols).
#pragma once

#include "tl_cuda_common.h"

namespace tl {

// The 32-bit shared-memory address PTX's .shared state space expects.
TL_DEVICE uint32_t smem_addr(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// ---------------------------------------------------------------- mma.sync

// D = A * B + C, A 16x16 row-major f16 (4 x .b32 = 8 halves), B 16x8 col-major f16
// (2 x .b32), C and D 16x8 f32 (4 floats). D may alias C.
TL_DEVICE void mma_m16n8k16_f16_f32(float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

// The bf16 form of mma_m16n8k16_f16_f32: same fragments, bf16 inputs.
TL_DEVICE void mma_m16n8k16_bf16_f32(float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

// f16 accumulation: C and D are 16x8 f16 packed in 2 x .b32.
TL_DEVICE void mma_m16n8k16_f16_f16(uint32_t* d, const uint32_t* a, const uint32_t* b, const uint32_t* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
      "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};\n"
      : "=r"(d[0]), "=r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
}

// T.gemm's f16 accumulator: C and D as the fragment's 4 halves (c0..c3), packed two per .b32
// as the instruction takes them (c0 in the low half).
TL_DEVICE void mma_m16n8k16_f16_f16_halves(half_t* d, const uint32_t* a, const uint32_t* b, const half_t* c) {
  uint32_t cw[2], dw[2];
  cw[0] = (uint32_t)__half_as_ushort(c[0]) | ((uint32_t)__half_as_ushort(c[1]) << 16);
  cw[1] = (uint32_t)__half_as_ushort(c[2]) | ((uint32_t)__half_as_ushort(c[3]) << 16);
  mma_m16n8k16_f16_f16(dw, a, b, cw);
  d[0] = __ushort_as_half((unsigned short)(dw[0] & 0xFFFFu));
  d[1] = __ushort_as_half((unsigned short)(dw[0] >> 16));
  d[2] = __ushort_as_half((unsigned short)(dw[1] & 0xFFFFu));
  d[3] = __ushort_as_half((unsigned short)(dw[1] >> 16));
}

// D = A * B + C with A 16x32 row-major s8 (4 x .b32 = 16 bytes), B 32x8 col-major s8
// (2 x .b32), C and D 16x8 s32 (4 ints).
TL_DEVICE void mma_m16n8k32_s8_s32(int32_t* d, const uint32_t* a, const uint32_t* b, const int32_t* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]),
        "r"(c[2]), "r"(c[3]));
}

// D = A * B + C with A 16x8 row-major tf32 (4 x .b32), B 8x8 col-major tf32 (2 x .b32), C and
// D 16x8 f32. Operands must already be tf32 (see mma_round_tf32).
TL_DEVICE void mma_m16n8k8_tf32_f32(float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

// An f32 operand register rounded to tf32 (nearest, ties away from zero), in place.
TL_DEVICE void mma_round_tf32(uint32_t* r) {
  uint32_t out;
  asm volatile("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(out) : "r"(r[0]));
  r[0] = out;
}

// Operand registers filled element by element (where ldmatrix cannot gather them): the
// first pointer gives the lowest bits.
TL_DEVICE void mma_pack_b16(uint32_t* r, const void* lo, const void* hi) {
  r[0] = static_cast<uint32_t>(*static_cast<const uint16_t*>(lo)) |
         (static_cast<uint32_t>(*static_cast<const uint16_t*>(hi)) << 16);
}

TL_DEVICE void mma_pack_b8(uint32_t* r, const void* b0, const void* b1, const void* b2, const void* b3) {
  r[0] = static_cast<uint32_t>(*static_cast<const uint8_t*>(b0)) |
         (static_cast<uint32_t>(*static_cast<const uint8_t*>(b1)) << 8) |
         (static_cast<uint32_t>(*static_cast<const uint8_t*>(b2)) << 16) |
         (static_cast<uint32_t>(*static_cast<const uint8_t*>(b3)) << 24);
}

TL_DEVICE void mma_load_b32(uint32_t* r, const void* p) { r[0] = *static_cast<const uint32_t*>(p); }

// One operand register from the bits of two 16-bit values held in registers (an A operand that
// lives in a fragment): `lo` in the low half. By value, so the fragment's registers never need
// an address.
TL_DEVICE uint32_t pack_b16x2(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// ---------------------------------------------------------------- ldmatrix

// Loads 8x8 b16 matrices from shared memory into a warp's registers. Lanes 8*i .. 8*i+7
// give the row addresses of matrix i (16 contiguous bytes each); every lane gets one .b32
// per matrix. The .trans forms transpose each 8x8 matrix on the way (row-major B to the
// col-major fragment mma.sync wants).
TL_DEVICE void ldmatrix_x1(uint32_t* r, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(smem_addr(smem_row)));
}

TL_DEVICE void ldmatrix_x2(uint32_t* r, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(smem_row)));
}

TL_DEVICE void ldmatrix_x4(uint32_t* r, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
}

TL_DEVICE void ldmatrix_x1_trans(uint32_t* r, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(smem_addr(smem_row)));
}

TL_DEVICE void ldmatrix_x2_trans(uint32_t* r, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(smem_row)));
}

TL_DEVICE void ldmatrix_x4_trans(uint32_t* r, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
}

// ---------------------------------------------------------------- warp reductions

// v[0] combined over the Lanes consecutive lanes of its group (Lanes a power of 2, at most
// 32; every lane of the warp must call it): a butterfly of shuffles, so every lane of the
// group ends with the result.
template <int Lanes, typename T>
TL_DEVICE void warp_allreduce_sum(T* v) {
#pragma unroll
  for (int mask = Lanes / 2; mask > 0; mask /= 2) v[0] = v[0] + __shfl_xor_sync(0xffffffffu, v[0], mask);
}

template <int Lanes, typename T>
TL_DEVICE void warp_allreduce_max(T* v) {
#pragma unroll
  for (int mask = Lanes / 2; mask > 0; mask /= 2) v[0] = tl::max(v[0], __shfl_xor_sync(0xffffffffu, v[0], mask));
}

template <int Lanes, typename T>
TL_DEVICE void warp_allreduce_min(T* v) {
#pragma unroll
  for (int mask = Lanes / 2; mask > 0; mask /= 2) v[0] = tl::min(v[0], __shfl_xor_sync(0xffffffffu, v[0], mask));
}

// ---------------------------------------------------------------- cp.async

// 16 bytes global -> shared, bypassing L1 (.cg). Both addresses 16-byte aligned.
TL_DEVICE void cp_async_cg16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}

// As cp_async_cg16, but when `valid` is false nothing is read and the 16 shared bytes are
// zero-filled (the src-size operand is 0): masked tails load as zeros without branching.
// `gmem` must still be a valid-looking address; pass the tensor base when out of bounds.
TL_DEVICE void cp_async_cg16_zfill(void* smem, const void* gmem, bool valid) {
  int src_size = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(src_size));
}

// Bytes global -> shared through L1 (.ca); Bytes is 4, 8 or 16 (.cg allows only 16).
template <int Bytes>
TL_DEVICE void cp_async_ca(void* smem, const void* gmem) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "n"(Bytes));
}

// cp_async_ca with zero-fill when `valid` is false.
template <int Bytes>
TL_DEVICE void cp_async_ca_zfill(void* smem, const void* gmem, bool valid) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  int src_size = valid ? Bytes : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "n"(Bytes), "r"(src_size));
}

// Closes the group of cp.async issued since the previous commit.
TL_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most N committed groups are still in flight (N = 0: all done). Other
// threads' copies are visible only after a barrier (__syncthreads) that follows.
template <int N>
TL_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

TL_DEVICE void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

// ---------------------------------------------------------------- mbarriers (PTX ISA 9.7.13.15)

// One thread initialises a barrier expecting `count` arrivals per phase; a barrier (the
// block's or the group's) must follow before any other thread uses it.
TL_DEVICE void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// Makes the initialisation visible beyond the initialising thread (and the async proxy):
// sm_90's fence; on sm_80 the barrier after the init suffices.
TL_DEVICE void fence_barrier_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// The calling thread arrives once (release semantics: its earlier writes are visible to a
// thread that waits for this phase).
TL_DEVICE void mbarrier_arrive(uint64_t* bar) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared.b64 state, [%0];\n}\n"
               ::"r"(smem_addr(bar)) : "memory");
}

// The barrier tracks every cp.async this thread issued before: the pending count goes up by
// one now and down by one when those copies have landed (the non-.noinc form, so the
// expected arrival count is unchanged and the phase cannot complete before the data is in).
TL_DEVICE void cp_async_mbarrier_arrive(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// Blocks until the phase of parity `parity` has completed (acquire semantics). A fresh
// barrier is in phase 0: waiting for parity 1 returns at once.
TL_DEVICE void mbarrier_wait(uint64_t* bar, int parity) {
  uint32_t done;
  do {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
#else
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
#endif
  } while (!done);
}

}  // namespace tl
