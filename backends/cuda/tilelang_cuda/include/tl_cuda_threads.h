// Thread-level intrinsics a kernel names itself (T.get_lane_idx, T.shuffle_elect,
// T.match_all_sync, T.named_barrier_arrive, T.sync_grid, T.fast_rcp): what a single CUDA
// builtin does not spell. The printer includes it, after tl_cuda_common.h, in a kernel that
// calls one (defining TL_GRID_SYNC first when the kernel calls T.sync_grid).
//
//   tl_linear_thread_idx()          threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)
//   tl_get_lane_idx(w) / _warp_idx  linear index % w, / w; tl_get_warp_group_idx(w, n): / (w * n)
//   tl_shuffle_elect(n)             true on the first thread of each group of n (n = 0: of the block)
//   tl_match_all_sync(mask, v)      __match_all_sync without the predicate out-parameter
//   tl_named_barrier_arrive(id, n)  bar.arrive id, n: arrive at a named barrier without waiting
//   tl_sync_grid()                  a barrier over the whole grid (needs a cooperative launch:
//                                   the runtime launches kernels that call it with
//                                   cuLaunchCooperativeKernel)
//   tl_fast_rcp(x)                  rcp.approx.ftz.f32
#pragma once

TL_DEVICE int tl_linear_thread_idx() {
  return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

TL_DEVICE int tl_get_lane_idx(int warp_size) { return tl_linear_thread_idx() % warp_size; }
TL_DEVICE int tl_get_warp_idx(int warp_size) { return tl_linear_thread_idx() / warp_size; }
TL_DEVICE int tl_get_warp_idx_sync(int warp_size) {
  // every lane of a converged warp computes the same value; broadcast lane 0's so the
  // compiler may keep it in a uniform register
  return __shfl_sync(0xffffffffu, tl_linear_thread_idx() / warp_size, 0);
}
TL_DEVICE int tl_get_warp_group_idx(int warp_size, int warps_per_group) {
  return tl_linear_thread_idx() / (warp_size * warps_per_group);
}

TL_DEVICE bool tl_shuffle_elect(int group_threads) {
  int tid = tl_linear_thread_idx();
  return group_threads == 0 ? tid == 0 : tid % group_threads == 0;
}

TL_DEVICE unsigned tl_match_all_sync(unsigned mask, int value) {
  int predicate;
  return __match_all_sync(mask, value, &predicate);
}
TL_DEVICE unsigned tl_match_all_sync(unsigned mask, unsigned value) {
  int predicate;
  return __match_all_sync(mask, value, &predicate);
}
TL_DEVICE unsigned tl_match_all_sync(unsigned mask, long long value) {
  int predicate;
  return __match_all_sync(mask, value, &predicate);
}
TL_DEVICE unsigned tl_match_all_sync(unsigned mask, float value) {
  int predicate;
  return __match_all_sync(mask, value, &predicate);
}

TL_DEVICE void tl_named_barrier_arrive(int barrier_id, int thread_count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(barrier_id), "r"(thread_count) : "memory");
}

#if defined(TL_GRID_SYNC)
// cooperative groups' grid barrier; valid only in a cooperative launch
#include <cooperative_groups.h>
TL_DEVICE void tl_sync_grid() { cooperative_groups::this_grid().sync(); }
#endif

TL_DEVICE float tl_fast_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TL_DEVICE double tl_fast_rcp(double x) {
  double y;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
  return y;
}

// T.ieee_<op>(..., mode): one IEEE operation rounded as asked, float or double overloads
// of CUDA's __fadd_rn / __dadd_rn family (never contracted into an FMA).
#define TL_IEEE_BINARY(NAME, F, D, MODE)                                               \
  TL_DEVICE float tl_ieee_##NAME##_##MODE(float a, float b) { return F##_##MODE(a, b); } \
  TL_DEVICE double tl_ieee_##NAME##_##MODE(double a, double b) { return D##_##MODE(a, b); }
#define TL_IEEE_UNARY(NAME, F, D, MODE)                                      \
  TL_DEVICE float tl_ieee_##NAME##_##MODE(float a) { return F##_##MODE(a); } \
  TL_DEVICE double tl_ieee_##NAME##_##MODE(double a) { return D##_##MODE(a); }
