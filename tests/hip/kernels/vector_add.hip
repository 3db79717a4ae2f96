// C = A + B over n floats, one thread per element.
#include "tl_hip_common.h"

extern "C" __global__ void __launch_bounds__(256) vector_add(const float* __restrict__ A,
                                                             const float* __restrict__ B,
                                                             float* __restrict__ C, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) C[i] = A[i] + B[i];
}
