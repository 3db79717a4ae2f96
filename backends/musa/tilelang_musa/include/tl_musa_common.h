// Device helpers every generated MUSA kernel includes: element types, min/max, atomics,
// shuffles and device_assert. Written for mcc (the MUSA SDK's clang-based compiler); in a
// syntax check (TL_MUSA_SYNTAX_CHECK) the SDK is stood in for by check/musa_sdk.h, which
// declares exactly the SDK names used here and in the generated code.
#pragma once

#if defined(TL_MUSA_SYNTAX_CHECK)
#include "check/musa_sdk.h"
#else
#include <musa_runtime.h>
#include <stdint.h>
#endif

#define TL_DEVICE __device__ __forceinline__

// ---------------------------------------------------------------------------------------------
// Low-precision storage types. A float16/bfloat16/float8 element is stored in its own 8- or
// 16-bit pattern, loaded as float, computed in float and rounded back on store (to nearest
// even), with the conversions written here in integer arithmetic: they need nothing from the
// SDK and give the same bits on every arch.
// ---------------------------------------------------------------------------------------------

struct tl_half_t { uint16_t bits; };
struct tl_bfloat16_t { uint16_t bits; };
struct tl_fp8_e4m3_t { uint8_t bits; };
struct tl_fp8_e5m2_t { uint8_t bits; };

TL_DEVICE uint32_t tl_float_bits(float x) { return __builtin_bit_cast(uint32_t, x); }
TL_DEVICE float tl_bits_float(uint32_t b) { return __builtin_bit_cast(float, b); }

// A float as a narrow float with `mant` mantissa bits, exponent bias `bias`, largest finite
// exponent field `max_exp` and infinities or not (fp8 e4m3fn has none: it saturates to NaN).
// Returns the sign-less bit pattern; rounding to nearest even, subnormals kept.
TL_DEVICE uint32_t tl_narrow(float x, int mant, int bias, int max_exp_field, bool has_inf,
                             uint32_t nan_bits, uint32_t max_finite_bits) {
  uint32_t f = tl_float_bits(x) & 0x7fffffffu;
  if (f > 0x7f800000u) return nan_bits;  // NaN
  int shift = 23 - mant;
  int exp = (int)(f >> 23) - 127 + bias;  // biased exponent in the narrow format
  uint32_t result;
  if (exp >= 1) {
    uint32_t m = f & 0x7fffffu;
    uint32_t rest = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    result = ((uint32_t)exp << mant) | (m >> shift);
    if (rest > half || (rest == half && (result & 1u))) result += 1;  // may carry into the exponent
  } else {
    // subnormal in the narrow format: value = m * 2^(1 - bias - mant)
    int total = shift + 1 - exp;  // bits to drop from the 24-bit significand
    if (total > 24) return 0;
    uint32_t m = (f & 0x7fffffu) | 0x800000u;
    if (f < 0x00800000u) m = f & 0x7fffffu;  // a float subnormal is far below any narrow subnormal
    uint32_t rest = m & ((1u << total) - 1);
    uint32_t half = 1u << (total - 1);
    result = m >> total;
    if (rest > half || (rest == half && (result & 1u))) result += 1;
  }
  uint32_t inf_bits = (uint32_t)(max_exp_field + 1) << mant;
  if (has_inf) {
    if (f == 0x7f800000u || result >= inf_bits) return inf_bits;
  } else if (f == 0x7f800000u || result > max_finite_bits) {
    return nan_bits;
  }
  return result;
}

// The narrow pattern back to float (exact).
TL_DEVICE float tl_widen(uint32_t bits, int mant, int exp_bits, int bias, bool has_inf, uint32_t nan_bits) {
  uint32_t sign = bits >> (mant + exp_bits);
  uint32_t mag = bits & ((1u << (mant + exp_bits)) - 1);
  float value;
  if (!has_inf && mag == nan_bits) {
    value = __builtin_nanf("");
  } else {
    uint32_t e = mag >> mant, m = mag & ((1u << mant) - 1);
    if (has_inf && e == (1u << exp_bits) - 1) {
      value = m ? __builtin_nanf("") : __builtin_huge_valf();
    } else if (e == 0) {
      value = (float)m * tl_bits_float((uint32_t)(127 + 1 - bias - mant) << 23);
    } else {
      value = tl_bits_float(((e - bias + 127) << 23) | (m << (23 - mant)));
    }
  }
  return sign ? -value : value;
}