#define TL_IEEE_ALL(MODE)                                                                   \
  TL_IEEE_BINARY(add, __fadd, __dadd, MODE)                                                 \
  TL_IEEE_BINARY(sub, __fsub, __dsub, MODE)                                                 \
  TL_IEEE_BINARY(mul, __fmul, __dmul, MODE)                                                 \
  TL_IEEE_BINARY(div, __fdiv, __ddiv, MODE)                                                 \
  TL_IEEE_UNARY(rcp, __frcp, __drcp, MODE)                                                  \
  TL_IEEE_UNARY(sqrt, __fsqrt, __dsqrt, MODE)                                               \
  TL_DEVICE float tl_ieee_fma_##MODE(float a, float b, float c) { return __fmaf_##MODE(a, b, c); } \
  TL_DEVICE double tl_ieee_fma_##MODE(double a, double b, double c) { return __fma_##MODE(a, b, c); }
TL_IEEE_ALL(rn)
TL_IEEE_ALL(rz)
TL_IEEE_ALL(ru)
TL_IEEE_ALL(rd)
#undef TL_IEEE_ALL
#undef TL_IEEE_UNARY
#undef TL_IEEE_BINARY

TL_DEVICE float tl_ieee_rsqrt(float x) { return __frsqrt_rn(x); }

// Half precision rounds to nearest even only (the language refuses other modes): cuda_fp16 /
// cuda_bf16's __hadd_rn ... (the _rn forms are never contracted into an FMA), hrcp, hsqrt, hrsqrt.
#define TL_IEEE_HALF(T)                                                               \
  TL_DEVICE T tl_ieee_add_rn(T a, T b) { return __hadd_rn(a, b); }                    \
  TL_DEVICE T tl_ieee_sub_rn(T a, T b) { return __hsub_rn(a, b); }                    \
  TL_DEVICE T tl_ieee_mul_rn(T a, T b) { return __hmul_rn(a, b); }                    \
  TL_DEVICE T tl_ieee_div_rn(T a, T b) { return __hdiv(a, b); }                       \
  TL_DEVICE T tl_ieee_fma_rn(T a, T b, T c) { return __hfma(a, b, c); }               \
  TL_DEVICE T tl_ieee_rcp_rn(T a) { return hrcp(a); }                                 \
  TL_DEVICE T tl_ieee_sqrt_rn(T a) { return hsqrt(a); }                               \
  TL_DEVICE T tl_ieee_rsqrt(T a) { return hrsqrt(a); }
TL_IEEE_HALF(half_t)
TL_IEEE_HALF(bfloat16_t)
#undef TL_IEEE_HALF

// T.add2 / sub2 / mul2 / fma2 / max2 / min2 / abs2 on two-lane vectors. The printer holds the
// vectors as raw words (float16x2 and bfloat16x2: one unsigned int; float32x2: a uint2), so a
// call reads `tl_word(tl::add2(tl_as<__half2>(a), tl_as<__half2>(b)))`: the native type is named
// at the call (one word type would make the 16-bit overloads ambiguous). __half2 and
// __nv_bfloat162 are not trivially copyable, so no __builtin_bit_cast for them.
template <typename V, typename W>
TL_DEVICE V tl_as(W w) { static_assert(sizeof(V) == sizeof(W), "same width"); return *reinterpret_cast<const V*>(&w); }
TL_DEVICE unsigned tl_word(__half2 v) { return *reinterpret_cast<const unsigned*>(&v); }
TL_DEVICE unsigned tl_word(__nv_bfloat162 v) { return *reinterpret_cast<const unsigned*>(&v); }
TL_DEVICE uint2 tl_word(float2 v) { return __builtin_bit_cast(uint2, v); }

