"""A NumPy emulator of lowered CUDA TIR, for checking tensor-core lowerings without a GPU.

It runs the PrimFunc that `tilelang_core.jit.api.lower` returns for a `cuda/...` target,
block after block, each thread as a Python generator, with the semantics of the device
helpers the lowering calls taken from the PTX ISA, independently of the lowering's own layout
functions:

- `ldmatrix.m8n8[.x1/.x2/.x4][.trans].b16`: lanes 8i..8i+7 give the row addresses of matrix
  i (16 bytes each); lane l receives, from each matrix, the 32-bit word (l % 4) of row l / 4,
  or with .trans the 16-bit elements (2 (l % 4) + h, l / 4), h = 0, 1.
- `mma.sync.m16n8k{16,32,8}`: the fragments are read through CuTe's thread-value layouts of
  `MMA_Traits<SM80_16x8x16_F32F16F16F32_TN>`, `..._16x8x32_S32S8S8S32_TN` and
  `..._16x8x8_F32TF32TF32F32_TN` (cute/atom/mma_traits_sm80.hpp), which map (lane, value) to
  a column-major position in the A (M x K), B (N x K) and C (M x N) tiles.
- `cp.async` lands at the `cp.async.wait_group` that covers its group (not at issue), so a
  read before the wait sees stale shared memory.
- `warp_allreduce_<op><Lanes>` (a butterfly of `__shfl_xor_sync`): every lane receives op
  over its group of `Lanes` consecutive lanes.
- `tl.shfl_xor(v, m)` (`__shfl_xor_sync`): lane l receives v of lane l ^ m; a store whose
  value shuffles waits for the whole warp first.
- TVM's `tvm_warp_shuffle[_up|_down](mask, v, lane or delta, width, warp_size)`
  (`__shfl[_up|_down]_sync(mask, v, lane or delta, width)`, CUDA C++ Programming Guide,
  "Warp Shuffle Functions"): the warp is cut into segments of `width` lanes; lane l reads v
  of lane `src % width` of its segment, of lane l - delta (l + delta for _down) when that lane
  is in its segment, else its own v. Every lane of the warp must take part and `mask` must
  name them all.
- `tl.dp4a(a, b, c)` (`dp4a.s32.s32`, PTX ISA): `*c` plus the four products of the signed
  bytes at `a` and `b`, wrapping in 32 bits.
- TVM's `ptx_legacy.ldmatrix` / `ptx_legacy.mma` (TileLang's `T.ptx_ldmatrix` / `T.ptx_mma`):
  the same ldmatrix / mma.sync, with pointers plus element offsets (`buf.data` is element 0).
- `tl::pack_b16x2(lo, hi)`: two 16-bit patterns in one 32-bit word, lo in the low half;
  `reinterpret` of a 16-bit value gives its pattern.

Scheduling is adversarial for missing barriers: the lowest-numbered runnable warp runs until
all its lanes block (at a warp-collective instruction or a barrier), before any other warp
moves; `__syncthreads` releases only when every thread has arrived.
"""
from __future__ import annotations

import functools

import numpy as np
from tvm import ir, tirx

__all__ = ["run_kernel", "CUTE_LAYOUTS"]

_NP = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32, "float64": np.float64, "int8": np.int8,
       "int32": np.int32, "int64": np.int64, "uint32": np.uint32, "uint8": np.uint8,
       "uint16": np.uint16, "int16": np.int16, "bool": np.bool_,
       "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}  # fp8: raw bytes, moved untouched

# CuTe TV layouts: ((thread shape), (value shape)) : ((thread strides), (value strides))
CUTE_LAYOUTS = {
    16: {  # SM80_16x8x16_F32F16F16F32_TN (bf16 identical)
        "A": (((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128))),
        "B": (((4, 8), (2, 2)), ((16, 1), (8, 64))),
    },
    32: {  # SM80_16x8x32_S32S8S8S32_TN
        "A": (((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256))),
        "B": (((4, 8), (4, 2)), ((32, 1), (8, 128))),
    },
    8: {  # SM80_16x8x8_F32TF32TF32F32_TN
        "A": (((4, 8), (2, 2)), ((16, 1), (8, 64))),
        "B": (((4, 8), 2), ((8, 1), 32)),
    },
    "C": (((4, 8), (2, 2)), ((32, 1), (16, 8))),  # SM80_16x8_Row
}


