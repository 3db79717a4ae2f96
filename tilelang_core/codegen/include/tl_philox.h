/* T.rng_init / T.rng_rand / T.rng_rand_float: the Philox4x32-10 counter-based generator
   (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), with curand's
   state layout and stepping (curand_init(seed, subsequence, offset) then curand(),
   curand_uniform(), curand_uniform_double(), curand_normal(), curand_normal_double()):
   the same seed, sequence and offset give the same stream of 32-bit values as curand's
   curandStatePhilox4_32_10_t.
   The state is 16 uint32 words the kernel keeps per thread: counter[0..3], key[4..5],
   output[6..9], the index of the next output word[10], a flag[11] and a float or double
   [12..13] for the second value of a Box-Muller pair.
   Inlined by the C-family printer of tilelang-core; TL_HELPER is the dialect's qualifier. */
TL_HELPER void tl_philox_round(uint32_t* c, const uint32_t* k) {
  uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
  uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t c1 = c[1], c3 = c[3];
  c[0] = hi1 ^ c1 ^ k[0];
  c[1] = lo1;
  c[2] = hi0 ^ c3 ^ k[1];
  c[3] = lo0;
}

TL_HELPER void tl_philox_refill(uint32_t* s) {
  uint32_t c[4] = {s[0], s[1], s[2], s[3]};
  uint32_t k[2] = {s[4], s[5]};
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    tl_philox_round(c, k);
  }
  s[6] = c[0]; s[7] = c[1]; s[8] = c[2]; s[9] = c[3];
}

/* the counter advanced by n (a 128-bit add of a 64-bit n), as curand's Philox_State_Incr */
TL_HELPER void tl_philox_advance(uint32_t* s, uint64_t n) {
  uint32_t lo = (uint32_t)n, hi = (uint32_t)(n >> 32);
  s[0] += lo;
  if (s[0] < lo) hi++;
  s[1] += hi;
  if (hi <= s[1]) return;
  if (++s[2]) return;
  ++s[3];
}

TL_HELPER void tl_rng_init(uint32_t* s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  for (int i = 0; i < 16; ++i) s[i] = 0;
  s[4] = (uint32_t)seed;
  s[5] = (uint32_t)(seed >> 32);
  /* skipahead_sequence: the upper 64 bits of the counter */
  uint32_t lo = (uint32_t)subsequence, hi = (uint32_t)(subsequence >> 32);
  s[2] += lo;
  if (s[2] < lo) hi++;
  s[3] += hi;
  /* skipahead: whole blocks of four on the counter, the rest in the output index */
  s[10] = (uint32_t)(offset & 3u);
  tl_philox_advance(s, offset / 4);
  tl_philox_refill(s);
}

TL_HELPER uint32_t tl_rng_rand(uint32_t* s) {
  uint32_t value = s[6 + s[10]];
  if (++s[10] == 4) {
    tl_philox_advance(s, 1);
    tl_philox_refill(s);
    s[10] = 0;
  }
  return value;
}

TL_HELPER float tl_rng_uniform(uint32_t* s) {
  /* (0, 1]: curand's _curand_uniform */
  return tl_rng_rand(s) * 2.3283064e-10f + (2.3283064e-10f / 2.0f);
}

TL_HELPER double tl_rng_uniform_double(uint32_t* s) {
  uint32_t x = tl_rng_rand(s);
  uint32_t y = tl_rng_rand(s);
  uint64_t z = (uint64_t)x ^ ((uint64_t)y << (53 - 32));
  return z * 1.1102230246251565e-16 + (1.1102230246251565e-16 / 2.0);
}

TL_HELPER float tl_rng_normal(uint32_t* s) {
  float spare;
  if (s[11] == 1u) {
    s[11] = 0u;
    memcpy(&spare, &s[12], sizeof(spare));
    return spare;
  }
  uint32_t x = tl_rng_rand(s);
  uint32_t y = tl_rng_rand(s);
  float u = x * 2.3283064e-10f + (2.3283064e-10f / 2.0f);
  float v = y * 1.4629181e-09f + (1.4629181e-09f / 2.0f);
  float r = sqrtf(-2.0f * logf(u));
  spare = cosf(v) * r;
  memcpy(&s[12], &spare, sizeof(spare));
  s[11] = 1u;
  return sinf(v) * r;
}

TL_HELPER double tl_rng_normal_double(uint32_t* s) {
  double spare;
  if (s[11] == 2u) {
    s[11] = 0u;
    memcpy(&spare, &s[12], sizeof(spare));
    return spare;
  }
  uint32_t x0 = tl_rng_rand(s), y0 = tl_rng_rand(s), x1 = tl_rng_rand(s), y1 = tl_rng_rand(s);
  uint64_t zx = (uint64_t)x0 ^ ((uint64_t)y0 << (53 - 32));
  uint64_t zy = (uint64_t)x1 ^ ((uint64_t)y1 << (53 - 32));
  double u = zx * 1.1102230246251565e-16 + (1.1102230246251565e-16 / 2.0);
  double v = zy * (1.1102230246251565e-16 * 6.283185307179586) + (1.1102230246251565e-16 * 3.141592653589793);
  double r = sqrt(-2.0 * log(u));
  spare = cos(v) * r;
  memcpy(&s[12], &spare, sizeof(spare));
  s[11] = 2u;
  return sin(v) * r;
}
