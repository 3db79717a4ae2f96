// What the generated MUSA code uses from the MUSA SDK, declared for a syntax check with a
// plain clang in CUDA mode (`clang++ -x cuda --cuda-device-only -nocudainc -nocudalib
// -fsyntax-only -D TL_MUSA_SYNTAX_CHECK`). Never included when mcc compiles: there the SDK's
// own <musa_runtime.h> is used. Declares exactly what the backend emits (codegen.py and the
// headers tl_musa_*.h), so that a wrong name, argument count or argument type fails the check.
//
// Each declaration cites a public call site that fixes its signature. "port" is Moore Threads'
// TileLang port, github.com/MooreThreads/tilelang_musa at dd1cce9b; "mutlass" is Moore Threads'
// MUTLASS (mirror github.com/zhe-pang/mutlass at 6dd17cb6). The bodies of these functions are
// the SDK's; none is defined here.
#pragma once

#if !defined(TL_MUSA_SYNTAX_CHECK)
#error "check/musa_sdk.h stands in for the MUSA SDK in syntax checks only"
#endif

// -- function and variable qualifiers (mcc is clang-based and spells them as CUDA does:
//    port src/target/codegen_musa.cc:260 prints `extern "C" __global__`, :302 `__launch_bounds__`,
//    port src/tl_templates/musa/common.h:53-54 use `__forceinline__ __device__`) ------------------
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

// -- built-in index variables: port src/tl_templates/musa/debug.h:13-16 reads blockIdx.x..z and
//    threadIdx.x..z as unsigned values passed to printf("%d") ---------------------------------------
struct tl_musa_check_index3 {
  unsigned int x, y, z;
};
extern __device__ const tl_musa_check_index3 threadIdx;
extern __device__ const tl_musa_check_index3 blockIdx;
extern __device__ const tl_musa_check_index3 blockDim;
extern __device__ const tl_musa_check_index3 gridDim;

// -- block barrier: port src/target/codegen_musa.cc:952 prints `__syncthreads_lm();` for a
//    shared-memory storage sync --------------------------------------------------------------------
__device__ void __syncthreads_lm();

// -- printf: port src/tl_templates/musa/debug.h:13 (`printf(fmt, msg, blockIdx.x, ...)`) ----------
extern "C" __device__ int printf(const char* format, ...);

// -- warp shuffle: port src/tl_templates/musa/common.h:305 `__shfl_xor_sync(mask, val, laneMask)`
//    with `unsigned mask`, `int laneMask`, for the value types the port shuffles ------------------------
__device__ int __shfl_xor_sync(unsigned mask, int value, int lane_mask);
__device__ unsigned int __shfl_xor_sync(unsigned mask, unsigned int value, int lane_mask);
__device__ float __shfl_xor_sync(unsigned mask, float value, int lane_mask);
__device__ double __shfl_xor_sync(unsigned mask, double value, int lane_mask);
__device__ long long __shfl_xor_sync(unsigned mask, long long value, int lane_mask);

// -- atomics: port src/tl_templates/musa/atomic.h:35 (atomicMax), :50 (atomicMin), :66 (atomicAdd)
//    on `NT1*` with NT1 = int / float (normalize_atomic_type) ---------------------------------------
__device__ int atomicAdd(int* address, int value);
__device__ float atomicAdd(float* address, float value);
__device__ int atomicMax(int* address, int value);
__device__ int atomicMin(int* address, int value);