TL_DEVICE uint32_t tl_sign16(float x) { return (tl_float_bits(x) >> 16) & 0x8000u; }
TL_DEVICE uint32_t tl_sign8(float x) { return (tl_float_bits(x) >> 24) & 0x80u; }

TL_DEVICE float tl_to_float(tl_half_t x) { return tl_widen(x.bits, 10, 5, 15, true, 0); }
TL_DEVICE float tl_to_float(tl_bfloat16_t x) { return tl_bits_float((uint32_t)x.bits << 16); }
TL_DEVICE float tl_to_float(tl_fp8_e4m3_t x) { return tl_widen(x.bits, 3, 4, 7, false, 0x7f); }
TL_DEVICE float tl_to_float(tl_fp8_e5m2_t x) { return tl_widen(x.bits, 2, 5, 15, true, 0); }

template <typename T> TL_DEVICE T tl_from_float(float x);
template <> TL_DEVICE tl_half_t tl_from_float<tl_half_t>(float x) {
  return {(uint16_t)(tl_sign16(x) | tl_narrow(x, 10, 15, 30, true, 0x7e00u, 0x7bffu))};
}
template <> TL_DEVICE tl_bfloat16_t tl_from_float<tl_bfloat16_t>(float x) {
  uint32_t b = tl_float_bits(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return {(uint16_t)((b >> 16) | 0x40u)};  // quiet NaN
  return {(uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16)};
}
template <> TL_DEVICE tl_fp8_e4m3_t tl_from_float<tl_fp8_e4m3_t>(float x) {
  return {(uint8_t)(tl_sign8(x) | tl_narrow(x, 3, 7, 15, false, 0x7fu, 0x7eu))};
}
template <> TL_DEVICE tl_fp8_e5m2_t tl_from_float<tl_fp8_e5m2_t>(float x) {
  return {(uint8_t)(tl_sign8(x) | tl_narrow(x, 2, 15, 30, true, 0x7fu, 0x7bu))};
}

// A float rounded through a storage type (a cast to float16 inside an expression).
template <typename T> TL_DEVICE float tl_round(float x) { return tl_to_float(tl_from_float<T>(x)); }

// ---------------------------------------------------------------------------------------------
// min/max of generated code: a NaN operand wins (TIR's max/min semantics).
// ---------------------------------------------------------------------------------------------

template <typename T> TL_DEVICE T tl_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> TL_DEVICE T tl_min(T a, T b) { return (a < b || a != a) ? a : b; }

// ---------------------------------------------------------------------------------------------
// Atomics: each returns the value held before the update.
// ---------------------------------------------------------------------------------------------

TL_DEVICE int tl_atomic_add(int* address, int value) { return atomicAdd(address, value); }
TL_DEVICE float tl_atomic_add(float* address, float value) { return atomicAdd(address, value); }
TL_DEVICE int tl_atomic_max(int* address, int value) { return atomicMax(address, value); }
TL_DEVICE int tl_atomic_min(int* address, int value) { return atomicMin(address, value); }

// ---------------------------------------------------------------------------------------------
// Warp shuffles: the value of lane (lane ^ mask). A butterfly with masks below a power-of-two
// group size never leaves the group.
// ---------------------------------------------------------------------------------------------

template <typename T> TL_DEVICE T tl_shfl_xor(T value, int mask) {
  return __shfl_xor_sync(0xffffffffu, value, mask);
}

// ---------------------------------------------------------------------------------------------
// device_assert: print where and what, then trap (the launch fails; the runtime reports it at
// the next synchronize).
// ---------------------------------------------------------------------------------------------

TL_DEVICE void tl_device_assert_fail(const char* cond, const char* msg, const char* kernel) {
  printf("%s: block (%d,%d,%d) thread (%d,%d,%d): device_assert(%s) failed: %s\n", kernel,
         (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x, (int)threadIdx.y,
         (int)threadIdx.z, cond, msg);
  __builtin_trap();
}

#define TL_DEVICE_ASSERT(cond, msg, kernel)                                                     \
  do {                                                                                          \
    if (!(cond)) tl_device_assert_fail(#cond, (msg), (kernel));                                 \
  } while (0)
