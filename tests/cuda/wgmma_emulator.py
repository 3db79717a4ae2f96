"""The TIR emulator (`tir_emulator.py`) with sm_90a's wgmma, for `T.gemm` on warpgroup MMA.
Semantics from the PTX ISA (9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"),
written here independently of the lowering's layout functions:

- Shared memory is one address space: each shared buffer starts at a 1024-byte boundary
  (as the CUDA printer places tiles a descriptor reads), in the order first addressed.
- `tl::wgmma_desc(ptr, lbo, sbo, mode)`: the 64-bit matrix descriptor (9.7.15.5.1.1): start
  address >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45, swizzle mode in 62-63
  (1: 128B, 2: 64B, 3: 32B, 0: none).
- `tl::wgmma_m64n{N}k16_f32_{f16,bf16}<tnspA, tnspB>(d, desc_a, desc_b, scale_d)`: a
  collective of the 128 threads of a warpgroup (4 consecutive warps from a multiple of 4).
  Element (r, k) of A (r < 64) or B (r < N), 2-byte elements, is read at

      K-major (tnsp 0):  start + (r // 8) * SBO + (r % 8) * W + 2 k
      MN-major (tnsp 1): start + (r // (W / 2)) * LBO + (k // 8) * SBO + (k % 8) * W + 2 (r % (W / 2))

  with W the swizzle width in bytes, and then the swizzle of the absolute address: bits
  4 .. 4+b-1 XOR bits 7 .. 7+b-1 (b = 3, 2, 1 for 128B, 64B, 32B; "Shared Memory Matrix
  Layout" 9.7.15.5.1). D (64 x N, f32): value i of thread t is at row
  16 (t / 32) + (t % 32) / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (t % 4) + i % 2
  ("Register fragments", wgmma .m64nNk16 D). D = A B + (scale_d ? D : 0).
- `tl::wgmma_m64n{N}k{K}_{f32,s32}_{tf32,e4m3,e5m2,s8}(d, desc_a, desc_b, scale_d)`: the
  same, both operands K-major (these types have no transpose, 9.7.15.5), K = 32 bytes of
  elements (8 tf32, 32 fp8 or s8): element (r, k) at start + (r // 8) * SBO + (r % 8) * W +
  bytes * k. tf32 operands are float32 words of which the unit takes the sign, exponent and
  10 high mantissa bits; the emulator drops the 13 low bits (truncation: nothing rounds the
  words between shared memory and the unit). This is our reading of the hardware, not a
  quoted rule; the ops checks (tests/ops/cases.py float32_bound) accept either rounding, so
  a GPU run does not tell them apart. s8 accumulates in int32.
- `tl::wgmma_m64n{N}k16_rs_f32_{f16,bf16}<tnspB>(d, a, desc_b, scale_d)`: the same with A
  (64 x 16) from registers: a[j] (j = 0..3) of thread t holds, low half first, A's elements
  at row 16 (t / 32) + (t % 32) / 4 + 8 (j % 2), columns 2 (t % 4) + 8 (j / 2) + {0, 1}
  ("Register fragments", wgmma .m64nNk16 A, 16-bit types).
- `tl::wgmma_m64n{N}k8_rs_f32_tf32(d, a, desc_b, scale_d)`: tf32 with A (64 x 8) from
  registers: a[j] (j = 0..3, float32 words) of thread t holds A's element at row
  16 (t / 32) + (t % 32) / 4 + 8 (j % 2), column (t % 4) + 4 (j / 2) ("Register fragments",
  wgmma .m64nNk8 A, 32-bit types; CuTe's ALayout_64x8); B K-major; the 13 low mantissa bits
  of every operand are dropped, as for tiles in shared memory.
- Asynchrony (9.7.15.6): a wgmma reads its operands when the warpgroup issues it, but D is
  written only when a `wgmma.wait_group N` (`tl::wgmma_wait<N>`) finds its group among the
  committed ones older than the N most recent (`commit_group`, `tl::wgmma_commit`, closes the
  group of the wgmmas issued since the last). A wgmma issued after another into the same
  registers accumulates onto its pending D. So code that reads D before the wait that covers
  it sees the value before the wgmma, and a store to D before that wait is overwritten by it.
  Commit and wait are warpgroup collectives here, as `.sync.aligned` makes them.
- `wgmma.fence`, `fence.proxy.async` and the operand fences are ordering only.
"""
from __future__ import annotations

