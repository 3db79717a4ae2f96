/* T.dp4a's portable form: *c += a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3] over signed
   bytes, the sum wrapping in 32 bits as hardware dot-product instructions do.
   Inlined by the C-family printer of tilelang-core; TL_HELPER is the dialect's qualifier. */
TL_HELPER void tl_dp4a(const int8_t* a, const int8_t* b, int32_t* c) {
  int32_t dot = (int32_t)a[0] * b[0] + (int32_t)a[1] * b[1] + (int32_t)a[2] * b[2] + (int32_t)a[3] * b[3];
  *c = (int32_t)((uint32_t)*c + (uint32_t)dot);
}
