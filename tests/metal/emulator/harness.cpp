// The launcher of the host emulation of Metal (tests only): runs the grid threadgroup by
// threadgroup, each thread a std::thread, with a threadgroup barrier and one barrier per
// SIMD-group of 32. metal_emulator.py appends the kernel and `tl_emu_call(args)`.
#include <metal_stdlib>

// the MSL address-space word `thread` is an empty macro of the emulation: not in this file
#pragma push_macro("thread")
#undef thread

tl_emu_block tl_emu_current;
thread_local int tl_emu_flat_thread;
thread_local uint3 tl_emu_block_id, tl_emu_thread_id;

static void tl_emu_call(void** args);

extern "C" int tl_emu_launch(void** args, int gx, int gy, int gz, int bx, int by, int bz) {
  const int threads = bx * by * bz;
  const int groups = (threads + 31) / 32;
  for (int z = 0; z < gz; ++z)
    for (int y = 0; y < gy; ++y)
      for (int x = 0; x < gx; ++x) {
        std::barrier<> sync(threads);
        std::vector<tl_emu_simdgroup> group_state(groups);
        std::vector<std::unique_ptr<std::barrier<>>> group_sync;
        for (int g = 0; g < groups; ++g) {
          group_sync.emplace_back(new std::barrier<>(std::min(32, threads - 32 * g)));
          group_state[g].sync = group_sync.back().get();
        }
        tl_emu_current.sync = &sync;
        tl_emu_current.groups = group_state.data();
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([=] {
            tl_emu_thread_id = uint3{uint(t % bx), uint((t / bx) % by), uint(t / (bx * by))};
            tl_emu_block_id = uint3{uint(x), uint(y), uint(z)};
            tl_emu_flat_thread = t;
            tl_emu_call(args);
          });
        for (auto& thread : pool) thread.join();
      }
  return 0;
}
#pragma pop_macro("thread")
