// Device helpers of tilelang-metal, pasted into every generated MSL source (torch.mps compiles
// one string, with no include path). Plain MSL: nothing here exists only for the clang check.
//
// Integer floor division (TIR's floordiv/floormod): the quotient rounds toward negative
// infinity and the remainder takes the divisor's sign.
inline int tl_floordiv_i32(int a, int b) {
  int q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline int tl_floormod_i32(int a, int b) {
  int r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
inline long tl_floordiv_i64(long a, long b) {
  long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline long tl_floormod_i64(long a, long b) {
  long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Math MSL lacks. log1p: Goldberg's correction keeps full accuracy for small x; hypot scales
// by the larger magnitude so that squaring cannot overflow.
inline float tl_log1p(float x) {
  float u = 1.0f + x;
  return u == 1.0f ? x : precise::log(u) * (x / (u - 1.0f));
}
inline float tl_hypot(float x, float y) {
  float ax = metal::fabs(x), ay = metal::fabs(y);
  float hi = metal::max(ax, ay), lo = metal::min(ax, ay);
  if (hi == 0.0f || metal::isinf(hi)) return hi;
  float r = lo / hi;
  return hi * precise::sqrt(1.0f + r * r);
}

// Relaxed atomics on device memory (MSL's only memory order for them); each returns the old
// value. atomic_float is MSL 3.0 (add, load, store only).
inline int tl_atomic_add(device int* p, int v) {
  return atomic_fetch_add_explicit((volatile device atomic_int*)p, v, memory_order_relaxed);
}
inline uint tl_atomic_add(device uint* p, uint v) {
  return atomic_fetch_add_explicit((volatile device atomic_uint*)p, v, memory_order_relaxed);
}
inline float tl_atomic_add(device float* p, float v) {
  return atomic_fetch_add_explicit((volatile device atomic_float*)p, v, memory_order_relaxed);
}
inline int tl_atomic_max(device int* p, int v) {
  return atomic_fetch_max_explicit((volatile device atomic_int*)p, v, memory_order_relaxed);
}
inline uint tl_atomic_max(device uint* p, uint v) {
  return atomic_fetch_max_explicit((volatile device atomic_uint*)p, v, memory_order_relaxed);
}
inline int tl_atomic_min(device int* p, int v) {
  return atomic_fetch_min_explicit((volatile device atomic_int*)p, v, memory_order_relaxed);
}
inline uint tl_atomic_min(device uint* p, uint v) {
  return atomic_fetch_min_explicit((volatile device atomic_uint*)p, v, memory_order_relaxed);
}
inline int tl_atomic_or(device int* p, int v) {
  return atomic_fetch_or_explicit((volatile device atomic_int*)p, v, memory_order_relaxed);
}
inline uint tl_atomic_or(device uint* p, uint v) {
  return atomic_fetch_or_explicit((volatile device atomic_uint*)p, v, memory_order_relaxed);
}
inline int tl_atomic_load(device int* p) {
  return atomic_load_explicit((volatile device atomic_int*)p, memory_order_relaxed);
}
inline uint tl_atomic_load(device uint* p) {
  return atomic_load_explicit((volatile device atomic_uint*)p, memory_order_relaxed);
}
inline float tl_atomic_load(device float* p) {
  return atomic_load_explicit((volatile device atomic_float*)p, memory_order_relaxed);
}
inline void tl_atomic_store(device int* p, int v) {
  atomic_store_explicit((volatile device atomic_int*)p, v, memory_order_relaxed);
}
inline void tl_atomic_store(device uint* p, uint v) {
  atomic_store_explicit((volatile device atomic_uint*)p, v, memory_order_relaxed);
}
inline void tl_atomic_store(device float* p, float v) {
  atomic_store_explicit((volatile device atomic_float*)p, v, memory_order_relaxed);
}

// tl.dp4a: *c += a[0]*b[0] + ... + a[3]*b[3] over int8, wrapping in int32 (any address spaces).
template <typename PA, typename PB, typename PC>
inline void tl_dp4a(PA a, PB b, PC c) {
  int sum = *c;
  for (int i = 0; i < 4; ++i) sum += int(a[i]) * int(b[i]);
  *c = sum;
}
