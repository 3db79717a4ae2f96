"""The TIR emulator of tests/cuda (`tir_emulator.py`) with the MUSA device helpers, for checking
the MUSA lowerings (async copies, SQMMA on the TCE) without Moore Threads hardware.

Semantics, written here from the public MUSA sources independently of the lowering's own layout
functions (MUTLASS, mirror github.com/zhe-pang/mutlass at 6dd17cb6):

- `tl_musa_g2s<16>(dst, src)` / `tl_musa_g2s_zfill<16>(dst, src, valid)`: 16 bytes (or zeros)
  land in shared memory at the thread's next `tl_musa_g2s_wait()`, not at issue, so a read
  before the wait sees stale shared memory.
- Shared memory is one address space: each shared buffer starts at a 1024-byte boundary, in
  the order first addressed.
- `tl_musa_tce_desc(ptr, code)`: the SQMMA descriptor (`mute/arch/mma_mp31_desc.hpp`): bits
  0..17 the byte address, bits 18..20 the leading stride code (8 B << (code - 1)).
- `tl_musa_tce_m<M>n<N><type, majorA, majorB, k>(acc, desc_a, desc_b)`: a collective of the 128
  threads of a warp squad (`ThrID = Layout<_128>`); element (r, kk) of an operand (r < M for
  A, r < N for B) is read at `start + r * stride + 2 kk` when K-major (major 0) and at
  `start + kk * stride + 2 r` when MN-major (major 1), `stride` the descriptor's leading stride
  (`make_sqmma_desc`: stride<0> of a K-major, stride<1> of an MN-major u8 tile). The accumulator
  follows `CLayout<M, N>` of `mma_traits_mp31_sqmma.hpp`: ((8, 4, 4), (2, N/16, M/16)) :
  ((M, 1, 4), (8M, 16M, 16)), column-major over the M x N tile. D = A B + D.
- `tl_musa_tce_commit`, `tl_musa_tce_wait<n>`: ordering only; the emulated SQMMA completes
  when the squad issues it.
- ASYNC barriers (mp_31; Moore Threads' port, src/tl_templates/musa/barrier.h and
  src/target/codegen_musa.cc:1560-1625; MUTLASS `copy_mp31_desc.hpp`):
  `tl_musa_barrier_init(id, warps)` starts barrier `id` in phase 0 expecting `warps` warps;
  `tl_musa_barrier_arrive(id)`: the calling warp arrives (its first lane counts; a lane that
  arrives twice in one phase is an error here); `tl_musa_barrier_expect(id, n)`: the current
  phase also needs n bytes; a phase completes when its warps and bytes are in;
  `tl_musa_barrier_wait(id, p)` blocks while the barrier's current phase has parity p.
  `T.alloc_barrier` buffers hold nothing (the ids are the barriers).
  Using an id outside 1..63, or before its init, is an error here.
- `tl_musa_tme_load_<r>d(desc, bar, smem, c0.., d0..)` (MUTLASS `copy_mp31_tme.hpp`, the port's
  `copy_mp31.h`): descriptor `desc` is entry `desc` of the kernel's `musa.tensor_descriptors`
  (tensor parameter and shape, outermost first); the box of d0 x d1 x .. elements (d0
  innermost) at coordinates (c0 innermost, ..), elements outside the tensor read as 0, is
  stored row after row from `smem`; its bytes count toward barrier `bar`. They land as late as
  a correct reader allows: when a wait on the barrier returns after the phase completed (a
  reader that did not wait sees stale shared memory).
- `tl_musa_(b)fmma_m32n32k16<layout>(acc, a, b)` (mp_22): a collective of one 128-thread warp;
  `a`, `b` point to this lane's 4 values, read through the CuTe layouts of
  `mute/atom/mma_traits_mp22.hpp` (`MP22_LAYOUTS`: A `MP22_32x16_Row`; B `MP22_32x16_Col` for
  layout 0 "TT", `MP22_32x16_Row` for 1 "TN"; C `MP22_32x32_32b`), which map (lane, value) to a
  column-major offset in A (32 x 16), B (N x K = 32 x 16) and C (32 x 32). D = A B^T + C.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
from tvm import tirx

_CUDA_TESTS = str(Path(__file__).resolve().parents[1] / "cuda")
if _CUDA_TESTS not in sys.path:
    sys.path.insert(0, _CUDA_TESTS)

from mbarrier_emulator import release_barriers  # noqa: E402
from tir_emulator import _Machine, cute_offset, run_blocks, start_threads, warp_step  # noqa: E402
# A warp squad, like a warpgroup, is 128 consecutive threads that issue one collective: the
# wgmma emulator's step runs both (its "wg" events, handed to `machine.wgmma`).
from wgmma_emulator import warpgroup_step  # noqa: E402

__all__ = ["run_kernel", "clayout_element"]

_TCE = re.compile(r"tl_musa_tce_m(\d+)n(\d+)<(\d+), (\d), (\d), (\d+)>")
_FMMA = re.compile(r"tl_musa_(b?)fmma_m32n32k16<(\d)>")
_ROW = (((4, 16, 2), (2, 2)), ((64, 1, 256), (32, 16)))  # MP22_32x16_Row
MP22_LAYOUTS = {
    "A": _ROW,
    "B0": (((8, 16), (2, 2)), ((2, 32), (1, 16))),  # MP22_32x16_Col (TT)
    "B1": _ROW,  # TN
    "C": (((8, 4, 2, 2), (2, 4)), ((32, 1, 256, 4), (512, 8))),  # MP22_32x32_32b
}


def clayout_element(m: int, n: int, lane: int, value: int) -> tuple[int, int]:
    """(row, col) of the M x N accumulator tile held by `lane` in `value`, from the CuTe
    layout ((8, 4, 4), (2, N/16, M/16)) : ((M, 1, 4), (8M, 16M, 16)) (column-major offset)."""
    l0, l1, l2 = lane % 8, (lane // 8) % 4, lane // 32
    v0, v1, v2 = value % 2, (value // 2) % (n // 16), value // (2 * (n // 16))
    offset = l0 * m + l1 + l2 * 4 + v0 * 8 * m + v1 * 16 * m + v2 * 16
    return offset % m, offset // m


class _AsyncBarrier:
    def __init__(self, warps: int) -> None:
        self.warps, self.phase, self.pending = warps, 0, 0
        self.lanes: set = set()
        self.tied: list = []  # TME writes of the current phase
        self.landed: list = []  # writes of completed phases not yet seen by a waiter

    def arrive(self, tid: int) -> None:
        assert tid not in self.lanes, f"thread {tid} arrives twice in one phase of an ASYNC barrier"
        self.lanes.add(tid)
        assert len({t // 32 for t in self.lanes}) <= self.warps, "more warps arrive than the barrier expects"
        self.complete()

    def complete(self) -> None:
        if len({t // 32 for t in self.lanes}) == self.warps and self.pending == 0:
            self.landed += self.tied
            self.tied, self.lanes, self.phase = [], set(), self.phase + 1

    def land(self) -> None:
        """The bytes of completed phases reach shared memory (when a wait returns: as late as
        a correct reader allows)."""
        for write in self.landed:
            write()
        self.landed = []


class _MusaMachine(_Machine):
    def __init__(self, func, arrays, threads, code) -> None:
        super().__init__(func, arrays, threads, code)
        self.bases: dict[int, tuple[int, np.ndarray]] = {}
        self.next_base = 1024
        self.async_barriers: dict[int, _AsyncBarrier] = {}
        attrs = func.attrs
        self.descriptors = json.loads(str(attrs["musa.tensor_descriptors"])) \
            if attrs is not None and "musa.tensor_descriptors" in attrs else []

    def address(self, pointer) -> int:
        entry = self.bases.get(id(pointer.array))
        if entry is None:
            entry = (self.next_base, pointer.array)
            self.bases[id(pointer.array)] = entry
            self.next_base += -(-pointer.array.nbytes // 1024) * 1024 + 1024
        return entry[0] + pointer.index * pointer.array.itemsize

    def load16(self, addr: int) -> np.ndarray:
        for base, array in self.bases.values():
            if base <= addr < base + array.nbytes:
                return array.reshape(-1).view(np.uint8)[addr - base:addr - base + 2]
        raise AssertionError(f"SQMMA reads shared address {addr:#x}, outside every shared tile")

    def compile_call(self, e):
        if e.op.name == "tirx.call_extern" and str(e.args[0].value) == "tl_musa_tce_desc":
            ptr, code = (self.compile(a) for a in e.args[1:])

            def desc(th):
                return (th.machine.address(ptr(th)) & 0x3FFFF) | ((int(code(th)) & 7) << 18)
            return desc
        return super().compile_call(e)

    def run(self, s, th):
        if type(s) is tirx.AllocBuffer and str(s.buffer.ty.storage_scope) == "shared.barrier":
            return
        yield from super().run(s, th)

    def async_barrier(self, id_) -> "_AsyncBarrier":
        bar = self.async_barriers.get(int(id_))
        assert 1 <= int(id_) <= 63, f"ASYNC barrier id {id_} outside 1..63"
        assert bar is not None, f"ASYNC barrier {id_} used before tl_musa_barrier_init"
        return bar

    def tme_load(self, index: int, bar, smem, coords: list[int], box: list[int]) -> None:
        spec = self.descriptors[index]
        tensor = self.arrays[self.func.params[spec["param"]]]
        shape = spec["shape"]
        assert list(tensor.shape) == shape, f"descriptor {index}: shape {shape}, tensor {tensor.shape}"
        starts, box = list(reversed(coords)), list(reversed(box))  # outermost first
        data = np.zeros(box, tensor.dtype)
        src = tuple(slice(max(0, s), min(d, s + b)) for s, d, b in zip(starts, shape, box))
        dst = tuple(slice(sl.start - s, sl.stop - s) for sl, s in zip(src, starts))
        if all(sl.stop > sl.start for sl in src):
            data[dst] = tensor[src]
        flat = data.reshape(-1)
        target = smem.array.reshape(-1)
        start = smem.index
        bar.pending -= flat.nbytes
        assert bar.pending >= 0, "a TME load brings more bytes than tl_musa_barrier_expect announced"
        bar.tied.append(lambda: target.__setitem__(slice(start, start + flat.size), flat))
        bar.complete()

    def extern(self, name: str, args, th):
        if name.startswith("tl_musa_barrier_record"):
            return
        if name == "tl_musa_barrier_init":
            assert 1 <= int(args[0]) <= 63, f"ASYNC barrier id {args[0]} outside 1..63"
            self.async_barriers[int(args[0])] = _AsyncBarrier(int(args[1]))
            return
        if name == "tl_musa_barrier_expect":
            self.async_barrier(args[0]).pending += int(args[1])
            return
        if name == "tl_musa_barrier_arrive":
            self.async_barrier(args[0]).arrive(th.tid)
            return
        if name == "tl_musa_barrier_wait":
            bar = self.async_barrier(args[0])
            yield ("mbar", bar, int(args[1]))
            bar.land()
            return
        if name.startswith("tl_musa_tme_load_"):
            rank = int(name[len("tl_musa_tme_load_"):-1])
            values = [int(a) for a in args[3:]]
            self.tme_load(int(args[0]), self.async_barrier(args[1]), args[2], values[:rank], values[rank:])
            return
        if name.startswith("tl_musa_g2s_zfill") or name.startswith("tl_musa_g2s<"):
            valid = bool(args[2]) if len(args) > 2 else True
            data = args[1].raw(16).copy() if valid else np.zeros(16, np.uint8)
            th.open_group.append((args[0], data))
        elif name == "tl_musa_g2s_wait":
            for dst, data in th.open_group:
                dst.raw(16)[:] = data
            th.open_group = []
        elif name in ("tl_musa_tce_commit",) or name.startswith("tl_musa_tce_wait"):
            return
        elif _TCE.fullmatch(name) or _FMMA.fullmatch(name):
            yield ("wg", name, args)  # a collective of the warp squad (mp_31) or of the warp (mp_22)
        else:
            yield from super().extern(name, args, th)

    def operand(self, desc: int, rows: int, k: int, k_major: bool, kind: int) -> np.ndarray:
        start, stride = desc & 0x3FFFF, 8 << (((desc >> 18) & 7) - 1)
        assert (desc >> 21) & 3 == 0, "emulator: swizzled SQMMA operands are not modelled"
        out = np.zeros((rows, k))
        for r in range(rows):
            for kk in range(k):
                raw = self.load16(start + r * stride + 2 * kk if k_major else start + kk * stride + 2 * r)
                if kind == 2:
                    out[r, kk] = float(raw.view(np.float16)[0])
                else:
                    out[r, kk] = float((raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)[0])
        return out

    def wgmma(self, name: str, lane_args, group: int = 0) -> None:
        """The 128-thread collective the shared block scheduler runs (`sqmma` or `fmma`); it
        completes at issue here (`group`, the warp squad, is not needed)."""
        (self.fmma if _FMMA.fullmatch(name) else self.sqmma)(name, lane_args)

    @staticmethod
    def fmma(name: str, lane_args) -> None:
        bf16, layout = _FMMA.fullmatch(name).groups()

        def value(ptr, i):
            raw = ptr.array.reshape(-1)[ptr.index + i]
            if bf16:
                return float((np.array([raw], np.uint16).astype(np.uint32) << 16).view(np.float32)[0])
            return float(raw)

        a, b, c = np.zeros(32 * 16), np.zeros(32 * 16), np.zeros(32 * 32)
        for lane, args in enumerate(lane_args):
            for v in range(4):
                a[cute_offset(MP22_LAYOUTS["A"], lane, v)] = value(args[1], v)
                b[cute_offset(MP22_LAYOUTS["B" + layout], lane, v)] = value(args[2], v)
            for v in range(8):
                c[cute_offset(MP22_LAYOUTS["C"], lane, v)] = args[0].array.reshape(-1)[args[0].index + v]
        d = a.reshape(16, 32).T @ b.reshape(16, 32) + c.reshape(32, 32).T  # column-major tiles
        d = d.T.reshape(-1)
        for lane, args in enumerate(lane_args):
            out = args[0].array.reshape(-1)
            for v in range(8):
                out[args[0].index + v] = d[cute_offset(MP22_LAYOUTS["C"], lane, v)]

    def sqmma(self, name: str, lane_args) -> None:
        m, n, kind, major_a, major_b, k = (int(g) for g in _TCE.fullmatch(name).groups())
        descs = {(int(a[1]), int(a[2])) for a in lane_args}
        assert len(descs) == 1, "SQMMA: the threads of a warp squad give different descriptors"
        desc_a, desc_b = descs.pop()
        a = self.operand(desc_a, m, k, major_a == 0, kind)
        b = self.operand(desc_b, n, k, major_b == 0, kind)
        d = np.zeros((m, n))
        values = m * n // 128
        for lane, args in enumerate(lane_args):
            for v in range(values):
                d[clayout_element(m, n, lane, v)] = args[0].array.reshape(-1)[args[0].index + v]
        d = a @ b.T + d
        for lane, args in enumerate(lane_args):
            out = args[0].array.reshape(-1)
            for v in range(values):
                out[args[0].index + v] = d[clayout_element(m, n, lane, v)]


def run_kernel(func: tirx.PrimFunc, *tensors: np.ndarray) -> None:
    """Run a lowered `musa/mp_31` kernel on NumPy arrays (one per buffer parameter, in place)."""
    run_blocks(func, tensors, _MusaMachine, _run_block)


def _run_block(m: _MusaMachine, env: dict, threads: int) -> None:
    """The block scheduler: warp-squad collectives (SQMMA), warps lowest first, ASYNC barrier
    waits released when their phase completed, block barriers."""
    waiting, done, advance = start_threads(m, env, threads)
    for t in range(threads):
        advance(t)
    while not all(done):
        if warpgroup_step(m, threads, waiting, advance) or warp_step((threads + 31) // 32, threads, waiting, advance) \
                or release_barriers(threads, waiting, done, advance):
            continue
        live = [t for t in range(threads) if not done[t]]
        blocked = sorted({str(waiting[t][:1] + waiting[t][2:3]) for t in live})
        raise AssertionError(f"deadlock: threads wait on {blocked}")