namespace tl {
#define TL_PACKED16(VEC)                                                                  \
  TL_DEVICE VEC add2(VEC a, VEC b) { return __hadd2(a, b); }                             \
  TL_DEVICE VEC sub2(VEC a, VEC b) { return __hsub2(a, b); }                             \
  TL_DEVICE VEC mul2(VEC a, VEC b) { return __hmul2(a, b); }                             \
  TL_DEVICE VEC max2(VEC a, VEC b) { return __hmax2(a, b); }                             \
  TL_DEVICE VEC min2(VEC a, VEC b) { return __hmin2(a, b); }                             \
  TL_DEVICE VEC abs2(VEC a) { return __habs2(a); }                                       \
  TL_DEVICE VEC fma2(VEC a, VEC b, VEC c) { return __hfma2(a, b, c); }
TL_PACKED16(__half2)
TL_PACKED16(__nv_bfloat162)
#undef TL_PACKED16
TL_DEVICE float2 add2(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
TL_DEVICE float2 sub2(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
TL_DEVICE float2 mul2(float2 a, float2 b) { return make_float2(a.x * b.x, a.y * b.y); }
TL_DEVICE float2 max2(float2 a, float2 b) { return make_float2(fmaxf(a.x, b.x), fmaxf(a.y, b.y)); }
TL_DEVICE float2 min2(float2 a, float2 b) { return make_float2(fminf(a.x, b.x), fminf(a.y, b.y)); }
TL_DEVICE float2 abs2(float2 a) { return make_float2(fabsf(a.x), fabsf(a.y)); }
TL_DEVICE float2 fma2(float2 a, float2 b, float2 c) {
  return make_float2(fmaf(a.x, b.x, c.x), fmaf(a.y, b.y, c.y));
}
}  // namespace tl

// TileLang's PTX-level names (tilelang_cuda.language_ptx): explicit global/shared loads and
// stores of 32/64/128 bits (values as raw words), thread-block cluster barriers (a launch
// without clusters is a cluster of one block: they then order this block alone) and
// programmatic dependent launch (no-ops in a launch without the PDL attribute).
namespace tl {
TL_DEVICE uint32_t tl_smem(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

TL_DEVICE uint32_t ldg32(const void* p) {
  uint32_t v;
  asm volatile("ld.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}
TL_DEVICE uint2 ldg64(const void* p) {
  uint2 v;
  asm volatile("ld.global.v2.b32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
TL_DEVICE uint4 ldg128(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// predicated: nothing is read where `pred` is false and the value is 0
TL_DEVICE uint32_t ldg32(const void* p, bool pred) { return pred ? ldg32(p) : 0u; }
TL_DEVICE uint2 ldg64(const void* p, bool pred) { return pred ? ldg64(p) : make_uint2(0u, 0u); }
TL_DEVICE uint4 ldg128(const void* p, bool pred) { return pred ? ldg128(p) : make_uint4(0u, 0u, 0u, 0u); }

TL_DEVICE void stg32(void* p, uint32_t v) { asm volatile("st.global.b32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory"); }
TL_DEVICE void stg64(void* p, uint2 v) {
  asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
}
TL_DEVICE void stg128(void* p, uint4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
TL_DEVICE void stg32(void* p, uint32_t v, bool pred) { if (pred) stg32(p, v); }
TL_DEVICE void stg64(void* p, uint2 v, bool pred) { if (pred) stg64(p, v); }
TL_DEVICE void stg128(void* p, uint4 v, bool pred) { if (pred) stg128(p, v); }

TL_DEVICE uint32_t lds32(const void* p) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(tl_smem(p)));
  return v;
}
TL_DEVICE uint2 lds64(const void* p) {
  uint2 v;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(tl_smem(p)));
  return v;
}
TL_DEVICE uint4 lds128(const void* p) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(tl_smem(p)));
  return v;
}
TL_DEVICE void sts32(void* p, uint32_t v) { asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(tl_smem(p)), "r"(v) : "memory"); }
TL_DEVICE void sts64(void* p, uint2 v) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(tl_smem(p)), "r"(v.x), "r"(v.y) : "memory");
}
TL_DEVICE void sts128(void* p, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(tl_smem(p)), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w) : "memory");
}

TL_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory"); }
TL_DEVICE void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory"); }
TL_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }
TL_DEVICE void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}
TL_DEVICE int block_rank_in_cluster() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return (int)rank;
}

TL_DEVICE void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
TL_DEVICE void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" :::); }
}  // namespace tl

// T.warp_reduce_<op>(v): a butterfly of __shfl_xor_sync over the 32 lanes; every lane ends
// with the result.
#define TL_WARP_REDUCE(NAME, COMBINE)                                           \
  template <typename T>                                                         \
  TL_DEVICE T tl_warp_reduce_##NAME(T v) {                                      \
    _Pragma("unroll") for (int mask = 16; mask > 0; mask /= 2) {                \
      T other = __shfl_xor_sync(0xffffffffu, v, mask);                          \
      v = COMBINE;                                                              \
    }                                                                           \
    return v;                                                                   \
  }
TL_WARP_REDUCE(sum, v + other)
TL_WARP_REDUCE(max, other > v ? other : v)
TL_WARP_REDUCE(min, other < v ? other : v)
TL_WARP_REDUCE(bitand, v & other)
TL_WARP_REDUCE(bitor, v | other)
#undef TL_WARP_REDUCE