// -- C math of device code (the CUDA-compatible math library of musa_runtime.h; the port calls
//    `powf`, `log2`, `log2f` directly: src/tl_templates/musa/common.h:43-51) -------------------------
#define TL_MUSA_CHECK_MATH1(name) __device__ float name##f(float); __device__ double name(double);
#define TL_MUSA_CHECK_MATH2(name) __device__ float name##f(float, float); __device__ double name(double, double);
TL_MUSA_CHECK_MATH1(exp) TL_MUSA_CHECK_MATH1(exp2) TL_MUSA_CHECK_MATH1(log) TL_MUSA_CHECK_MATH1(log2)
TL_MUSA_CHECK_MATH1(log10) TL_MUSA_CHECK_MATH1(log1p) TL_MUSA_CHECK_MATH1(sqrt) TL_MUSA_CHECK_MATH1(fabs)
TL_MUSA_CHECK_MATH1(floor) TL_MUSA_CHECK_MATH1(ceil) TL_MUSA_CHECK_MATH1(trunc) TL_MUSA_CHECK_MATH1(rint)
TL_MUSA_CHECK_MATH1(nearbyint) TL_MUSA_CHECK_MATH1(sin) TL_MUSA_CHECK_MATH1(cos) TL_MUSA_CHECK_MATH1(tan)
TL_MUSA_CHECK_MATH1(asin) TL_MUSA_CHECK_MATH1(acos) TL_MUSA_CHECK_MATH1(atan) TL_MUSA_CHECK_MATH1(sinh)
TL_MUSA_CHECK_MATH1(cosh) TL_MUSA_CHECK_MATH1(tanh) TL_MUSA_CHECK_MATH1(asinh) TL_MUSA_CHECK_MATH1(acosh)
TL_MUSA_CHECK_MATH1(atanh) TL_MUSA_CHECK_MATH1(erf) TL_MUSA_CHECK_MATH1(rsqrt)
TL_MUSA_CHECK_MATH2(pow) TL_MUSA_CHECK_MATH2(atan2) TL_MUSA_CHECK_MATH2(fmod) TL_MUSA_CHECK_MATH2(hypot)
TL_MUSA_CHECK_MATH2(copysign) TL_MUSA_CHECK_MATH2(nextafter) TL_MUSA_CHECK_MATH2(fmax) TL_MUSA_CHECK_MATH2(fmin)
__device__ float ldexpf(float, int);
__device__ double ldexp(double, int);
__device__ float fmaf(float, float, float);
__device__ double fma(double, double, double);
__device__ bool isnan(float);
__device__ bool isnan(double);
__device__ bool isinf(float);
__device__ bool isinf(double);
__device__ bool isfinite(float);
__device__ bool isfinite(double);
__device__ int abs(int);
__device__ long long abs(long long);
#undef TL_MUSA_CHECK_MATH1
#undef TL_MUSA_CHECK_MATH2

// -- shared-memory address of a generic pointer: port src/tl_templates/musa/common.h:137
//    `static_cast<uint32_t>(__cvta_generic_to_shared(ptr))` with `void const* ptr` -----------------
__device__ uint64_t __cvta_generic_to_shared(const void* ptr);

// -- async global -> shared copies (LDLMS), every arch: port src/tl_templates/musa/copy.h:20
//    `__musa_memcpy_g2s((void _AS3*)smem, (void _AS1*)global, N /*total_bytes*/, 0 /*prefetch*/)`,
//    copy.h:16 `__musa_memcpy_g2s_wait()`; _AS1/_AS3 are address spaces 1 and 3 (common.h:57-58) ---
__device__ void __musa_memcpy_g2s(void __attribute__((address_space(3)))* shared_dst,
                                  void __attribute__((address_space(1)))* global_src,
                                  int total_bytes, int prefetch_size);
__device__ void __musa_memcpy_g2s_wait();

// -- fmma (mp_22): mutlass include/mute/arch/mma_mp22.hpp, MP22_32x32x16_F32F16F16F32_TT::fma
//    `__musa_fmma_m32n32k16_mma(d, a, b, c, 0, 0, 0, 0, 1, 0)` with `int32_t* d`, `int32_t const* a, b, c`
//    (the last argument 0..3 for TT, TN, NT, NN); MP22_32x32x16_F32BF16BF16F32_* call
//    `__musa_bfmma_m32n32k16_mma` the same way ------------------------------------------------------
__device__ void __musa_fmma_m32n32k16_mma(int32_t* d, const int32_t* a, const int32_t* b, const int32_t* c,
                                          int, int, int, int, int, int layout);
__device__ void __musa_bfmma_m32n32k16_mma(int32_t* d, const int32_t* a, const int32_t* b, const int32_t* c,
                                           int, int, int, int, int, int layout);

// -- TCE / SQMMA (mp_31): mutlass include/mute/arch/mma_mp31_sqmma.hpp, e.g. MP31_32x32x32_U32U8U8_SS::fma
//    `__musa_sqmma_m32n32_mma(d, &desc_a, &desc_b, d, tnspA, 1 - tnspB, 0, 0, scaleD, sat, k, mma_type)`
//    with `int32_t* d`, `int32_t const& desc_a/desc_b` (so `int32_t const*` arguments) and ints;
//    the M x N forms of the 16-bit SQMMA atoms there (MP31_<M>x<N>x<K>_F32F16F16_SS). Commit and wait: mutlass
//    include/mute/arch/mma_mp31.hpp `warpsquad_commit_batch()` -> `__musa_tce_commit_group()`,
//    `warpsquad_wait<N>()` -> `__musa_tce_wait_group(N)` ---------------------------------------------
#define TL_MUSA_CHECK_SQMMA(M, N)                                                                  \
  __device__ void __musa_sqmma_m##M##n##N##_mma(int32_t* d, const int32_t* desc_a, const int32_t* desc_b,   \
                                                 int32_t* c, int transpose_a, int transpose_b, int negate_a, \
                                                 int negate_b, int scale_d, int saturate, int k, int mma_type);
