/* Runtime helpers of the tilelang-core CPU backend, included by every generated kernel.

   A kernel is an exported C function `int32_t entry(params...)` that loops over its own grid
   (OpenMP over blocks); it returns 0, or 1 when a device assertion failed, in which case
   `tl_cpu_last_error()` holds the message. Builds with gcc and clang in C11 (gnu11). */
#ifndef TL_CPU_H_
#define TL_CPU_H_

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TL_EXPORT __attribute__((visibility("default")))
#define TL_ALIGNED(n) __attribute__((aligned(n)))
#define TL_HELPER static inline __attribute__((always_inline, unused))

/* ---- min / max (NaN-propagating for floats, like numpy) --------------------------------- */
#define tl_max(a, b) __extension__({ __typeof__(a) tl_a_ = (a); __typeof__(b) tl_b_ = (b); \
    (tl_a_ > tl_b_ || tl_a_ != tl_a_) ? tl_a_ : tl_b_; })
#define tl_min(a, b) __extension__({ __typeof__(a) tl_a_ = (a); __typeof__(b) tl_b_ = (b); \
    (tl_a_ < tl_b_ || tl_a_ != tl_a_) ? tl_a_ : tl_b_; })

/* ---- 16-bit floats: stored as 16 bits, computed in float -------------------------------- */
TL_HELPER uint32_t tl_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
TL_HELPER float tl_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

#if defined(__FLT16_MAX__)
typedef _Float16 tl_half;
TL_HELPER float tl_half_to_float(tl_half h) { return (float)h; }
TL_HELPER tl_half tl_float_to_half(float f) { return (tl_half)f; }
#else
typedef uint16_t tl_half;
TL_HELPER float tl_half_to_float(tl_half h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1fu) return tl_bits_f32(sign | 0x7f800000u | (man << 13));      /* inf, nan */
  if (exp == 0) {                                                                /* subnormal */
    float f = (float)man * 5.9604644775390625e-8f;                               /* 2^-24 */
    return sign ? -f : f;
  }
  return tl_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}
TL_HELPER tl_half tl_float_to_half(float f) {
  uint32_t u = tl_f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (tl_half)(sign | 0x7e00u);                          /* nan */
  if (a >= 0x477ff000u) return (tl_half)(sign | 0x7c00u);                         /* overflow */
  if (a < 0x38800000u) {                                                          /* subnormal */
    float m = tl_bits_f32(a) * 16777216.0f;                                       /* 2^24 */
    return (tl_half)(sign | (uint32_t)nearbyintf(m));
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u);                                     /* round even */
  return (tl_half)(sign | ((r - 0x38000000u) >> 13));
}
#endif
TL_HELPER float tl_round_half(float f) { return tl_half_to_float(tl_float_to_half(f)); }

typedef uint16_t tl_bfloat16;
TL_HELPER float tl_bf16_to_float(tl_bfloat16 h) { return tl_bits_f32((uint32_t)h << 16); }
TL_HELPER tl_bfloat16 tl_float_to_bf16(float f) {
  uint32_t u = tl_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (tl_bfloat16)((u >> 16) | 0x40u);  /* quiet nan */
  u += 0x7fffu + ((u >> 16) & 1u);                                                /* round even */
  return (tl_bfloat16)(u >> 16);
}
TL_HELPER float tl_round_bf16(float f) { return tl_bf16_to_float(tl_float_to_bf16(f)); }

/* ---- exp / exp2 for float32: inline, branch-free, so loops that call them vectorize --------
   glibc's expf/exp2f are calls the vectorizer cannot widen without -ffast-math. These are
   within 1.1 ulp of the exact result over all float inputs (tests/cpu/test_cpu_math.py), with
   IEEE results at the edges: NaN -> NaN, +inf and overflow -> +inf, -inf -> +0, gradual
   underflow through the subnormals to +0. They assume round-to-nearest (the default mode).

   x = n + r with n an integer and |r| <= 1/2 (exp2) or |r| <= ln2/2 (exp); 2^r or e^r is a
   degree-6 polynomial (relative-error fit of its coefficients in float32); 2^n is applied as
   two normal powers of two, so a subnormal result is rounded once. */
#define TL_ROUND_SHIFT_ 0x1.8p23f /* x + shift - shift rounds |x| < 2^22 to an integer */

