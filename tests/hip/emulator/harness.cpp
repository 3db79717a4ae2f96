// The launcher of the host emulation (tests only): runs the grid block by block, each block's
// threads as std::threads, with a block barrier and one barrier per wave of 64 threads.
// `tl_emu_call(args)` calls the kernel with its arguments; emulator.py generates it.
#include <hip/hip_runtime.h>

#include <memory>
#include <thread>
#include <vector>

thread_local tl_emu_dim3 threadIdx, blockIdx;
thread_local int tl_emu_flat_thread;
tl_emu_dim3 blockDim, gridDim;
tl_emu_block tl_emu_current;
extern "C" {
alignas(128) unsigned char tl_dyn_smem[1 << 16];  // the kernel declares it inside an extern "C" function
}

static void tl_emu_call(void** args);

extern "C" int tl_emu_launch(void** args, int gx, int gy, int gz, int bx, int by, int bz) {
  gridDim = {unsigned(gx), unsigned(gy), unsigned(gz)};
  blockDim = {unsigned(bx), unsigned(by), unsigned(bz)};
  const int threads = bx * by * bz;
  const int waves = (threads + 63) / 64;
  tl_emu_current.failed = 0;
  for (int z = 0; z < gz; ++z)
    for (int y = 0; y < gy; ++y)
      for (int x = 0; x < gx; ++x) {
        std::barrier<> sync(threads);
        std::vector<tl_emu_wave> wave_state(waves);
        std::vector<std::unique_ptr<std::barrier<>>> wave_sync;
        for (int w = 0; w < waves; ++w) {
          wave_sync.emplace_back(new std::barrier<>(std::min(64, threads - 64 * w)));
          wave_state[w].sync = wave_sync.back().get();
        }
        tl_emu_current.sync = &sync;
        tl_emu_current.waves = wave_state.data();
        std::memset(tl_dyn_smem, 0xFF, sizeof(tl_dyn_smem));  // NaN: stale LDS shows
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([=] {
            threadIdx = {unsigned(t % bx), unsigned((t / bx) % by), unsigned(t / (bx * by))};
            blockIdx = {unsigned(x), unsigned(y), unsigned(z)};
            tl_emu_flat_thread = t;
            tl_emu_call(args);
          });
        for (auto& thread : pool) thread.join();
      }
  return tl_emu_current.failed;
}