@functools.lru_cache(maxsize=None)
def cute_offset(layout, thread: int, value: int) -> int:
    """The column-major offset a CuTe TV layout gives (thread, value)."""
    (tshape, vshape), (tstride, vstride) = layout

    def apply(shape, stride, index):
        if isinstance(shape, int):
            return index * stride
        total = 0
        for s, d in zip(shape, stride):
            total += (index % s) * d
            index //= s
        return total

    return apply(tshape, tstride, thread) + apply(vshape, vstride, value)


class _Pointer:
    def __init__(self, array: np.ndarray, index: int) -> None:
        self.array, self.index = array, int(index)

    def raw(self, nbytes: int) -> np.ndarray:
        """A writable byte view of `nbytes` bytes from here."""
        flat = self.array.reshape(-1).view(np.uint8)
        start = self.index * self.array.itemsize
        return flat[start:start + nbytes]


class _Blocked(Exception):
    pass


def _words(raw: np.ndarray) -> np.ndarray:
    return raw.view(np.uint32)


def _round_tf32(word: int) -> int:
    """cvt.rna.tf32.f32: keep 10 mantissa bits, round to nearest, ties away from zero."""
    word = int(word) & 0xFFFFFFFF
    if (word >> 23) & 0xFF == 0xFF:
        return word
    return ((word + 0x1000) & 0xFFFFE000) & 0xFFFFFFFF


class _Thread:
    def __init__(self, tid: int, env: dict) -> None:
        self.tid = tid
        self.env = dict(env)
        self.locals: dict = {}
        self.groups: list[list] = []  # committed cp.async groups, oldest first
        self.machine = None
        self.open_group: list = []
        self.shuffled: dict = {}  # shuffle call -> the value this lane received


