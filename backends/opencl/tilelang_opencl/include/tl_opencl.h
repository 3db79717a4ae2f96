/* Device helpers of tilelang-opencl: what the OpenCL dialect of the printer calls.
   OpenCL C 1.2; compiled into every program (the runtime builds from source).

   - fixed-width integer names (the core's helpers and the printer spell int32_t, ...);
   - float16 and bfloat16 stored as 16-bit words (ushort) and computed in float: OpenCL 1.2
     allows `half` only behind a pointer, so conversions go through vload_half/vstore_half_rte
     (core OpenCL, no cl_khr_fp16 needed) and bit operations for bfloat16;
   - atomics on __global and __local memory, overloaded by type: the built-in ones for 32-bit
     (and, with cl_khr_int64_*_atomics, 64-bit) integers, a compare-and-swap loop on the bits
     for float and double; each returns the previous value. */
#ifndef TL_OPENCL_H
#define TL_OPENCL_H

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define TL_HAS_FP64 1
#endif
#ifdef cl_khr_int64_base_atomics
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define TL_HAS_INT64_ATOMICS 1
#endif
#ifdef cl_khr_int64_extended_atomics
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#endif

typedef char int8_t;
typedef uchar uint8_t;
typedef short int16_t;
typedef ushort uint16_t;
typedef int int32_t;
typedef uint uint32_t;
typedef long int64_t;
typedef ulong uint64_t;

#define TL_OVERLOAD __attribute__((overloadable))

/* -- 16-bit floats -------------------------------------------------------------------------- */

inline float tl_half_to_float(ushort h) { return vload_half(0, (const __private half*)&h); }
inline ushort tl_float_to_half(float f) {
  ushort h;
  vstore_half_rte(f, 0, (__private half*)&h);
  return h;
}
inline float tl_round_half(float f) { return tl_half_to_float(tl_float_to_half(f)); }

inline float tl_bf16_to_float(ushort h) { return as_float((uint)h << 16); }
inline ushort tl_float_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);                                          /* nearest even */
  return (ushort)(u >> 16);
}
inline float tl_round_bf16(float f) { return tl_bf16_to_float(tl_float_to_bf16(f)); }

/* -- atomics -------------------------------------------------------------------------------- */

/* integers: the built-in functions (atomic_* for 32 bits, atom_* for 64 bits) */
#define TL_INT_ATOMICS(SPACE, T, ADD, MAX, MIN, XCHG)                                              \
  TL_OVERLOAD inline T tl_atomic_add(volatile SPACE T* p, T v) { return ADD(p, v); }               \
  TL_OVERLOAD inline T tl_atomic_max(volatile SPACE T* p, T v) { return MAX(p, v); }               \
  TL_OVERLOAD inline T tl_atomic_min(volatile SPACE T* p, T v) { return MIN(p, v); }               \
  TL_OVERLOAD inline T tl_atomic_load(volatile SPACE T* p) { return *p; }                          \
  TL_OVERLOAD inline T tl_atomic_store(volatile SPACE T* p, T v) { return XCHG(p, v); }

/* floats: compare-and-swap on the bit pattern until no other work-item came between */
#define TL_FLOAT_ATOMIC(SPACE, T, BITS, AS_BITS, AS_T, CMPXCHG, NAME, COMBINE)                     \
  TL_OVERLOAD inline T NAME(volatile SPACE T* p, T v) {                                            \
    volatile SPACE BITS* q = (volatile SPACE BITS*)p;                                              \
    BITS old = *q, seen;                                                                           \
    do {                                                                                           \
      seen = old;                                                                                  \
      T now = COMBINE(AS_T(seen), v);                                                              \
      old = CMPXCHG(q, seen, AS_BITS(now));                                                        \
    } while (old != seen);                                                                         \
    return AS_T(old);                                                                              \
  }
#define TL_ADD(a, b) ((a) + (b))
#define TL_FLOAT_ATOMICS(SPACE, T, BITS, AS_BITS, AS_T, CMPXCHG, XCHG)                             \
  TL_FLOAT_ATOMIC(SPACE, T, BITS, AS_BITS, AS_T, CMPXCHG, tl_atomic_add, TL_ADD)                   \
  TL_FLOAT_ATOMIC(SPACE, T, BITS, AS_BITS, AS_T, CMPXCHG, tl_atomic_max, fmax)                     \
  TL_FLOAT_ATOMIC(SPACE, T, BITS, AS_BITS, AS_T, CMPXCHG, tl_atomic_min, fmin)                     \
  TL_OVERLOAD inline T tl_atomic_load(volatile SPACE T* p) { return *p; }                          \
  TL_OVERLOAD inline T tl_atomic_store(volatile SPACE T* p, T v) {                                 \
    return AS_T(XCHG((volatile SPACE BITS*)p, AS_BITS(v)));                                        \
  }

TL_INT_ATOMICS(__global, int, atomic_add, atomic_max, atomic_min, atomic_xchg)
TL_INT_ATOMICS(__global, uint, atomic_add, atomic_max, atomic_min, atomic_xchg)
TL_INT_ATOMICS(__local, int, atomic_add, atomic_max, atomic_min, atomic_xchg)
TL_INT_ATOMICS(__local, uint, atomic_add, atomic_max, atomic_min, atomic_xchg)
TL_FLOAT_ATOMICS(__global, float, uint, as_uint, as_float, atomic_cmpxchg, atomic_xchg)
TL_FLOAT_ATOMICS(__local, float, uint, as_uint, as_float, atomic_cmpxchg, atomic_xchg)
#ifdef TL_HAS_INT64_ATOMICS
TL_INT_ATOMICS(__global, long, atom_add, atom_max, atom_min, atom_xchg)
TL_INT_ATOMICS(__global, ulong, atom_add, atom_max, atom_min, atom_xchg)
TL_INT_ATOMICS(__local, long, atom_add, atom_max, atom_min, atom_xchg)
TL_INT_ATOMICS(__local, ulong, atom_add, atom_max, atom_min, atom_xchg)
#ifdef TL_HAS_FP64
TL_FLOAT_ATOMICS(__global, double, ulong, as_ulong, as_double, atom_cmpxchg, atom_xchg)
TL_FLOAT_ATOMICS(__local, double, ulong, as_ulong, as_double, atom_cmpxchg, atom_xchg)
#endif
#endif

#endif /* TL_OPENCL_H */
