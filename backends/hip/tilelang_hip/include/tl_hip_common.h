// Device helpers every generated HIP kernel includes: element types, Python-semantics integer
// division, atomics, device_assert. Compiles for gfx90a and gfx942 with hipcc (ROCm >= 5.2),
// clang >= 17 in HIP mode, and hiprtc.
#pragma once

#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
#include <hip/hip_fp16.h>

// ROCm >= 5.7 ships <hip/hip_bf16.h> (__hip_bfloat16); older ROCm only the hip_bfloat16 struct.
#if defined(__has_include)
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
#define TL_HIP_HAS_HIP_BF16 1
#endif
#endif
#if !defined(TL_HIP_HAS_HIP_BF16)
#include <hip/hip_bfloat16.h>
#endif

#define TL_DEVICE __device__ __forceinline__
#define TL_HOST_DEVICE __host__ __device__ __forceinline__

// gfx9 (CDNA: gfx90a, gfx942, gfx950) runs 64 lanes per wavefront; RDNA (gfx11, gfx12) 32 by
// default. The compiler says which for the arch being compiled.
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define TL_WAVEFRONT_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define TL_WAVEFRONT_SIZE 64
#endif
constexpr int tl_wavefront_size = TL_WAVEFRONT_SIZE;

// ---------------------------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------------------------

using half_t = __half;
#if defined(TL_HIP_HAS_HIP_BF16)
using bfloat16_t = __hip_bfloat16;
#else
using bfloat16_t = hip_bfloat16;
#endif

TL_DEVICE float tl_to_float(half_t x) { return __half2float(x); }
TL_DEVICE float tl_to_float(float x) { return x; }
#if defined(TL_HIP_HAS_HIP_BF16)
TL_DEVICE float tl_to_float(bfloat16_t x) { return __bfloat162float(x); }
#else
TL_DEVICE float tl_to_float(bfloat16_t x) { return static_cast<float>(x); }
#endif

template <typename T> TL_DEVICE T tl_from_float(float x) { return static_cast<T>(x); }
template <> TL_DEVICE half_t tl_from_float<half_t>(float x) { return __float2half(x); }
#if defined(TL_HIP_HAS_HIP_BF16)
template <> TL_DEVICE bfloat16_t tl_from_float<bfloat16_t>(float x) { return __float2bfloat16(x); }
#else
template <> TL_DEVICE bfloat16_t tl_from_float<bfloat16_t>(float x) { return bfloat16_t(x); }
#endif

#include "tl_hip_fp8.h"
template <> TL_DEVICE fp8_e4m3fnuz_t tl_from_float<fp8_e4m3fnuz_t>(float x) { return {fp8_e4m3fnuz_t::encode(x)}; }
template <> TL_DEVICE fp8_e5m2fnuz_t tl_from_float<fp8_e5m2fnuz_t>(float x) { return {fp8_e5m2fnuz_t::encode(x)}; }

// Storage-only types in generated code: a float16/bfloat16 element is loaded as float,
// computed in float and rounded back on store (one rounding per store, as on the CPU backend).
template <typename T> TL_DEVICE float tl_round(float x) { return tl_to_float(tl_from_float<T>(x)); }

// ---------------------------------------------------------------------------------------------
// min/max of generated code: a NaN operand wins (TIR's max/min, as fmaxf/fminf would not).
// ---------------------------------------------------------------------------------------------

template <typename T> TL_DEVICE T tl_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> TL_DEVICE T tl_min(T a, T b) { return (a < b || a != a) ? a : b; }

// ---------------------------------------------------------------------------------------------
// Python semantics for // and % (the result of % takes the divisor's sign; // rounds down)
// ---------------------------------------------------------------------------------------------