class _Machine:
    def __init__(self, func: tirx.PrimFunc, arrays: dict, threads: int, code: dict | None = None) -> None:
        self.func = func
        self.arrays = arrays  # buffer var -> np array (global)
        self.threads = threads
        self.shared: dict = {}
        self._code: dict = {} if code is None else code  # compiled expressions, by node
        self._keep: list = []

    # -- expressions -----------------------------------------------------------------------

    def buffer_array(self, th: _Thread, buf) -> np.ndarray:
        for table in (th.locals, self.shared, self.arrays):
            if buf in table:
                return table[buf]
        raise KeyError(f"buffer {buf.name} is not allocated")

    def ev(self, e, th):
        key = e.__chandle__() if hasattr(e, "__chandle__") else id(e)
        fn = self._code.get(key)
        if fn is None:
            fn = self._code[key] = self.compile(e)
            self._keep.append(e)  # the handle must outlive the cache entry
        return fn(th)

    def compile(self, e):
        """`e` as a Python closure over a thread's state (evaluated many times)."""
        t = type(e)
        if t is tirx.IntImm:
            value = int(e.value)
            return lambda th: value
        if t is tirx.FloatImm:
            value = float(e.value)
            return lambda th: value
        if isinstance(e, tirx.Var) or t is ir.Var:
            handle = e.__chandle__()
            return lambda th: th.env[handle]
        if t is ir.TensorLoad and e.indices and isinstance(e.indices[-1], tirx.Ramp):
            buf, flat, lanes = e.source, self.compile_flat(e.source, e.indices), int(e.indices[-1].lanes)
            return lambda th: th.machine.buffer_array(th, buf).reshape(-1)[flat(th):flat(th) + lanes].copy()
        if t is ir.TensorLoad:
            buf, flat = e.source, self.compile_flat(e.source, e.indices)

            def load(th):
                value = th.machine.buffer_array(th, buf).reshape(-1)[flat(th)]
                return value.item() if np.ndim(value) == 0 else value.copy()  # a Ramp: a vector
            return load
        if t is tirx.Ramp:
            base, stride, lanes = self.compile(e.base), self.compile(e.stride), int(e.lanes)
            return lambda th: base(th) + stride(th) * np.arange(lanes)
        if t in _BIN:
            op, a, b = _BIN[t], self.compile(e.a), self.compile(e.b)
            if t is tirx.And:
                return lambda th: a(th) and b(th)
            if t is tirx.Or:
                return lambda th: a(th) or b(th)
            return lambda th: op(a(th), b(th))
        if t is tirx.Not:
            a = self.compile(e.a)
            return lambda th: not a(th)
        if t is tirx.Select:
            c, x, y = self.compile(e.condition), self.compile(e.true_value), self.compile(e.false_value)
            return lambda th: x(th) if c(th) else y(th)
        if t is tirx.Cast:
            value, dtype = self.compile(e.value), str(e.ty.dtype)
            if dtype.startswith("int") or dtype.startswith("uint"):
                return lambda th: int(value(th))
            if dtype == "bool":
                return lambda th: bool(value(th))
            np_type = _NP[dtype]
            return lambda th: float(np_type(value(th)))
        if t is tirx.Let:
            var, value, body = e.var.__chandle__(), self.compile(e.value), self.compile(e.body)

            def let(th):
                th.env[var] = value(th)
                return body(th)
            return let
        if t is ir.Call:
            return self.compile_call(e)
        raise NotImplementedError(f"emulator: expression {t.__name__}: {e}")

    def compile_flat(self, buf, indices):
        """The flat index of `indices`; of the first element when the last index is a vector
        (a unit-stride Ramp: the printers' vector access)."""
        shape = [int(d) for d in buf.ty.shape]
        indices = list(indices)
        if indices and isinstance(indices[-1], tirx.Ramp):
            assert int(indices[-1].stride) == 1, "emulator: vectors are unit-stride"
            assert indices[-1].lanes and int(indices[-1].lanes) > 1
            indices[-1] = indices[-1].base
        parts = [self.compile(i) for i in indices]
        name = buf.name

        def flat(th):
            out = 0
            for part, d in zip(parts, shape):
                i = part(th)
                if not (np.all(0 <= i) and np.all(i < d)):
                    raise IndexError(f"{name}: index {i} is outside {shape}")
                out = out * d + i
            return out
        return flat

    def ev_flat(self, store, th) -> int:
        key = ("flat", store.__chandle__())
        fn = self._code.get(key)
        if fn is None:
            fn = self._code[key] = self.compile_flat(store.buffer, store.indices)
            self._keep.append(store)
        return fn(th)

    def compile_call(self, e):
        name = e.op.name
        if name == "prim.if_then_else":
            c, x, y = (self.compile(a) for a in e.args)
            return lambda th: x(th) if c(th) else y(th)
        if name == "tirx.address_of":
            load = e.args[0]
            buf, flat = load.source, self.compile_flat(load.source, load.indices)
            return lambda th: _Pointer(th.machine.buffer_array(th, buf), flat(th))
        if name == "tirx.buffer_data":  # `buf.data`: a pointer to element 0
            buf = e.args[0]
            return lambda th: _Pointer(th.machine.buffer_array(th, buf), 0)
        if name == "tirx.tvm_access_ptr":
            ptr, off = self.compile(e.args[1]), self.compile(e.args[2])

            def access(th):
                p = ptr(th)
                return _Pointer(p.array, p.index + int(off(th)))
            return access
        if name == "tl.dp4a":  # dp4a.s32.s32: c += the 4 products of signed bytes, wrapping in 32 bits
            a, b, c = (self.compile(arg) for arg in e.args)

            def dp4a(th):
                dot = int(np.dot(a(th).raw(4).view(np.int8).astype(np.int64), b(th).raw(4).view(np.int8).astype(np.int64)))
                acc = c(th).raw(4).view(np.int32)
                acc[0] = np.int64(int(acc[0]) + dot).astype(np.uint32).view(np.int32)
                return 0
            return dp4a
        if name == "prim.likely":
            return self.compile(e.args[0])
        if name == "tirx.reinterpret" and str(e.ty.dtype) == "uint16":
            value, bits = self.compile(e.args[0]), _bits16(str(e.args[0].ty.dtype))
            return lambda th: bits(value(th))
        if name in _SHUFFLES:
            key = e.__chandle__()
            return lambda th: th.shuffled[key]
        if name == "tirx.call_extern" and str(e.args[0].value) == "tl::pack_b16x2":
            lo, hi = self.compile(e.args[1]), self.compile(e.args[2])
            return lambda th: (int(lo(th)) & 0xFFFF) | ((int(hi(th)) & 0xFFFF) << 16)
        short = name.split(".")[-1]
        if short in _MATH:
            fn, args = _MATH[short], [self.compile(a) for a in e.args]
            np_type = _NP[str(e.ty.dtype)]
            return lambda th: float(np_type(fn(*(a(th) for a in args))))
        raise NotImplementedError(f"emulator: call of {name}")

    # -- statements (generators: they yield ("warp", name, args) or ("sync",)) -------------

    def run(self, s, th):
        t = type(s)
        if t is tirx.SeqStmt:
            for child in s.seq:
                yield from self.run(child, th)
        elif t is tirx.For:
            lo, n = self.ev(s.min, th), self.ev(s.extent, th)
            var = s.loop_var.__chandle__()
            for i in range(lo, lo + n):
                th.env[var] = i
                yield from self.run(s.body, th)
        elif t is tirx.While:
            while self.ev(s.condition, th):
                yield from self.run(s.body, th)
        elif t is tirx.AttrStmt:
            if s.attr_key == "thread_extent":
                tag = str(s.node.thread_tag)
                if tag.startswith("threadIdx"):  # x varies fastest: tid = x + X * (y + Y * z)
                    stride = th.env.get("thread_stride", 1)
                    th.env[s.node.var.__chandle__()] = (th.tid // stride) % int(s.value)
                    th.env["thread_stride"] = stride * int(s.value)
            yield from self.run(s.body, th)
        elif t is tirx.IfThenElse:
            if self.ev(s.condition, th):
                yield from self.run(s.then_case, th)
            elif s.else_case is not None:
                yield from self.run(s.else_case, th)
        elif t is tirx.Bind:
            th.env[s.var.__chandle__()] = self.ev(s.value, th)
        elif t is tirx.AllocBuffer:
            buf = s.buffer
            shape = [int(d) for d in buf.ty.shape]
            scope = str(buf.ty.storage_scope)
            if scope in ("shared", "shared.dyn"):
                if buf not in self.shared:
                    # garbage, not zeros: a read of an unwritten element shows up
                    self.shared[buf] = np.full(shape, 77, dtype=_NP[str(buf.ty.dtype)])
            else:
                th.locals[buf] = np.zeros(shape, dtype=_NP[str(buf.ty.dtype)])
        elif t is tirx.DeclBuffer:  # a view (same dtype) of another buffer's memory
            data = s.data
            if not (isinstance(data, ir.Call) and data.op.name == "tirx.buffer_data"):
                raise NotImplementedError(f"emulator: DeclBuffer of {s.buffer.name} over {data}")
            base = self.buffer_array(th, data.args[0])
            if base.dtype != _NP[str(s.buffer.ty.dtype)]:
                raise NotImplementedError(f"emulator: DeclBuffer {s.buffer.name} reinterprets {base.dtype}")
            view = base.reshape([int(d) for d in s.buffer.ty.shape])
            table = th.locals if any(base is a for a in th.locals.values()) else self.shared
            table[s.buffer] = view
        elif t is tirx.BufferStore:
            for call in self.shuffles(s):
                kind = _SHUFFLES[call.op.name]
                if kind == "xor":
                    value, arg, width, mask = self.ev(call.args[0], th), self.ev(call.args[1], th), 32, 0xFFFFFFFF
                else:
                    mask, value, arg, width = (self.ev(a, th) for a in call.args[:4])
                yield ("warp", "shfl", (th, call.__chandle__(), value, kind, arg, width, mask))
            arr = self.buffer_array(th, s.buffer)
            value = self.ev(s.value, th)
            if s.indices and isinstance(s.indices[-1], tirx.Ramp):
                lanes = int(s.indices[-1].lanes)
                start = self.ev_flat(s, th)
                assert start % lanes == 0, f"emulator: vector store to {s.buffer.name} at {start}, not {lanes}-aligned"
                arr.reshape(-1)[start:start + lanes] = value
            else:
                arr.reshape(-1)[self.ev_flat(s, th)] = value
        elif t is tirx.Evaluate:
            value = s.value
            if isinstance(value, ir.Call) and value.op.name == "tl.sync_threads":
                yield ("sync",)
            elif isinstance(value, ir.Call) and value.op.name == "tirx.call_extern":
                yield from self.extern(str(value.args[0].value), [self.ev(a, th) for a in value.args[1:]], th)
            elif isinstance(value, ir.Call) and value.op.name in _PTX_BUILTINS:
                yield _PTX_BUILTINS[value.op.name](self, value, th)
            elif isinstance(value, ir.Call):
                self.ev(value, th)
        else:
            raise NotImplementedError(f"emulator: statement {t.__name__}")

    def extern(self, name: str, args, th):
        if name.startswith(("tl::cp_async_cg16", "tl::cp_async_ca")):
            dst, src = args[0], args[1]
            size = 16 if name.startswith("tl::cp_async_cg16") else int(name.split("<")[1].rstrip(">"))
            valid = bool(args[2]) if len(args) > 2 else True
            data = src.raw(size).copy() if valid else np.zeros(size, np.uint8)
            th.open_group.append((dst, data))
        elif name == "tl::cp_async_commit":
            th.groups.append(th.open_group)
            th.open_group = []
        elif name.startswith("tl::cp_async_wait"):
            keep = 0 if name.endswith("wait_all") else int(name.split("<")[1].rstrip(">"))
            while len(th.groups) > keep:
                for dst, data in th.groups.pop(0):
                    dst.raw(data.size)[:] = data
        elif name == "tl::mma_round_tf32":
            word = args[0].raw(4).view(np.uint32)
            word[0] = _round_tf32(word[0])
        elif name == "tl::mma_pack_b16":
            out = args[0].raw(4)
            out[0:2], out[2:4] = args[1].raw(2), args[2].raw(2)
        elif name == "tl::mma_pack_b8":
            out = args[0].raw(4)
            for i in range(4):
                out[i:i + 1] = args[1 + i].raw(1)
        elif name == "tl::mma_load_b32":
            args[0].raw(4)[:] = args[1].raw(4)
        elif name.startswith("tl::ldmatrix") or name.startswith("tl::mma_m16n8") or name.startswith("tl::warp_"):
            yield ("warp", name, args)
        else:
            raise NotImplementedError(f"emulator: extern {name}")

    def shuffles(self, store) -> list:
        key = ("shfl", store.__chandle__())
        found = self._code.get(key)
        if found is None:
            found = []

            def visit(node):
                if isinstance(node, ir.Call) and isinstance(node.op, ir.Op) and node.op.name in _SHUFFLES:
                    found.append(node)

            from tilelang_core.transform.irutil import walk

            walk(store.value, visit, (ir.Call,))
            self._code[key] = found
            self._keep.append(store)
        return found

    # -- warp collectives ------------------------------------------------------------------

    @staticmethod
    def shuffle(lane_args) -> None:
        values = [a[2] for a in lane_args]
        lanes = len(lane_args)
        if len({a[1] for a in lane_args}) != 1:
            raise AssertionError("warp: lanes diverge at different shuffles")
        for lane, (th, key, _, kind, arg, width, mask) in enumerate(lane_args):
            if int(mask) & ((1 << lanes) - 1) != (1 << lanes) - 1:
                raise AssertionError(f"shuffle mask {int(mask):#x} leaves out lanes of a warp of {lanes}")
            if width < 1 or width > 32 or width & (width - 1):
                raise AssertionError(f"shuffle width {width} is not a power of 2 up to 32")
            base = lane - lane % width
            if kind == "xor":
                src = lane ^ arg
            elif kind == "idx":
                src = base + arg % width
            elif kind == "up":
                src = lane - arg if lane - arg >= base else lane
            else:
                src = lane + arg if lane + arg < base + width else lane
            if not 0 <= src < lanes:
                raise AssertionError(f"lane {lane} reads lane {src} of a warp of {lanes}")
            th.shuffled[key] = values[src]

    @staticmethod
    def ldmatrix(name: str, lane_args) -> None:
        count = int(name.split("_x")[1][0])
        trans = name.endswith("_trans")
        rows = [lane_args[l][1].raw(16).view(np.uint16) for l in range(32)]  # 8 b16 each
        for lane in range(32):
            out = lane_args[lane][0].raw(4 * count).view(np.uint16)
            for i in range(count):
                for h in range(2):
                    if trans:
                        out[2 * i + h] = rows[8 * i + 2 * (lane % 4) + h][lane // 4]
                    else:
                        out[2 * i + h] = rows[8 * i + lane // 4][2 * (lane % 4) + h]

    @staticmethod
    def allreduce(name: str, lane_args) -> None:
        """warp_allreduce_<op><Lanes>(v): every lane gets op over its group of Lanes lanes."""
        op = name.split("warp_allreduce_")[1].split("<")[0]
        lanes = int(name.split("<")[1].rstrip(">"))
        values = [a[0].array.reshape(-1)[a[0].index].item() for a in lane_args]
        combine = {"sum": sum, "max": max, "min": min}[op]
        for lane, a in enumerate(lane_args):
            group = values[lane - lane % lanes: lane - lane % lanes + lanes]
            a[0].array.reshape(-1)[a[0].index] = combine(group)

    @staticmethod
    def mma(name: str, lane_args) -> None:
        k = int(name.split("m16n8k")[1].split("_")[0])
        kind = name.split("_")[-2]  # f16, bf16, s8, tf32
        a = np.zeros((16, k))
        b = np.zeros((8, k))  # N x K
        c = np.zeros((16, 8))
        per_reg = {"f16": 2, "bf16": 2, "s8": 4, "tf32": 1}[kind]
        for lane in range(32):
            d_ptr, a_ptr, b_ptr, c_ptr = lane_args[lane]
            a_vals = _decode(a_ptr.raw(16), kind)
            b_vals = _decode(b_ptr.raw(8), kind)
            for v, x in enumerate(a_vals):
                off = cute_offset(CUTE_LAYOUTS[k]["A"], lane, v)
                a[off % 16, off // 16] = x
            for v, x in enumerate(b_vals):
                off = cute_offset(CUTE_LAYOUTS[k]["B"], lane, v)
                b[off % 8, off // 8] = x
            acc = c_ptr.array.reshape(-1)[c_ptr.index:c_ptr.index + 4]
            for v in range(4):
                off = cute_offset(CUTE_LAYOUTS["C"], lane, v)
                c[off % 16, off // 16] = acc[v]
        assert len(a_vals) == 4 * per_reg
        d = a @ b.T + c
        for lane in range(32):
            d_ptr = lane_args[lane][0]
            out = d_ptr.array.reshape(-1)
            for v in range(4):
                off = cute_offset(CUTE_LAYOUTS["C"], lane, v)
                out[d_ptr.index + v] = d[off % 16, off // 16]


def _at(m: _Machine, ptr, offset, th) -> _Pointer:
    """`ptr + offset` (elements of the pointed-to array), both IR expressions."""
    p = m.ev(ptr, th)
    return _Pointer(p.array, p.index + int(m.ev(offset, th)))


def _text(value) -> str:
    return str(value.value) if isinstance(value, ir.StringImm) else str(value)


def _ptx_ldmatrix(m: _Machine, call, th) -> tuple:
    """TVM's `ptx_legacy.ldmatrix(trans, num, ".b16", dst, dst_off, src, src_off)`."""
    trans, num, dtype, dst, dst_off, src, src_off = call.args
    assert _text(dtype).lstrip(".") == "b16", f"ldmatrix of {_text(dtype)}"
    name = f"tl::ldmatrix_x{int(num)}" + ("_trans" if int(trans) else "")
    return ("warp", name, (_at(m, dst, dst_off, th), _at(m, src, src_off, th)))


# TVM / TileLang spellings of mma.sync operand types -> the kinds `_Machine.mma` decodes
_MMA_KINDS = {"fp16": "f16", "float16": "f16", "bf16": "bf16", "bfloat16": "bf16", "int8": "s8", "s8": "s8",
              "fp32": "f32", "float32": "f32", "int32": "s32", "s32": "s32"}


def _ptx_mma(m: _Machine, call, th) -> tuple:
    """TVM's `ptx_legacy.mma(shape, "row", "col", A, B, C, a, a_off, b, b_off, c, c_off, saturate)`:
    d = c, the accumulator at c_off, updated in place."""
    shape, a_layout, b_layout, a_type, b_type, c_type, a, a_off, b, b_off, c, c_off, saturate = call.args[:13]
    assert (_text(a_layout), _text(b_layout)) == ("row", "col") and not int(saturate) and len(call.args) == 13
    kind, acc = _MMA_KINDS[_text(a_type)], _MMA_KINDS[_text(c_type)]
    assert _MMA_KINDS[_text(b_type)] == kind and _text(shape).startswith("m16n8k")
    acc_ptr = _at(m, c, c_off, th)
    return ("warp", f"tl::mma_{_text(shape)}_{kind}_{acc}", (acc_ptr, _at(m, a, a_off, th), _at(m, b, b_off, th), acc_ptr))


_PTX_BUILTINS = {"tirx.ptx_legacy.ldmatrix": _ptx_ldmatrix, "tirx.ptx_legacy.mma": _ptx_mma}


def _bits16(dtype: str):
    """The 16-bit pattern of an emulated value (float16 as a float, bfloat16 as its bits)."""
    if dtype == "float16":
        return lambda x: int(np.float16(x).view(np.uint16))
    return lambda x: int(x) & 0xFFFF


def _decode(raw: np.ndarray, kind: str) -> np.ndarray:
    if kind == "f16":
        return raw.view(np.float16).astype(np.float64)
    if kind == "bf16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if kind == "s8":
        return raw.view(np.int8).astype(np.float64)
    return raw.view(np.float32).astype(np.float64)


# shuffle ops -> their kind (see the module docstring)
_SHUFFLES = {"tl.shfl_xor": "xor", "tirx.tvm_warp_shuffle": "idx", "tirx.tvm_warp_shuffle_up": "up",
             "tirx.tvm_warp_shuffle_down": "down"}

_MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
         "fabs": np.abs, "tanh": np.tanh, "rsqrt": lambda x: 1 / np.sqrt(x)}

_BIN = {
    tirx.Add: lambda a, b: a + b,
    tirx.Sub: lambda a, b: a - b,
    tirx.Mul: lambda a, b: a * b,
    tirx.Div: lambda a, b: a / b if isinstance(a, float) or isinstance(b, float) else int(a / b),
    tirx.Mod: lambda a, b: a - b * int(a / b),
    tirx.FloorDiv: lambda a, b: a // b,
    tirx.FloorMod: lambda a, b: a % b,
    tirx.Min: min,
    tirx.Max: max,
    tirx.EQ: lambda a, b: a == b,
    tirx.NE: lambda a, b: a != b,
    tirx.LT: lambda a, b: a < b,
    tirx.LE: lambda a, b: a <= b,
    tirx.GT: lambda a, b: a > b,
    tirx.GE: lambda a, b: a >= b,
    tirx.And: lambda a, b: a and b,
    tirx.Or: lambda a, b: a or b,
    tirx.BitwiseXor: lambda a, b: a ^ b,
    tirx.BitwiseAnd: lambda a, b: a & b,
    tirx.BitwiseOr: lambda a, b: a | b,
    tirx.LShift: lambda a, b: a << b,
    tirx.RShift: lambda a, b: a >> b,
}


def _launch(func) -> tuple[dict, int]:
    grid, threads = {}, 1
    body = func.body
    while isinstance(body, tirx.AttrStmt) and body.attr_key == "thread_extent":
        tag = str(body.node.thread_tag)
        if tag.startswith("blockIdx"):
            grid[body.node.var.__chandle__()] = int(body.value)
        else:
            threads *= int(body.value)
        body = body.body
    return grid, threads


def run_kernel(func: tirx.PrimFunc, *tensors: np.ndarray) -> None:
    """Run a lowered kernel on NumPy arrays (one per buffer parameter, written in place)."""
    run_blocks(func, tensors, _Machine, _run_block)


def run_blocks(func: tirx.PrimFunc, tensors, make_machine, run_block) -> int:
    """Run every block of `func` on `tensors` (one per buffer parameter, written in place):
    `make_machine(func, arrays, threads, code)` builds a block's machine (compiled expressions
    `code` shared by all blocks), `run_block(machine, env, threads)` runs it. Returns the
    threads per block."""
    arrays = {p: t for p, t in zip(func.params, tensors)}
    grid, threads = _launch(func)
    axes = list(grid.items())
    code: dict = {}
    for flat_block in range(int(np.prod([n for _, n in axes])) if axes else 1):
        env, rest = {}, flat_block
        for var, n in axes:
            env[var], rest = rest % n, rest // n
        machine = make_machine(func, arrays, threads, code)
        run_block(machine, env, threads)
        if getattr(machine, "pending", None) is not None and machine.pending():
            raise AssertionError(f"block {flat_block} ended with {machine.pending()} wgmma results never waited for")
    return threads


def start_threads(m, env: dict, threads: int):
    """Each thread of a block as a generator on machine `m`: (waiting, done, advance), where
    `waiting[t]` is the event thread `t` is blocked on, `done[t]` whether it finished, and
    `advance(t)` runs it to its next event."""
    states = [_Thread(t, env) for t in range(threads)]
    for th in states:
        th.machine = m  # compiled expressions are shared by all blocks: they read it here
    gens = [m.run(m.func.body, th) for th in states]
    waiting: list = [None] * threads
    done = [False] * threads

    def advance(t):
        try:
            waiting[t] = next(gens[t])
        except StopIteration:
            done[t] = True
            waiting[t] = None

    return waiting, done, advance


def _run_block(m: _Machine, env: dict, threads: int) -> None:
    waiting, done, advance = start_threads(m, env, threads)

    warps = (threads + 31) // 32
    for w in range(warps):  # the first warp runs until it blocks before the others start
        for t in range(w * 32, min(threads, w * 32 + 32)):
            advance(t)
    while not all(done):
        if warp_step(warps, threads, waiting, advance):  # lowest warp first
            continue
        live = [t for t in range(threads) if not done[t]]
        if live and all(waiting[t] == ("sync",) for t in live):
            if len(live) != threads:
                raise AssertionError("__syncthreads reached by only some threads")
            for w in range(warps):
                for t in range(w * 32, min(threads, w * 32 + 32)):
                    advance(t)
            continue
        blocked = {str(waiting[t][:2]) for t in live}
        raise AssertionError(f"deadlock: threads wait on {blocked}")


def warp_step(warps: int, threads: int, waiting: list, advance) -> bool:
    """Run the lowest warp whose lanes all wait at one warp-collective instruction (ldmatrix,
    a warp allreduce, a shuffle, an mma); False when no warp is there."""
    for w in range(warps):
        lanes = range(w * 32, min(threads, w * 32 + 32))
        events = [waiting[t] for t in lanes]
        if any(e is None for e in events) or events[0][0] != "warp":
            continue
        names = {e[1] for e in events}
        if len(names) != 1:
            raise AssertionError(f"warp {w}: lanes diverge at {names}")
        name = events[0][1]
        args = [e[2] for e in events]
        if name.startswith("tl::ldmatrix"):
            _Machine.ldmatrix(name, args)
        elif name.startswith("tl::warp_allreduce"):
            _Machine.allreduce(name, args)
        elif name == "shfl":
            _Machine.shuffle(args)
        else:
            _Machine.mma(name, args)
        for t in lanes:
            advance(t)
        return True
    return False