TL_MUSA_CHECK_SQMMA(16, 64) TL_MUSA_CHECK_SQMMA(32, 32) TL_MUSA_CHECK_SQMMA(32, 64) TL_MUSA_CHECK_SQMMA(32, 128)
TL_MUSA_CHECK_SQMMA(64, 16) TL_MUSA_CHECK_SQMMA(64, 32) TL_MUSA_CHECK_SQMMA(64, 64) TL_MUSA_CHECK_SQMMA(64, 128)
#undef TL_MUSA_CHECK_SQMMA
__device__ void __musa_tce_commit_group();
__device__ void __musa_tce_wait_group(int pending);

// -- ASYNC barriers (mp_31): port src/tl_templates/musa/barrier.h:11 `__musa_async_init_arrival(barrier_id,
//    warp_count, init_phase)`, :17 `__musa_async_wait(barrier_id, phase_bit)`, :23 `return
//    __musa_async_arrive(barrier_id)` as a uint32_t, :30 `__musa_async_add_trans(barrier_id,
//    transaction_bytes)`, all `uint32_t` but phase_bit (`int`; mutlass copy_mp31_desc.hpp
//    `wait_barrier(uint32_t barrier_id, uint32_t phase_bit)` passes a uint32_t); port
//    src/target/codegen_musa.cc:1554 prints `__musa_async_bar_record(<count>)` with an int literal --
__device__ void __musa_async_init_arrival(uint32_t barrier_id, uint32_t warp_count, uint32_t init_phase);
__device__ uint32_t __musa_async_arrive(uint32_t barrier_id);
__device__ void __musa_async_add_trans(uint32_t barrier_id, uint32_t transaction_bytes);
__device__ void __musa_async_wait(uint32_t barrier_id, uint32_t phase_bit);
__device__ void __musa_async_bar_record(int barrier_count);

// -- TME (mp_31): mutlass include/mute/arch/copy_mp31_tme.hpp (mirror at e7764ba9),
//    MP31_TME_LOAD_<r>D::copy: `__musa_tme_ld_tile_<r>d(bar_id, make_ptr_with_address_space<Shared>(
//    smem_int_ptr), gmem_int_desc, dim, crd, sg, ss, sl, prefetch, inner_hint, outer_hint, 0)` with
//    `uint32_t const& bar_id`, a `void __attribute__((address_space(3)))*` (port common.h:126-131
//    make_ptr_with_address_space), `uint64_t gmem_int_desc` (the descriptor's address), dim and crd
//    `int32_t` for 1-D and `mute::v<r>i32_t` vectors for 2..5-D (port common.h:33-36: `int32_t
//    __attribute__((vector_size(4 r)))`), then seven int32_t. The descriptor type is the driver
//    API's (port src/target/codegen_musa.cc:453 prints `MUtensorDescriptor`, :3506 passes it as an
//    `__attribute__((grid_constant)) const` parameter); its size is not published: stood in here
//    by 128 bytes aligned to 64 ----------------------------------------------------------------------
struct alignas(64) MUtensorDescriptor {
  unsigned long long opaque[16];
};
typedef int32_t tl_musa_check_v2i32 __attribute__((vector_size(8)));
typedef int32_t tl_musa_check_v3i32 __attribute__((vector_size(12)));
typedef int32_t tl_musa_check_v4i32 __attribute__((vector_size(16)));
typedef int32_t tl_musa_check_v5i32 __attribute__((vector_size(20)));
#define TL_MUSA_CHECK_TME(R, VEC)                                                                   \
  __device__ void __musa_tme_ld_tile_##R##d(uint32_t bar_id, void __attribute__((address_space(3)))* smem, \
                                            uint64_t desc, VEC dim, VEC crd, int32_t swizzle_granularity,  \
                                            int32_t swizzle_stride, int32_t swizzle_line, int32_t prefetch, \
                                            int32_t inner_hint, int32_t outer_hint, int32_t);
TL_MUSA_CHECK_TME(1, int32_t) TL_MUSA_CHECK_TME(2, tl_musa_check_v2i32) TL_MUSA_CHECK_TME(3, tl_musa_check_v3i32)
TL_MUSA_CHECK_TME(4, tl_musa_check_v4i32) TL_MUSA_CHECK_TME(5, tl_musa_check_v5i32)
#undef TL_MUSA_CHECK_TME
