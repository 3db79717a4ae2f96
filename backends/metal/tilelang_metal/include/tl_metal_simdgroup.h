// T.gemm on simdgroup matrices (8x8x8), called by the code tilelang_metal/lower_gemm.py builds.
//
// Every 8x8 simdgroup matrix is spread over the 32 threads of a SIMD-group, two consecutive
// elements of one row per thread (`thread_elements()`): lane l holds row
//     (l / 4 & 4) + (l / 2) % 4,   columns  (l / 4 & 2) * 2 + (l % 2) * 2  and that + 1
// (the layout MLX's steel GEMM reads with `get_coord`, and Philip Turner's
// simdgroup_matrix_internals / Apple patent US11256518B2 draw; tilelang_metal/layout.py says
// the same in Python). A, B and C fragments all use it: the lane's two A elements (row m,
// columns k, k+1), its two B elements (row k, columns n, n+1) and its two accumulators.
//
// The operands are widened to the accumulator's type before the multiply, so one
// simdgroup_multiply_accumulate of a single element type runs (half x half -> float as
// float x float: exact, since every half is a float).
template <typename Acc, typename T>
inline void tl_simdgroup_mma(thread Acc* d, thread const T* a, thread const T* b) {
  simdgroup_matrix<Acc, 8, 8> ma, mb, mc;
  ma.thread_elements()[0] = Acc(a[0]);
  ma.thread_elements()[1] = Acc(a[1]);
  mb.thread_elements()[0] = Acc(b[0]);
  mb.thread_elements()[1] = Acc(b[1]);
  mc.thread_elements()[0] = d[0];
  mc.thread_elements()[1] = d[1];
  simdgroup_multiply_accumulate(mc, ma, mb, mc);
  d[0] = mc.thread_elements()[0];
  d[1] = mc.thread_elements()[1];
}
