// Device-side basics every generated CUDA kernel includes: fixed-width integers and
// low-precision float types, integer division with Python's semantics, atomics over the
// dtypes the target declares, and a device assert.
//
// Compiles under NVRTC (-default-device, no C++ standard library) and under nvcc; every
// function is marked __device__ so both agree.
#pragma once

#if defined(__CUDACC_RTC__)
// NVRTC ships no <cstdint>; these are the LP64 definitions it would give.
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#else
#include <cstdint>
#include <cstdio>
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if defined(__has_include)
#if __has_include(<cuda_fp8.h>)
#include <cuda_fp8.h>
#define TL_HAS_FP8 1
#endif
#endif

#define TL_DEVICE __forceinline__ __device__
#define TL_DEVICE_NOINLINE static __noinline__ __device__

// Names the generated code uses for dtypes (the same spellings as TileLang's CUDA output).
using half_t = __half;
using bfloat16_t = __nv_bfloat16;
using half2_t = __half2;
using bfloat162_t = __nv_bfloat162;
#if defined(TL_HAS_FP8)
using fp8_e4_t = __nv_fp8_e4m3;
using fp8_e5_t = __nv_fp8_e5m2;
#endif
// TileLang's device helpers (code a kernel brings with T.import_source, e.g. the lop3
// dequantizers) say `uint`; glibc's <sys/types.h> has the same typedef under nvcc.
typedef unsigned int uint;