template <typename T> TL_HOST_DEVICE T tl_floordiv(T a, T b) {
  T q = a / b;
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

template <typename T> TL_HOST_DEVICE T tl_floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

TL_DEVICE float tl_floordiv(float a, float b) { return floorf(a / b); }
TL_DEVICE double tl_floordiv(double a, double b) { return floor(a / b); }
TL_DEVICE float tl_floormod(float a, float b) { return a - floorf(a / b) * b; }
TL_DEVICE double tl_floormod(double a, double b) { return a - floor(a / b) * b; }

template <typename T> TL_HOST_DEVICE T tl_ceildiv(T a, T b) { return -tl_floordiv<T>(-a, b); }

// ---------------------------------------------------------------------------------------------
// Atomics: each returns the value held before the update.
// ---------------------------------------------------------------------------------------------

TL_DEVICE int tl_atomic_add(int* addr, int v) { return atomicAdd(addr, v); }
TL_DEVICE unsigned int tl_atomic_add(unsigned int* addr, unsigned int v) { return atomicAdd(addr, v); }
TL_DEVICE unsigned long long tl_atomic_add(unsigned long long* addr, unsigned long long v) {
  return atomicAdd(addr, v);
}
TL_DEVICE long long tl_atomic_add(long long* addr, long long v) {
  return static_cast<long long>(atomicAdd(reinterpret_cast<unsigned long long*>(addr),
                                          static_cast<unsigned long long>(v)));
}
// int64_t/uint64_t are `long`/`unsigned long` on amdgcn, distinct from the long long forms.
TL_DEVICE long tl_atomic_add(long* addr, long v) {
  return static_cast<long>(atomicAdd(reinterpret_cast<unsigned long long*>(addr),
                                     static_cast<unsigned long long>(v)));
}
TL_DEVICE unsigned long tl_atomic_add(unsigned long* addr, unsigned long v) {
  return static_cast<unsigned long>(atomicAdd(reinterpret_cast<unsigned long long*>(addr),
                                              static_cast<unsigned long long>(v)));
}
// atomicAdd stays correct on fine-grained (host-coherent) memory, where the hardware float
// atomics of gfx90a silently do nothing; unsafeAtomicAdd would be faster on coarse-grained.
TL_DEVICE float tl_atomic_add(float* addr, float v) { return atomicAdd(addr, v); }
TL_DEVICE double tl_atomic_add(double* addr, double v) { return atomicAdd(addr, v); }

TL_DEVICE int tl_atomic_max(int* addr, int v) { return atomicMax(addr, v); }
TL_DEVICE unsigned int tl_atomic_max(unsigned int* addr, unsigned int v) { return atomicMax(addr, v); }
TL_DEVICE int tl_atomic_min(int* addr, int v) { return atomicMin(addr, v); }
TL_DEVICE unsigned int tl_atomic_min(unsigned int* addr, unsigned int v) { return atomicMin(addr, v); }

// Float max/min as a compare-and-swap loop: portable across ROCm versions, and a NaN operand
// never replaces the stored value (same as fmaxf/fminf).
TL_DEVICE float tl_atomic_max(float* addr, float v) {
  unsigned int* bits = reinterpret_cast<unsigned int*>(addr);
  unsigned int old = __float_as_uint(*addr);
  while (!(__uint_as_float(old) >= v) && !(v != v)) {
    unsigned int seen = atomicCAS(bits, old, __float_as_uint(v));
    if (seen == old) break;
    old = seen;
  }
  return __uint_as_float(old);
}

TL_DEVICE float tl_atomic_min(float* addr, float v) {
  unsigned int* bits = reinterpret_cast<unsigned int*>(addr);
  unsigned int old = __float_as_uint(*addr);
  while (!(__uint_as_float(old) <= v) && !(v != v)) {
    unsigned int seen = atomicCAS(bits, old, __float_as_uint(v));
    if (seen == old) break;
    old = seen;
  }
  return __uint_as_float(old);
}

// ---------------------------------------------------------------------------------------------
// device_assert: print where and what, then trap (the launch fails with an error on the host).
// ---------------------------------------------------------------------------------------------

TL_DEVICE void tl_device_assert_fail(const char* cond, const char* msg, const char* file, int line) {
  printf("%s:%d: block (%d,%d,%d) thread (%d,%d,%d): device_assert(%s) failed: %s\n", file, line,
         (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x, (int)threadIdx.y,
         (int)threadIdx.z, cond, msg);
  __builtin_trap();
}

#define TL_DEVICE_ASSERT(cond, msg)                                                             \
  do {                                                                                          \
    if (!(cond)) tl_device_assert_fail(#cond, (msg), __FILE__, __LINE__);                       \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Wavefront shuffles: v of lane (lane ^ mask) within groups of `width` lanes (a power of two,
// at most 64). Every lane of the group must call it.
// ---------------------------------------------------------------------------------------------

template <typename T> TL_DEVICE T tl_shfl_xor(T v, int mask, int width) { return __shfl_xor(v, mask, width); }

// T.warp_reduce_<op>(v): a butterfly over the 64 lanes of the wavefront; every lane ends with
// the result.
#define TL_WAVE_REDUCE(NAME, COMBINE)                                    \
  template <typename T> TL_DEVICE T tl_warp_reduce_##NAME(T v) {         \
    for (int mask = 32; mask > 0; mask /= 2) {                           \
      T other = __shfl_xor(v, mask, 64);                                 \
      v = COMBINE;                                                       \
    }                                                                    \
    return v;                                                            \
  }
TL_WAVE_REDUCE(sum, v + other)
TL_WAVE_REDUCE(max, other > v ? other : v)
TL_WAVE_REDUCE(min, other < v ? other : v)
TL_WAVE_REDUCE(bitand, v & other)
TL_WAVE_REDUCE(bitor, v | other)
#undef TL_WAVE_REDUCE
