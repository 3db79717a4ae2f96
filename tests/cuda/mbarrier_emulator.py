"""The TIR emulator (`tir_emulator.py`) with mbarriers and named barriers, for warp-specialized
kernels (`T.ws`, `T.alloc_barrier`, `T.tma_copy`). Semantics from the PTX ISA (9.7.13.15):

- `tl::mbarrier_init(bar, n)`: phase 0, n arrivals expected per phase.
- `tl::mbarrier_arrive(bar)`: one arrival; when the phase has all its arrivals (and every
  copy tied to it has landed) it completes and the next one starts. More arrivals than
  expected in one phase is an error here (undefined on the hardware).
- `tl::cp_async_mbarrier_arrive(bar)` (non-.noinc): every cp.async the thread issued before
  is tied to the barrier's current phase. Where they land is the adversary's choice, one per
  run: `mode="late"` at the completion of that phase (a reader that did not wait for it sees
  stale shared memory), `mode="early"` at once (a copy that overwrites a tile another thread
  still reads shows up).
- `tl::mbarrier_wait(bar, p)`: blocks until the phase of parity p has completed, i.e. while
  the current phase's parity is p (a fresh barrier passes a wait for parity 1).
- `tl.sync_group(id, count)` (`bar.sync id, count`) and `tl::named_barrier_sync(id, count)`:
  release when `count` threads have reached `id`, counting those that passed it with
  `tl::named_barrier_arrive(id, count)` (`bar.arrive`: one arrival, no wait) since its last
  release; `__syncthreads` still needs every thread of the block (a thread of one T.ws range
  that reaches it alone deadlocks, which the run reports).
"""
from __future__ import annotations

import numpy as np
from tvm import ir, tirx

from tir_emulator import _Machine, run_blocks, start_threads, warp_step

__all__ = ["run_kernel", "release_barriers"]


class _Barrier:
    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.arrived = 0
        self.phase = 0
        self.tied: list = []  # (dst, data) copies that land when this phase completes


class _Machine2(_Machine):
    def __init__(self, func, arrays, threads, code, mode: str = "late") -> None:
        super().__init__(func, arrays, threads, code)
        self.mode = mode
        self.barriers: dict = {}
        self.arrivals: dict = {}  # named barrier id -> threads that arrived without waiting

    @staticmethod
    def _key(pointer) -> tuple:
        return (id(pointer.array), pointer.index)

    def run(self, s, th):
        t = type(s)
        if t is tirx.AllocBuffer and str(s.buffer.ty.storage_scope) == "shared.barrier":
            if s.buffer not in self.shared:
                self.shared[s.buffer] = np.zeros([int(d) for d in s.buffer.ty.shape], np.uint64)
            return
        if t is tirx.Evaluate and isinstance(s.value, ir.Call) and s.value.op.name == "tl.sync_group":
            yield ("bar", int(s.value.args[0]), int(s.value.args[1]))
            return
        yield from super().run(s, th)

    def barrier(self, pointer) -> _Barrier:
        bar = self.barriers.get(self._key(pointer))
        if bar is None:
            raise AssertionError("an mbarrier is used before tl::mbarrier_init")
        return bar

    def arrive(self, bar: _Barrier) -> None:
        bar.arrived += 1
        if bar.arrived > bar.expected:
            raise AssertionError(f"{bar.arrived} arrivals on an mbarrier that expects {bar.expected} per phase")
        if bar.arrived == bar.expected:
            for dst, data in bar.tied:
                dst.raw(16)[:] = data
            bar.tied, bar.arrived, bar.phase = [], 0, bar.phase + 1

    def extern(self, name: str, args, th):
        if name == "tl::mbarrier_init":
            self.barriers[self._key(args[0])] = _Barrier(int(args[1]))
        elif name == "tl::fence_barrier_init":
            pass
        elif name == "tl::mbarrier_arrive":
            self.arrive(self.barrier(args[0]))
        elif name == "tl::cp_async_mbarrier_arrive":
            bar = self.barrier(args[0])
            copies = [c for group in th.groups for c in group] + th.open_group
            th.groups, th.open_group = [], []
            if self.mode == "early":
                for dst, data in copies:
                    dst.raw(16)[:] = data
            else:
                bar.tied.extend(copies)
        elif name == "tl::mbarrier_wait":
            yield ("mbar", self.barrier(args[0]), int(args[1]))
        elif name == "tl::named_barrier_sync":
            yield ("bar", int(args[0]), int(args[1]))
        elif name == "tl::named_barrier_arrive":
            barrier_id, count = int(args[0]), int(args[1])
            self.arrivals[barrier_id] = self.arrivals.get(barrier_id, 0) + 1
            if self.arrivals[barrier_id] > count:
                raise AssertionError(f"bar.arrive {barrier_id}, {count}: more arrivals than the barrier counts")
        else:
            yield from super().extern(name, args, th)


def run_kernel(func: tirx.PrimFunc, *tensors: np.ndarray, mode: str = "late") -> None:
    """Run a lowered kernel on NumPy arrays (written in place); `mode` places async copies."""
    run_blocks(func, tensors, lambda *a: _Machine2(*a, mode), _run_block)


def _run_block(m: _Machine2, env: dict, threads: int) -> None:
    waiting, done, advance = start_threads(m, env, threads)

    warps = (threads + 31) // 32
    for w in range(warps):
        for t in range(w * 32, min(threads, w * 32 + 32)):
            advance(t)
    while not all(done):
        if warp_step(warps, threads, waiting, advance) or release_barriers(threads, waiting, done, advance,
                                                                           m.arrivals):
            continue
        live = [t for t in range(threads) if not done[t]]
        blocked = sorted({str(waiting[t][:1] + waiting[t][2:3]) for t in live})
        raise AssertionError(f"deadlock: threads wait on {blocked}")


def release_barriers(threads: int, waiting: list, done: list, advance, arrivals: dict | None = None) -> bool:
    """Release the threads one barrier lets go: mbarrier waits whose phase completed, a
    named barrier (bar.sync) its count of threads reached (with `arrivals`, those that
    passed it by bar.arrive), or __syncthreads that every thread reached; False when none is
    ready."""
    arrivals = {} if arrivals is None else arrivals
    live = [t for t in range(threads) if not done[t]]
    ready = [t for t in live if waiting[t][0] == "mbar" and waiting[t][1].phase % 2 != waiting[t][2]]
    if ready:
        for t in ready:
            advance(t)
        return True
    named: dict = {}
    for t in live:
        if waiting[t][0] == "bar":
            named.setdefault(waiting[t][1], []).append(t)
    released = False
    for barrier_id, ts in sorted(named.items()):
        counts = {waiting[t][2] for t in ts}
        if len(counts) != 1:
            raise AssertionError(f"bar.sync {barrier_id} with different thread counts {counts}")
        count = counts.pop()
        arrived = len(ts) + arrivals.get(barrier_id, 0)
        if arrived > count:
            raise AssertionError(f"bar.sync {barrier_id}, {count} reached by {arrived} threads")
        if arrived == count:
            arrivals.pop(barrier_id, None)
            for t in ts:
                advance(t)
            released = True
    if released:
        return True
    if live and all(waiting[t] == ("sync",) for t in live):
        if len(live) != threads:
            raise AssertionError("__syncthreads reached by only some threads")
        for t in live:
            advance(t)
        return True
    return False