import re

import numpy as np
from tvm import tirx

from tir_emulator import _launch, _Machine, run_blocks, start_threads, warp_step

__all__ = ["run_kernel", "swizzled_address", "warpgroup_step"]

_NO_OPS = ("tl::wgmma_fence_operands", "tl::fence_proxy_async")
_GROUP_OPS = re.compile(r"tl::wgmma_commit|tl::wgmma_wait<(\d+)>|tl::wgmma_fence")
_WIDTH = {1: 128, 2: 64, 3: 32}
_WGMMA = re.compile(r"tl::wgmma_m64n(\d+)k16_f32_(f16|bf16)<(\d), (\d)>")
_WGMMA_RS = re.compile(r"tl::wgmma_m64n(\d+)k16_rs_f32_(f16|bf16)<(\d)>")
_WGMMA_RS_TF32 = re.compile(r"tl::wgmma_m64n(\d+)k8_rs_f32_tf32")
_WGMMA_K_MAJOR = re.compile(r"tl::wgmma_m64n(\d+)k(\d+)_(f32|s32)_(tf32|e4m3|e5m2|s8)")
_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1}


def swizzled_address(start: int, lbo: int, sbo: int, width: int, mn_major: bool, r: int, k: int,
                     element: int = 2) -> int:
    """The shared address of element (r, k) of a descriptor's operand of `element`-byte values
    (module doc; MN-major only for 16-bit ones)."""
    if mn_major:
        per = width // 2
        addr = start + (r // per) * lbo + (k // 8) * sbo + (k % 8) * width + 2 * (r % per)
    else:
        addr = start + (r // 8) * sbo + (r % 8) * width + element * k
    bits = {128: 3, 64: 2, 32: 1}[width]
    return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)


def _decode(raw: np.ndarray, kind: str) -> float:
    """The value of one operand element from its bytes in shared memory."""
    if kind == "f16":
        return float(raw.view(np.float16)[0])
    if kind == "bf16":
        return float((raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)[0])
    if kind == "tf32":  # the 13 low mantissa bits are not read
        return float((raw.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)[0])
    if kind == "s8":
        return float(raw.view(np.int8)[0])
    import ml_dtypes

    return float(raw.view(ml_dtypes.float8_e4m3fn if kind == "e4m3" else ml_dtypes.float8_e5m2)[0])


class _Machine3(_Machine):
    def __init__(self, func, arrays, threads, code) -> None:
        super().__init__(func, arrays, threads, code)
        self.bases: dict[int, tuple[int, np.ndarray]] = {}  # id(array) -> (base, array)
        self.next_base = 1024
        # per warpgroup: D writes of the wgmmas issued since the last commit, and the committed
        # groups not yet waited for (oldest first); each maps (id(array), index) -> (array, index, value)
        self.open: dict[int, dict] = {}
        self.committed: dict[int, list] = {}

    def address(self, pointer) -> int:
        entry = self.bases.get(id(pointer.array))
        if entry is None:
            entry = (self.next_base, pointer.array)
            self.bases[id(pointer.array)] = entry
            self.next_base += -(-pointer.array.nbytes // 1024) * 1024 + 1024
        return entry[0] + pointer.index * pointer.array.itemsize

    def load(self, addr: int, size: int = 2) -> np.ndarray:
        for base, array in self.bases.values():
            if base <= addr < base + array.nbytes:
                raw = array.reshape(-1).view(np.uint8)
                return raw[addr - base:addr - base + size]
        raise AssertionError(f"wgmma reads shared address {addr:#x}, outside every shared tile")

    def compile_call(self, e):
        if e.op.name == "tirx.call_extern" and str(e.args[0].value) == "tl::wgmma_desc":
            ptr, lbo, sbo, mode = (self.compile(a) for a in e.args[1:])

            def desc(th):
                addr = th.machine.address(ptr(th))
                return (((addr & 0x3FFFF) >> 4) | (((int(lbo(th)) & 0x3FFFF) >> 4) << 16)
                        | (((int(sbo(th)) & 0x3FFFF) >> 4) << 32) | ((int(mode(th)) & 3) << 62))
            return desc
        return super().compile_call(e)

    def extern(self, name: str, args, th):
        if name.startswith(_NO_OPS):
            return
        if any(r.fullmatch(name) for r in (_WGMMA, _WGMMA_RS, _WGMMA_RS_TF32, _WGMMA_K_MAJOR, _GROUP_OPS)):
            yield ("wg", name, args)
            return
        yield from super().extern(name, args, th)

    def operand(self, desc: int, rows: int, mn_major: bool, kind: str) -> np.ndarray:
        """The (rows, K) operand a descriptor names (K = 32 bytes of elements), as float64."""
        start, lbo = (desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4
        sbo, mode = ((desc >> 32) & 0x3FFF) << 4, (desc >> 62) & 3
        assert mode in _WIDTH, "emulator: wgmma without swizzle is not modelled"
        size = _BYTES[kind]
        out = np.zeros((rows, 32 // size))
        for r in range(rows):
            for k in range(32 // size):
                raw = self.load(swizzled_address(start, lbo, sbo, _WIDTH[mode], mn_major, r, k, size), size)
                out[r, k] = _decode(raw, kind)
        return out

    @staticmethod
    def _value(bits: int, kind: str) -> float:
        return _decode(np.array([bits & 0xFFFF], np.uint16).view(np.uint8), kind)

    def register_operand(self, lane_args, kind: str) -> np.ndarray:
        """The (64, 16) A operand the warpgroup's threads hold in registers (module doc)."""
        out = np.full((64, 16), np.nan)
        for t, args in enumerate(lane_args):
            words = args[1].array.reshape(-1)[args[1].index:args[1].index + 4]
            for j, word in enumerate(int(w) for w in words):
                row, col = 16 * (t // 32) + (t % 32) // 4 + 8 * (j % 2), 2 * (t % 4) + 8 * (j // 2)
                out[row, col], out[row, col + 1] = self._value(word, kind), self._value(word >> 16, kind)
        assert not np.isnan(out).any(), "wgmma rs: some element of A held by no thread"
        return out

    def register_operand_tf32(self, lane_args) -> np.ndarray:
        """The (64, 8) tf32 A operand the warpgroup's threads hold in registers (module doc)."""
        out = np.full((64, 8), np.nan)
        for t, args in enumerate(lane_args):
            words = np.ascontiguousarray(args[1].array.reshape(-1)[args[1].index:args[1].index + 4], np.float32)
            for j, word in enumerate(words.view(np.uint8).reshape(4, 4)):
                out[16 * (t // 32) + (t % 32) // 4 + 8 * (j % 2), t % 4 + 4 * (j // 2)] = _decode(word, "tf32")
        assert not np.isnan(out).any(), "wgmma rs tf32: some element of A held by no thread"
        return out

    def _d(self, group: int, array, index: int):
        """Register `index` of `array` (flat) as the next wgmma of warpgroup `group` accumulates onto it."""
        key = (id(array), index)
        for writes in (self.open.get(group, {}), *reversed(self.committed.get(group, []))):
            if key in writes:
                return writes[key][2]
        return array.reshape(-1)[index]

    def group_op(self, name: str, group: int) -> None:
        """commit_group / wait_group N / wgmma.fence of warpgroup `group`."""
        if name == "tl::wgmma_fence":
            return
        if name == "tl::wgmma_commit":
            self.committed.setdefault(group, []).append(self.open.pop(group, {}))
            return
        keep = int(_GROUP_OPS.fullmatch(name).group(1))
        groups = self.committed.get(group, [])
        done, self.committed[group] = groups[:max(0, len(groups) - keep)], groups[max(0, len(groups) - keep):]
        for writes in done:
            for array, index, value in writes.values():
                array.reshape(-1)[index] = value

    def pending(self) -> int:
        """wgmma D writes still waiting for a wait_group (a kernel must end with none)."""
        return sum(len(w) for g in set(self.open) | set(self.committed)
                   for w in [self.open.get(g, {}), *self.committed.get(g, [])])

    def wgmma(self, name: str, lane_args, group: int = 0) -> None:
        if _GROUP_OPS.fullmatch(name):
            self.group_op(name, group)
            return
        rs, k_major = _WGMMA_RS.fullmatch(name), _WGMMA_K_MAJOR.fullmatch(name)
        rs_tf32 = _WGMMA_RS_TF32.fullmatch(name)
        if rs_tf32:
            n, kind, tb = rs_tf32.group(1), "tf32", "0"
            descs = {(int(a[2]), int(a[3])) for a in lane_args}
            assert len(descs) == 1, "wgmma: the threads of a warpgroup give different descriptors or scale-d"
            desc_b, scale = descs.pop()
            a = self.register_operand_tf32(lane_args)
        elif k_major:
            n, _, _, kind = k_major.groups()
            ta = tb = "0"
            descs = {(int(a[1]), int(a[2]), int(a[3])) for a in lane_args}
            assert len(descs) == 1, "wgmma: the threads of a warpgroup give different descriptors or scale-d"
            desc_a, desc_b, scale = descs.pop()
            a = self.operand(desc_a, 64, False, kind)
        elif rs:
            n, kind, tb = rs.groups()
            descs = {(int(a[2]), int(a[3])) for a in lane_args}
            assert len(descs) == 1, "wgmma: the threads of a warpgroup give different descriptors or scale-d"
            desc_b, scale = descs.pop()
            a = self.register_operand(lane_args, kind)
        else:
            n, kind, ta, tb = _WGMMA.fullmatch(name).groups()
            descs = {(int(a[1]), int(a[2]), int(a[3])) for a in lane_args}
            assert len(descs) == 1, "wgmma: the threads of a warpgroup give different descriptors or scale-d"
            desc_a, desc_b, scale = descs.pop()
            a = self.operand(desc_a, 64, ta == "1", kind)  # (M, K)
        n = int(n)
        b = self.operand(desc_b, n, tb == "1", kind)  # (N, K)
        d = np.zeros((64, n))
        for t, args in enumerate(lane_args):
            for i in range(n // 2):
                row, col = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (t % 4) + i % 2
                d[row, col] = self._d(group, args[0].array, args[0].index + i)
        d = a @ b.T + (d if scale else 0)
        writes = self.open.setdefault(group, {})
        for t, args in enumerate(lane_args):
            for i in range(n // 2):
                row, col = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (t % 4) + i % 2
                writes[(id(args[0].array), args[0].index + i)] = (args[0].array, args[0].index + i, d[row, col])


def run_kernel(func: tirx.PrimFunc, *tensors: np.ndarray) -> None:
    """Run a lowered kernel on NumPy arrays (one per buffer parameter, written in place)."""
    _, threads = _launch(func)
    assert threads % 128 == 0, "wgmma kernels run whole warpgroups"
    run_blocks(func, tensors, _Machine3, _run_block)


def _run_block(m: _Machine3, env: dict, threads: int) -> None:
    """tir_emulator's scheduler (lowest warp first, barriers of the whole block) plus
    warpgroup collectives, which run when all 128 threads of the warpgroup wait at one."""
    waiting, done, advance = start_threads(m, env, threads)

    for t in range(threads):
        advance(t)
    while not all(done):
        if warpgroup_step(m, threads, waiting, advance) or warp_step(threads // 32, threads, waiting, advance):
            continue
        live = [t for t in range(threads) if not done[t]]
        if live and all(waiting[t] == ("sync",) for t in live):
            assert len(live) == threads, "__syncthreads reached by only some threads"
            for t in range(threads):
                advance(t)
            continue
        blocked = {str(waiting[t][:2]) for t in live}
        raise AssertionError(f"deadlock: threads wait on {blocked}")


def warpgroup_step(m: _Machine3, threads: int, waiting: list, advance) -> bool:
    """Run the lowest whole warpgroup whose 128 threads all wait at one wgmma; False when none."""
    for g in range(threads // 128):
        lanes = range(g * 128, g * 128 + 128)
        events = [waiting[t] for t in lanes]
        if all(e is not None and e[0] == "wg" for e in events):
            names = {e[1] for e in events}
            assert len(names) == 1, f"warpgroup {g}: threads diverge at {names}"
            m.wgmma(events[0][1], [e[2] for e in events], g)
            for t in lanes:
                advance(t)
            return True
    return False