TL_HELPER float tl_exp_scale_(float p, float shifted_n) {
  /* p * 2^n, n in [-151, 129] read from the low bits of shifted_n = n + TL_ROUND_SHIFT_ */
  uint32_t n = tl_f32_bits(shifted_n) - tl_f32_bits(TL_ROUND_SHIFT_);
  uint32_t n1 = (uint32_t)((int32_t)n >> 1), n2 = n - n1;
  return p * tl_bits_f32((n1 + 127u) << 23) * tl_bits_f32((n2 + 127u) << 23);
}

TL_HELPER float tl_exp2f(float x) {
  x = x < -151.0f ? -151.0f : x; /* a NaN fails both tests and stays NaN */
  x = x > 129.0f ? 129.0f : x;
  float z = x + TL_ROUND_SHIFT_;
  float r = x - (z - TL_ROUND_SHIFT_); /* exact */
  float p = 0x1.41fbb6p-13f;
  p = p * r + 0x1.5f3e58p-10f;
  p = p * r + 0x1.3b2d4ep-7f;
  p = p * r + 0x1.c6aee8p-5f;
  p = p * r + 0x1.ebfbdcp-3f;
  p = p * r + 0x1.62e430p-1f;
  p = p * r + 1.0f;
  return tl_exp_scale_(p, z);
}

TL_HELPER float tl_expf(float x) {
  x = x < -104.0f ? -104.0f : x; /* e^-104 < 2^-150: rounds to 0; e^89 overflows */
  x = x > 89.0f ? 89.0f : x;
  float z = x * 0x1.715476p+0f + TL_ROUND_SHIFT_; /* round(x / ln2) */
  float n = z - TL_ROUND_SHIFT_;
  /* Cody-Waite: ln2 = hi + lo with n * hi exact, so x - n * hi is exact */
  float r = (x - n * 0x1.62e400p-1f) - n * 0x1.7f7d1cp-20f;
  float p = 0x1.6ae72ap-10f;
  p = p * r + 0x1.126784p-7f;
  p = p * r + 0x1.555822p-5f;
  p = p * r + 0x1.55541ap-3f;
  p = p * r + 0x1.fffffcp-2f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return tl_exp_scale_(p, z);
}

/* ---- atomics --------------------------------------------------------------------------
   tl_atomic_<op>_<type>(address, value, order) returns the old value; tl_atomic_load_<type>
   and tl_atomic_store_<type> read and write. `order` is a GCC __ATOMIC_* memory order (the
   kernel passes a constant, so the inlined builtins see one). 16-bit floats are computed in
   float: their helpers take and return float and round the result to the stored type. */
#define TL_CAS_FAILURE_ORDER(o) \
  ((o) == __ATOMIC_RELEASE ? __ATOMIC_RELAXED : (o) == __ATOMIC_ACQ_REL ? __ATOMIC_ACQUIRE : (o))
/* a read-modify-write of a float type T stored as the bits U, computed in C (float for 16-bit
   types): TO_C converts stored -> computed, FROM_C computed -> stored */
#define TL_ATOMIC_CAS_FLOAT(NAME, T, U, C, TO_C, FROM_C, OP)                                \
  TL_HELPER C NAME(T* addr, C v, int order) {                                             \
    U* p = (U*)addr;                                                                      \
    U old = __atomic_load_n(p, __ATOMIC_RELAXED), desired;                                \
    T o, n;                                                                               \
    do {                                                                                  \
      memcpy(&o, &old, sizeof(T));                                                        \
      n = FROM_C(OP(TO_C(o), v));                                                         \
      memcpy(&desired, &n, sizeof(T));                                                    \
    } while (!__atomic_compare_exchange_n(p, &old, desired, 1, order,                     \
                                          TL_CAS_FAILURE_ORDER(order)));                  \
    return TO_C(o);                                                                       \
  }
#define TL_ATOMIC_CAS_INT(NAME, T, OP)                                                    \
  TL_HELPER T NAME(T* addr, T v, int order) {                                             \
    T old = __atomic_load_n(addr, __ATOMIC_RELAXED);                                      \
    while (!__atomic_compare_exchange_n(addr, &old, OP(old, v), 1, order,                 \
                                        TL_CAS_FAILURE_ORDER(order))) {                   \
    }                                                                                     \
    return old;                                                                           \
  }
#define TL_ATOMIC_FETCH_INT(NAME, T, BUILTIN)                                             \
  TL_HELPER T NAME(T* addr, T v, int order) { return BUILTIN(addr, v, order); }
