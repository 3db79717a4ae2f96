"""The TIR emulator with wgmma (`wgmma_emulator.py`), mbarriers and named barriers
(`mbarrier_emulator.py`) and TMA, for Hopper's pipelined GEMM (`tilelang_cuda.lower_tma`).
TMA semantics from the PTX ISA (9.7.9.25.5.1, cp.async.bulk.tensor; 9.7.13.15.11,
mbarrier.arrive.expect_tx) and the driver's `cuTensorMapEncodeTiled`, written here
independently of the lowering:

- Tensor map `i` is entry `i` of the kernel's `cuda.tensor_maps` attribute: the tensor
  parameter, its shape (outermost first), the box (outermost first) and the swizzle width.
- `tl::tma_load(i, smem, bar, c0, c1, ...)` (c0 innermost): the box whose first element is
  at those coordinates, elements outside the tensor read as 0, is stored row after row (the
  innermost box dimension contiguous) from `smem`, and then every byte address is swizzled
  as the hardware does for wgmma (bits 4.. XOR bits 7..; `wgmma_emulator.swizzled_address`).
  Its bytes count toward `bar`'s transaction.
- `tl::mbarrier_expect_tx(bar, n)`: one arrival, and the current phase also needs n bytes.
  A phase completes when its arrivals are in and its bytes have landed; more bytes than
  expected is an error here.
- Where the bytes land is the adversary's choice, one per run: `mode="late"` when the phase
  completes (a reader that did not wait sees stale shared memory), `mode="early"` at once (a
  load into a stage another thread still reads shows up).
- `tl::tma_store(i, smem, c0, c1, ...)` (PTX ISA 9.7.9.25.5.2): the box is read from `smem`
  (row after row, swizzled as for loads) and written to the tensor at those coordinates,
  elements outside the tensor dropped. It reads shared memory as late as the hardware may:
  at `tl::tma_store_wait_read` in `mode="late"` (a thread that writes the tile before that
  wait changes what is stored), at issue in `mode="early"`. `tl::tma_store_commit`: no effect.
- `tl::warp_index()`: threadIdx.x / 32; `tl::setmaxnreg_inc/dec<N>()`: no effect here.
"""
from __future__ import annotations

import json

import numpy as np
from tvm import tirx

from mbarrier_emulator import _Machine2, release_barriers
from tir_emulator import run_blocks, start_threads, warp_step
from wgmma_emulator import _Machine3, warpgroup_step

__all__ = ["run_kernel"]

_SWIZZLE_BITS = {128: 3, 64: 2, 32: 1, 0: 0}


