// Host versions of the helpers of tilelang_hip/include/tl_hip_common.h (tests only).
#pragma once

#include <hip/hip_runtime.h>

#include <atomic>
#include <type_traits>

#define TL_DEVICE inline
#define TL_HOST_DEVICE inline
#define TL_WAVEFRONT_SIZE 64

using half_t = _Float16;
struct bfloat16_t {
  uint16_t bits;
};

TL_DEVICE float tl_to_float(float x) { return x; }
TL_DEVICE float tl_to_float(int8_t x) { return x; }
TL_DEVICE float tl_to_float(int x) { return static_cast<float>(x); }
TL_DEVICE float tl_to_float(half_t x) { return static_cast<float>(x); }
TL_DEVICE float tl_to_float(bfloat16_t x) {
  uint32_t u = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename T> TL_DEVICE T tl_from_float(float x) { return static_cast<T>(x); }
template <> TL_DEVICE bfloat16_t tl_from_float<bfloat16_t>(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu)) return bfloat16_t{static_cast<uint16_t>((u >> 16) | 0x40)};
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even
  return bfloat16_t{static_cast<uint16_t>(u >> 16)};
}
#include "tl_hip_fp8.h"  // the backend's own: plain C++, the conversions under test
template <> TL_DEVICE fp8_e4m3fnuz_t tl_from_float<fp8_e4m3fnuz_t>(float x) { return {fp8_e4m3fnuz_t::encode(x)}; }
template <> TL_DEVICE fp8_e5m2fnuz_t tl_from_float<fp8_e5m2fnuz_t>(float x) { return {fp8_e5m2fnuz_t::encode(x)}; }
template <typename T> TL_DEVICE float tl_round(float x) { return tl_to_float(tl_from_float<T>(x)); }

template <typename T> TL_DEVICE T tl_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> TL_DEVICE T tl_min(T a, T b) { return (a < b || a != a) ? a : b; }

template <typename T> TL_DEVICE T tl_atomic_add(T* addr, T v) {
  std::atomic_ref<T> ref(*addr);
  if constexpr (std::is_floating_point_v<T>) {
    T old = ref.load();
    while (!ref.compare_exchange_weak(old, old + v)) {
    }
    return old;
  } else {
    return ref.fetch_add(v);
  }
}
template <typename T> TL_DEVICE T tl_atomic_max(T* addr, T v) {
  std::atomic_ref<T> ref(*addr);
  T old = ref.load();
  while (old < v && !ref.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <typename T> TL_DEVICE T tl_atomic_min(T* addr, T v) {
  std::atomic_ref<T> ref(*addr);
  T old = ref.load();
  while (old > v && !ref.compare_exchange_weak(old, v)) {
  }
  return old;
}

#define TL_DEVICE_ASSERT(cond, msg)                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::printf("device_assert(%s) failed: %s\n", #cond, (msg));                      \
      tl_emu_current.failed = 1;                                                        \
    }                                                                                   \
  } while (0)

// __shfl_xor: every lane of the wave publishes its value, then reads its partner's.
template <typename T> TL_DEVICE T tl_shfl_xor(T v, int mask, int width) {
  tl_emu_wave& wave = tl_emu_current.waves[tl_emu_flat_thread / 64];
  const int lane = tl_emu_flat_thread % 64;
  wave.lanes[lane] = static_cast<double>(v);
  wave.sync->arrive_and_wait();
  const int partner = (lane & ~(width - 1)) | ((lane ^ mask) & (width - 1));
  const T other = static_cast<T>(wave.lanes[partner]);
  wave.sync->arrive_and_wait();
  return other;
}