#define TL_ATOMIC_LOAD_STORE(SUFFIX, T, U, C, TO_C, FROM_C)                               \
  TL_HELPER C tl_atomic_load_##SUFFIX(const T* addr, int order) {                         \
    U bits = __atomic_load_n((const U*)addr, order);                                      \
    T v;                                                                                  \
    memcpy(&v, &bits, sizeof(T));                                                         \
    return TO_C(v);                                                                       \
  }                                                                                       \
  TL_HELPER void tl_atomic_store_##SUFFIX(T* addr, C value, int order) {                  \
    T v = FROM_C(value);                                                                  \
    U bits;                                                                               \
    memcpy(&bits, &v, sizeof(T));                                                         \
    __atomic_store_n((U*)addr, bits, order);                                              \
  }
#define TL_OP_ADD(a, b) ((a) + (b))
#define TL_OP_MAX(a, b) tl_max(a, b)
#define TL_OP_MIN(a, b) tl_min(a, b)
#define TL_SAME(x) (x)
#define TL_FLOAT_OPS(SUFFIX, T, U, C, TO_C, FROM_C)                                       \
  TL_ATOMIC_CAS_FLOAT(tl_atomic_add_##SUFFIX, T, U, C, TO_C, FROM_C, TL_OP_ADD)           \
  TL_ATOMIC_CAS_FLOAT(tl_atomic_max_##SUFFIX, T, U, C, TO_C, FROM_C, TL_OP_MAX)           \
  TL_ATOMIC_CAS_FLOAT(tl_atomic_min_##SUFFIX, T, U, C, TO_C, FROM_C, TL_OP_MIN)           \
  TL_ATOMIC_LOAD_STORE(SUFFIX, T, U, C, TO_C, FROM_C)
#define TL_INT_OPS(SUFFIX, T)                                                             \
  TL_ATOMIC_FETCH_INT(tl_atomic_add_##SUFFIX, T, __atomic_fetch_add)                      \
  TL_ATOMIC_FETCH_INT(tl_atomic_or_##SUFFIX, T, __atomic_fetch_or)                        \
  TL_ATOMIC_CAS_INT(tl_atomic_max_##SUFFIX, T, TL_OP_MAX)                                 \
  TL_ATOMIC_CAS_INT(tl_atomic_min_##SUFFIX, T, TL_OP_MIN)                                 \
  TL_ATOMIC_LOAD_STORE(SUFFIX, T, T, T, TL_SAME, TL_SAME)
TL_FLOAT_OPS(f16, tl_half, uint16_t, float, tl_half_to_float, tl_float_to_half)
TL_FLOAT_OPS(bf16, tl_bfloat16, uint16_t, float, tl_bf16_to_float, tl_float_to_bf16)
TL_FLOAT_OPS(f32, float, uint32_t, float, TL_SAME, TL_SAME)
TL_FLOAT_OPS(f64, double, uint64_t, double, TL_SAME, TL_SAME)
TL_INT_OPS(i8, int8_t)
TL_INT_OPS(u8, uint8_t)
TL_INT_OPS(i16, int16_t)
TL_INT_OPS(u16, uint16_t)
TL_INT_OPS(i32, int32_t)
TL_INT_OPS(u32, uint32_t)
TL_INT_OPS(i64, int64_t)
TL_INT_OPS(u64, uint64_t)

/* ---- per-thread scratch for block-local buffers too big for the stack ------------------- */
TL_HELPER void* tl_cpu_alloc(size_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, 64, bytes ? (bytes + 63) / 64 * 64 : 64) != 0) {
    fprintf(stderr, "tilelang-cpu: cannot allocate %zu bytes of block-local memory\n", bytes);
    abort();
  }
  return p;
}
TL_HELPER void tl_cpu_free(void* p) { free(p); }

/* ---- device_assert: the first failure's message, kept per shared library ---------------- */
static int tl_cpu_error_flag_ __attribute__((unused));
static char tl_cpu_error_message_[1024] __attribute__((unused));

TL_EXPORT const char* tl_cpu_last_error(void) {
  return __atomic_load_n(&tl_cpu_error_flag_, __ATOMIC_ACQUIRE) ? tl_cpu_error_message_ : NULL;
}
TL_HELPER void tl_cpu_begin(void) { __atomic_store_n(&tl_cpu_error_flag_, 0, __ATOMIC_RELEASE); }
TL_HELPER int tl_cpu_failed(void) { return __atomic_load_n(&tl_cpu_error_flag_, __ATOMIC_RELAXED); }
TL_HELPER int32_t tl_cpu_status(void) { return tl_cpu_failed() ? 1 : 0; }
static void __attribute__((unused, noinline, cold))
tl_cpu_fail(const char* where, const char* msg, int bx, int by, int bz) {
  if (__atomic_exchange_n(&tl_cpu_error_flag_, 2, __ATOMIC_ACQ_REL) == 0) {
    snprintf(tl_cpu_error_message_, sizeof(tl_cpu_error_message_),
             "%s: device assertion failed in block (%d, %d, %d): %s", where, bx, by, bz, msg);
    __atomic_store_n(&tl_cpu_error_flag_, 1, __ATOMIC_RELEASE);
  }
}

/* ---- integer division: a divisor that would trap (SIGFPE) fails the kernel instead ------- */
static void __attribute__((unused, noinline, cold)) tl_cpu_fault(const char* where, const char* msg) {
  if (__atomic_exchange_n(&tl_cpu_error_flag_, 2, __ATOMIC_ACQ_REL) == 0) {
    snprintf(tl_cpu_error_message_, sizeof(tl_cpu_error_message_), "%s: %s", where, msg);
    __atomic_store_n(&tl_cpu_error_flag_, 1, __ATOMIC_RELEASE);
  }
}
#define TL_CPU_DIVISOR(name, type, min)                                                        \
  TL_HELPER type name(type a, type b, const char* where) {                                     \
    if (__builtin_expect(b == 0, 0)) {                                                         \
      tl_cpu_fault(where, "integer division by zero; make the divisor nonzero or guard the "   \
                          "division with `if`");                                               \
      return 1;                                                                                \
    }                                                                                          \
    if (__builtin_expect((type)-1 < 0 && b == (type)-1 && a == (min), 0)) {                    \
      tl_cpu_fault(where, "integer division overflows: the most negative value divided by -1; " \
                          "compute it in a wider type");                                       \
      return 1;                                                                                \
    }                                                                                          \
    return b;                                                                                  \
  }
TL_CPU_DIVISOR(tl_cpu_divisor_i32, int32_t, INT32_MIN)
TL_CPU_DIVISOR(tl_cpu_divisor_i64, int64_t, INT64_MIN)
TL_CPU_DIVISOR(tl_cpu_divisor_u32, uint32_t, 0)
TL_CPU_DIVISOR(tl_cpu_divisor_u64, uint64_t, 0)

/* T.ieee_<op>(..., "rn"): one IEEE operation rounded to nearest, in a function that is never
 * inlined, so that the compiler (which runs with -ffp-contract=fast) cannot fuse it with the
 * operations around it into an FMA; C's default rounding mode is round-to-nearest-even. */
#define TL_IEEE_HELPER static __attribute__((noinline, unused))
#define TL_IEEE_RN(T, S, SQRT, FMA)                                         \
  TL_IEEE_HELPER T tl_ieee_add_rn##S(T a, T b) { T r = a + b; return r; }      \
  TL_IEEE_HELPER T tl_ieee_sub_rn##S(T a, T b) { T r = a - b; return r; }      \
  TL_IEEE_HELPER T tl_ieee_mul_rn##S(T a, T b) { T r = a * b; return r; }      \
  TL_IEEE_HELPER T tl_ieee_div_rn##S(T a, T b) { T r = a / b; return r; }      \
  TL_IEEE_HELPER T tl_ieee_rcp_rn##S(T a) { T r = (T)1 / a; return r; }        \
  TL_IEEE_HELPER T tl_ieee_sqrt_rn##S(T a) { return SQRT(a); }                 \
  TL_IEEE_HELPER T tl_ieee_rsqrt_rn##S(T a) { T s = SQRT(a); T r = (T)1 / s; return r; } \
  TL_IEEE_HELPER T tl_ieee_fma_rn##S(T a, T b, T c) { return FMA(a, b, c); }
TL_IEEE_RN(float, f, sqrtf, fmaf)
TL_IEEE_RN(double, d, sqrt, fma)
#undef TL_IEEE_RN
#undef TL_IEEE_HELPER

#endif /* TL_CPU_H_ */
