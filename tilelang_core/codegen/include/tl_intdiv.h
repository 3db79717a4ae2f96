/* Floor division and modulo of signed integers (TIR's floordiv/floormod): the quotient
   rounds toward negative infinity and the remainder takes the sign of the divisor.
   Inlined by the C-family printer of tilelang-core; TL_HELPER is the dialect's qualifier. */
TL_HELPER int tl_floordiv_i32(int a, int b) {
  int q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
TL_HELPER int tl_floormod_i32(int a, int b) {
  int r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TL_HELPER long long tl_floordiv_i64(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
TL_HELPER long long tl_floormod_i64(long long a, long long b) {
  long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