namespace tl {

// ---------------------------------------------------------------- integer arithmetic

// ceil(a / b) for b > 0 (grid and tile counts).
template <typename T>
TL_DEVICE constexpr T ceildiv(T a, T b) {
  return (a + b - 1) / b;
}

// a // b as Python computes it: rounds toward negative infinity.
template <typename T>
TL_DEVICE constexpr T floordiv(T a, T b) {
  T q = a / b;
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

// a % b as Python computes it: the result takes the sign of b.
template <typename T>
TL_DEVICE constexpr T floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

TL_DEVICE float floordiv(float a, float b) { return floorf(a / b); }
TL_DEVICE double floordiv(double a, double b) { return floor(a / b); }
TL_DEVICE float floormod(float a, float b) { return a - floorf(a / b) * b; }
TL_DEVICE double floormod(double a, double b) { return a - floor(a / b) * b; }

template <typename T>
TL_DEVICE constexpr T min(T a, T b) {
  return a < b ? a : b;
}

template <typename T>
TL_DEVICE constexpr T max(T a, T b) {
  return a > b ? a : b;
}

// ---------------------------------------------------------------- atomics

namespace detail {

// A compare-and-swap loop for the (type, op) pairs the hardware has no instruction for.
// Bits is the unsigned integer type of T's width; atomicCAS on 16 bits needs sm_70.
template <typename T, typename Bits, typename Op>
TL_DEVICE T atomic_cas_loop(T* address, T val, Op op) {
  Bits* bits = reinterpret_cast<Bits*>(address);
  Bits old = *bits;
  Bits assumed;
  do {
    assumed = old;
    T current = *reinterpret_cast<T*>(&assumed);
    T next = op(current, val);
    old = atomicCAS(bits, assumed, *reinterpret_cast<Bits*>(&next));
  } while (assumed != old);
  return *reinterpret_cast<T*>(&old);
}

struct MaxOp {
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};

struct MinOp {
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};

struct HalfMaxOp {
  TL_DEVICE half_t operator()(half_t a, half_t b) const { return __hmax(a, b); }
  TL_DEVICE bfloat16_t operator()(bfloat16_t a, bfloat16_t b) const { return __hmax(a, b); }
};

struct HalfMinOp {
  TL_DEVICE half_t operator()(half_t a, half_t b) const { return __hmin(a, b); }
  TL_DEVICE bfloat16_t operator()(bfloat16_t a, bfloat16_t b) const { return __hmin(a, b); }
};

}  // namespace detail

}  // namespace tl

// Each returns the value held at `address` before the update, like atomicAdd.
TL_DEVICE float tl_atomic_add(float* address, float val) { return atomicAdd(address, val); }
TL_DEVICE double tl_atomic_add(double* address, double val) { return atomicAdd(address, val); }
TL_DEVICE half_t tl_atomic_add(half_t* address, half_t val) { return atomicAdd(address, val); }
TL_DEVICE bfloat16_t tl_atomic_add(bfloat16_t* address, bfloat16_t val) { return atomicAdd(address, val); }
TL_DEVICE int32_t tl_atomic_add(int32_t* address, int32_t val) { return atomicAdd(address, val); }
TL_DEVICE uint32_t tl_atomic_add(uint32_t* address, uint32_t val) { return atomicAdd(address, val); }
TL_DEVICE int64_t tl_atomic_add(int64_t* address, int64_t val) {
  // Two's complement: an unsigned add is a signed add.
  return static_cast<int64_t>(atomicAdd(reinterpret_cast<unsigned long long*>(address),
                                        static_cast<unsigned long long>(val)));
}

TL_DEVICE int32_t tl_atomic_max(int32_t* address, int32_t val) { return atomicMax(address, val); }
TL_DEVICE uint32_t tl_atomic_max(uint32_t* address, uint32_t val) { return atomicMax(address, val); }
TL_DEVICE int64_t tl_atomic_max(int64_t* address, int64_t val) {
  return atomicMax(reinterpret_cast<long long*>(address), static_cast<long long>(val));
}
TL_DEVICE float tl_atomic_max(float* address, float val) {
  return tl::detail::atomic_cas_loop<float, unsigned int>(address, val, tl::detail::MaxOp());
}
TL_DEVICE double tl_atomic_max(double* address, double val) {
  return tl::detail::atomic_cas_loop<double, unsigned long long>(address, val, tl::detail::MaxOp());
}
TL_DEVICE half_t tl_atomic_max(half_t* address, half_t val) {
  return tl::detail::atomic_cas_loop<half_t, unsigned short>(address, val, tl::detail::HalfMaxOp());
}
TL_DEVICE bfloat16_t tl_atomic_max(bfloat16_t* address, bfloat16_t val) {
  return tl::detail::atomic_cas_loop<bfloat16_t, unsigned short>(address, val, tl::detail::HalfMaxOp());
}

TL_DEVICE int32_t tl_atomic_min(int32_t* address, int32_t val) { return atomicMin(address, val); }
TL_DEVICE uint32_t tl_atomic_min(uint32_t* address, uint32_t val) { return atomicMin(address, val); }
TL_DEVICE int64_t tl_atomic_min(int64_t* address, int64_t val) {
  return atomicMin(reinterpret_cast<long long*>(address), static_cast<long long>(val));
}
TL_DEVICE float tl_atomic_min(float* address, float val) {
  return tl::detail::atomic_cas_loop<float, unsigned int>(address, val, tl::detail::MinOp());
}
TL_DEVICE double tl_atomic_min(double* address, double val) {
  return tl::detail::atomic_cas_loop<double, unsigned long long>(address, val, tl::detail::MinOp());
}
TL_DEVICE half_t tl_atomic_min(half_t* address, half_t val) {
  return tl::detail::atomic_cas_loop<half_t, unsigned short>(address, val, tl::detail::HalfMinOp());
}
TL_DEVICE bfloat16_t tl_atomic_min(bfloat16_t* address, bfloat16_t val) {
  return tl::detail::atomic_cas_loop<bfloat16_t, unsigned short>(address, val, tl::detail::HalfMinOp());
}

// ---------------------------------------------------------------- dp4a

// T.dp4a: *c += a[0]*b[0] + ... + a[3]*b[3] over signed bytes, one IDP4A (sm_61+). The
// bytes are gathered with memcpy, which makes no alignment demand on a and b (an int8 local
// array is only byte-aligned) and still compiles to one 32-bit move where they are aligned.
TL_DEVICE void tl_dp4a(const int8_t* a, const int8_t* b, int32_t* c) {
  int a4, b4;
  memcpy(&a4, a, 4);
  memcpy(&b4, b, 4);
  *c = __dp4a(a4, b4, *c);
}

// ---------------------------------------------------------------- device assert

// Prints where the assertion failed, then traps: the launch fails with
// CUDA_ERROR_LAUNCH_FAILED / an illegal-instruction error the runtime reports on the next
// synchronize. `where` is the user's source location as "file:line" (may be "").
TL_DEVICE_NOINLINE void tl_device_assert_fail(const char* message, const char* where) {
  printf("%s: device assertion failed: %s [block (%d,%d,%d), thread (%d,%d,%d)]\n", where, message,
         (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x, (int)threadIdx.y,
         (int)threadIdx.z);
  __trap();
}

TL_DEVICE void tl_device_assert(bool condition, const char* message, const char* where = "") {
  if (!condition) {
    tl_device_assert_fail(message, where);
  }
}
