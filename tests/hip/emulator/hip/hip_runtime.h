// The host emulation of a HIP block (tests only): what <hip/hip_runtime.h> gives generated
// kernels, for a host C++20 compiler. Every thread of a block is a std::thread; blocks run one
// after another. See tests/hip/emulator.py.
#pragma once

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct tl_emu_dim3 {
  unsigned x, y, z;
};

struct tl_emu_wave {
  std::barrier<>* sync;
  double a[64][8], b[64][8], c[64][4];
  double lanes[64];  // tl_shfl_xor
};

struct tl_emu_block {
  std::barrier<>* sync;
  tl_emu_wave* waves;
  int failed;
};

extern thread_local tl_emu_dim3 threadIdx, blockIdx;
extern thread_local int tl_emu_flat_thread;
extern tl_emu_dim3 blockDim, gridDim;
extern tl_emu_block tl_emu_current;

inline void __syncthreads() { tl_emu_current.sync->arrive_and_wait(); }
