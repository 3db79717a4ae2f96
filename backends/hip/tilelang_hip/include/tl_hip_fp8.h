// 8-bit floats of CDNA3 (gfx942), the "fnuz" formats: no infinities, no negative zero, one NaN
// (0x80). float8_e4m3fnuz: 4 exponent bits, bias 8, max 240; float8_e5m2fnuz: 5 exponent
// bits, bias 16, max 57344. Stored as a byte, computed in float like half_t and bfloat16_t:
// conversion from float rounds to nearest even and gives NaN past the largest finite value
// (what ml_dtypes, the reference of the tests, does). Plain C++ (host and device) so the
// conversions are the same everywhere they are checked.
#pragma once

#if !defined(TL_HOST_DEVICE)
#define TL_HOST_DEVICE inline
#endif

template <int EXP, int MAN, int BIAS> struct tl_fp8_fnuz {
  unsigned char bits;

  static TL_HOST_DEVICE float decode(unsigned char b) {
    if (b == 0x80) return __builtin_nanf("");
    const int e = (b >> MAN) & ((1 << EXP) - 1);
    const int m = b & ((1 << MAN) - 1);
    const float v = e == 0 ? __builtin_ldexpf(static_cast<float>(m), 1 - BIAS - MAN)
                           : __builtin_ldexpf(static_cast<float>(m + (1 << MAN)), e - BIAS - MAN);
    return (b & 0x80) ? -v : v;
  }

  static TL_HOST_DEVICE unsigned char encode(float f) {
    if (f != f) return 0x80;
    const bool negative = f < 0.0f;
    const float a = negative ? -f : f;
    const float largest = __builtin_ldexpf(static_cast<float>((2 << MAN) - 1), (1 << EXP) - 1 - BIAS - MAN);
    if (a > 2.0f * largest) return 0x80;  // also catches infinity
    int exponent;
    __builtin_frexpf(a, &exponent);  // a = m * 2^exponent, m in [0.5, 1)
    const int unbiased = exponent - 1 < 1 - BIAS ? 1 - BIAS : exponent - 1;
    const float quantum = __builtin_ldexpf(1.0f, unbiased - MAN);
    const float rounded = __builtin_rintf(a / quantum) * quantum;  // exact: a power-of-two scale
    if (rounded > largest) return 0x80;
    if (rounded == 0.0f) return 0;
    int e;
    __builtin_frexpf(rounded, &e);
    unsigned char b;
    if (e - 1 < 1 - BIAS) {  // subnormal
      b = static_cast<unsigned char>(rounded / __builtin_ldexpf(1.0f, 1 - BIAS - MAN));
    } else {
      const int m = static_cast<int>(rounded / __builtin_ldexpf(1.0f, e - 1 - MAN)) - (1 << MAN);
      b = static_cast<unsigned char>(((e - 1 + BIAS) << MAN) | m);
    }
    return negative ? static_cast<unsigned char>(b | 0x80) : b;
  }
};

using fp8_e4m3fnuz_t = tl_fp8_fnuz<4, 3, 8>;
using fp8_e5m2fnuz_t = tl_fp8_fnuz<5, 2, 16>;

TL_HOST_DEVICE float tl_to_float(fp8_e4m3fnuz_t x) { return fp8_e4m3fnuz_t::decode(x.bits); }
TL_HOST_DEVICE float tl_to_float(fp8_e5m2fnuz_t x) { return fp8_e5m2fnuz_t::decode(x.bits); }