class _TmaMachine(_Machine3, _Machine2):
    def __init__(self, func, arrays, threads, code, mode: str) -> None:
        super().__init__(func, arrays, threads, code)
        self.mode = mode
        self.maps = json.loads(str(func.attrs["cuda.tensor_maps"]))
        self.params = list(func.params)

    def compile_call(self, e):
        if e.op.name == "tirx.call_extern" and str(e.args[0].value) == "tl::warp_index":
            return lambda th: th.tid // 32
        return super().compile_call(e)

    def arrive(self, bar) -> None:
        bar.arrived += 1
        if bar.arrived > bar.expected:
            raise AssertionError(f"{bar.arrived} arrivals on an mbarrier that expects {bar.expected} per phase")
        self._complete(bar)

    def _complete(self, bar) -> None:
        if bar.arrived == bar.expected and getattr(bar, "pending", 0) == 0:
            for write in bar.tied:
                write()
            bar.tied, bar.arrived, bar.phase = [], 0, bar.phase + 1

    def extern(self, name: str, args, th):
        if name == "tl::mbarrier_expect_tx":
            bar = self.barrier(args[0])
            bar.pending = getattr(bar, "pending", 0) + int(args[1])
            self.arrive(bar)
        elif name.startswith(("tl::setmaxnreg_inc<", "tl::setmaxnreg_dec<")):
            pass  # registers per thread: nothing to model
        elif name == "tl::tma_load":
            self.tma_load(int(args[0]), args[1], self.barrier(args[2]), [int(c) for c in args[3:]])
        elif name == "tl::tma_store":
            store = (int(args[0]), args[1], [int(c) for c in args[2:]])
            if self.mode == "early":
                self.tma_store(*store)
            else:
                self.__dict__.setdefault("stores", []).append(store)
        elif name == "tl::tma_store_wait_read":
            for store in self.__dict__.pop("stores", []):
                self.tma_store(*store)
        elif name == "tl::tma_store_commit":
            pass
        else:
            yield from super().extern(name, args, th)

    def tma_load(self, index: int, smem, bar, coords: list[int]) -> None:
        spec = self.maps[index]
        tensor = self.arrays[self.params[spec["param"]]]
        shape, box, width = spec["shape"], spec["box"], int(spec["swizzle"])
        assert list(tensor.shape) == shape, f"tensor map {index}: shape {shape}, tensor {tensor.shape}"
        starts = list(reversed(coords))  # outermost first, as the shape
        data = np.zeros(box, tensor.dtype)
        src = tuple(slice(max(0, s), min(d, s + b)) for s, d, b in zip(starts, shape, box))
        dst = tuple(slice(sl.start - s, sl.stop - s) for sl, s in zip(src, starts))
        if all(sl.stop > sl.start for sl in src):
            data[dst] = tensor[src]
        raw = data.reshape(-1).view(np.uint8)
        base = self.address(smem)
        array_base = self.address(type(smem)(smem.array, 0))
        bits = _SWIZZLE_BITS[width]
        addrs = base + np.arange(raw.size)
        addrs = addrs ^ (((addrs >> 7) & ((1 << bits) - 1)) << 4)
        target = smem.array.reshape(-1).view(np.uint8)

        def write(raw=raw.copy(), offsets=addrs - array_base):
            target[offsets] = raw

        bar.pending = getattr(bar, "pending", 0) - raw.size
        if bar.pending < 0:
            raise AssertionError("a TMA load brings more bytes than the barrier's expect_tx announced")
        if self.mode == "early":
            write()
        else:
            bar.tied.append(write)
        self._complete(bar)


    def _box(self, index: int, smem, coords: list[int]):
        """Tensor map `index`'s tensor, its box at `coords` (slices into the tensor and into
        the box, clipped to the tensor), and the box's byte offsets in `smem`'s array."""
        spec = self.maps[index]
        tensor = self.arrays[self.params[spec["param"]]]
        shape, box, width = spec["shape"], spec["box"], int(spec["swizzle"])
        assert list(tensor.shape) == shape, f"tensor map {index}: shape {shape}, tensor {tensor.shape}"
        starts = list(reversed(coords))  # outermost first, as the shape
        src = tuple(slice(max(0, s), min(d, s + b)) for s, d, b in zip(starts, shape, box))
        dst = tuple(slice(sl.start - s, sl.stop - s) for sl, s in zip(src, starts))
        base = self.address(smem)
        array_base = self.address(type(smem)(smem.array, 0))
        bits = _SWIZZLE_BITS[width]
        addrs = base + np.arange(int(np.prod(box)) * tensor.dtype.itemsize)
        addrs = addrs ^ (((addrs >> 7) & ((1 << bits) - 1)) << 4)
        return tensor, box, src, dst, addrs - array_base

    def tma_store(self, index: int, smem, coords: list[int]) -> None:
        tensor, box, src, dst, offsets = self._box(index, smem, coords)
        raw = smem.array.reshape(-1).view(np.uint8)[offsets]
        data = raw.view(tensor.dtype).reshape(box)
        if all(sl.stop > sl.start for sl in src):
            tensor[src] = data[dst]


def run_kernel(func: tirx.PrimFunc, *tensors: np.ndarray, mode: str = "late") -> None:
    """Run a lowered kernel on NumPy arrays (written in place); `mode` places TMA's bytes."""
    run_blocks(func, tensors, lambda *a: _TmaMachine(*a, mode), _run_block)


def _run_block(m: _TmaMachine, env: dict, threads: int) -> None:
    waiting, done, advance = start_threads(m, env, threads)
    for t in range(threads):
        advance(t)
    while not all(done):
        if warpgroup_step(m, threads, waiting, advance) or warp_step((threads + 31) // 32, threads, waiting, advance) \
                or release_barriers(threads, waiting, done, advance, m.arrivals):
            continue
        live = [t for t in range(threads) if not done[t]]
        blocked = sorted({str(waiting[t][:1] + waiting[t][2:3]) for t in live})
        raise AssertionError(f"deadlock: threads wait on {blocked}")