// mbarrier names of TileLang's PTX level that tl_cuda_mma.h / tl_cuda_tma.h do not spell.
namespace tl {
// mbarrier.expect_tx without an arrival (sm_90): the phase also waits for `bytes` more
TL_DEVICE void mbarrier_expect_tx_only(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(tl_smem(bar)), "r"(bytes)
               : "memory");
}
// cp.async.mbarrier.arrive.noinc: the arrival when this thread's cp.async complete, counted
// in the barrier's expected arrivals (no increment of the pending count)
TL_DEVICE void cp_async_mbarrier_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(tl_smem(bar)) : "memory");
}
}  // namespace tl

// T.mma_fill / T.mma_store: an accumulator fragment zeroed, and a warp's 16 x 16 accumulator
// tile (8 values a lane: two m16n8 fragments side by side) stored row-major with `stride`.
namespace tl {
template <typename T>
TL_DEVICE void mma_fill(T* local, int offset, int size) {
  for (int i = 0; i < size; ++i) local[offset + i] = T(0);
}
template <typename D, typename S>
TL_DEVICE void mma_store_16x16(D* dst, const S* src, int src_offset, int stride) {
  int lane = threadIdx.x % 32;
#pragma unroll
  for (int local = 0; local < 8; ++local) {
    int row = 8 * (local % 4 / 2) + lane / 4;
    int col = 8 * (local / 4) + lane % 4 * 2 + local % 2;
    dst[row * stride + col] = D(src[src_offset + local]);
  }
}
}  // namespace tl

// Cluster-scope and bulk-copy helpers (sm_90).
namespace tl {
// arrive on the mbarrier at `bar`'s offset in the shared memory of block `cta_id` of this cluster
TL_DEVICE void mbarrier_arrive_cluster(uint64_t* bar, uint32_t cta_id) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(tl_smem(bar)), "r"(cta_id));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
// store `value` at `smem`'s offset in the shared memory of block `cta_id` of this cluster
// (PTX ISA "mapa": a generic address of this block's shared memory -> the same variable in
// block `cta_id`; the store through it is a distributed shared memory store)
template <typename T>
TL_DEVICE void st_cluster(T* smem, T value, uint32_t cta_id) {
  uint64_t remote;
  asm volatile("mapa.u64 %0, %1, %2;\n" : "=l"(remote) : "l"(reinterpret_cast<uint64_t>(smem)), "r"(cta_id));
  *reinterpret_cast<T*>(remote) = value;
}
// cp.async.bulk global -> shared of `bytes` (a multiple of 16, both addresses 16-byte aligned),
// completing as transaction bytes on `bar`
TL_DEVICE void cp_async_bulk(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(tl_smem(smem)), "l"(gmem), "r"(bytes), "r"(tl_smem(bar)) : "memory");
}
}  // namespace tl

// T.ptx_wgmma_rs: the A fragment (any 16-bit element type) as the 32-bit words wgmma reads.
namespace tl {
template <typename T>
TL_DEVICE const uint32_t* as_words(const T* p) { return reinterpret_cast<const uint32_t*>(p); }
}  // namespace tl

// T.ptx_mma_sp: one 2:4 sparse mma.sync of the warp (PTX ISA "Warp-level matrix multiply-
// accumulate with sparse matrix A"): A holds the two kept values of every four along K,
// `e` their positions (2 bits each), SEL which threads of a quad supply the metadata.
namespace tl {
#define TL_MMA_SP_K32(NAME, TYPE)                                                                          \
  template <int SEL>                                                                                       \
  TL_DEVICE void mma_sp_m16n8k32_##NAME##_f32(float* d, const uint32_t* a, const uint32_t* b, const uint32_t* e) { \
    asm volatile("mma.sp.sync.aligned.m16n8k32.row.col.f32." TYPE "." TYPE ".f32 {%0, %1, %2, %3}, "         \
                 "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, %13;\n"                        \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]),  \
                   "r"(e[0]), "n"(SEL));                                                                   \
  }
#define TL_MMA_SP_K16(NAME, TYPE)                                                                          \
  template <int SEL>                                                                                       \
  TL_DEVICE void mma_sp_m16n8k16_##NAME##_f32(float* d, const uint32_t* a, const uint32_t* b, const uint32_t* e) { \
    asm volatile("mma.sp.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 {%0, %1, %2, %3}, "         \
                 "{%4, %5}, {%6, %7}, {%0, %1, %2, %3}, %8, %9;\n"                                           \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(e[0]), "n"(SEL));                         \
  }
TL_MMA_SP_K32(f16, "f16")
TL_MMA_SP_K32(bf16, "bf16")
TL_MMA_SP_K16(f16, "f16")
TL_MMA_SP_K16(bf16, "bf16")
#undef TL_MMA_SP_K32
#undef TL_MMA_SP_K16
}  // namespace tl
