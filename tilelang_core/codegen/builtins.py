"""Device builtins the lowered IR may call, registered as TVM ops named `tl.*`.

Every C-family printer understands these (a dialect maps each to its own code); the core's
passes build them with the constructors below. Argument orders:

| op | arguments | value |
|---|---|---|
| `tl.sync_threads` | () | void: a barrier across the threads of a block |
| `tl.sync_group` | (barrier_id: int32, thread_count: int32) | void: a barrier across the `thread_count` threads that call it with this id (the threads of one `T.ws` range; ids from 1, distinct per range) |
| `tl.atomic_add` | (dst: BufferLoad naming the address, value[, order]) | the old value, dst's dtype |
| `tl.atomic_max` | (dst: BufferLoad, value[, order]) | the old value |
| `tl.atomic_min` | (dst: BufferLoad, value[, order]) | the old value |
| `tl.atomic_or` | (dst: BufferLoad, value[, order]) | the old value (integers) |
| `tl.atomic_load` | (src: BufferLoad, order) | the value |
| `tl.atomic_store` | (dst: BufferLoad, value, order) | void |
| `tl.printf` | (fmt: StringImm, *args) | int32 |
| `tl.device_assert` | (cond: bool, msg: StringImm) | void |
| `tl.<intrinsic>` of `INTRINSIC_OPS` | see that table | printed through the dialect's `intrinsic_formats` (a dialect without a spelling refuses it, naming the op) |
| `tl.dp4a` | (a, b: `tvm_access_ptr`s to 4 int8 each, c: to one int32) | void: `*c += a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3]` (int32, wrapping) |
| `tl.__exp`, ... of `FAST_MATH_OPS` | (x: float) | x's dtype: the function approximated, spelled from the dialect's `fast_math_ops` (hardware approximations) or, for a dialect without them, its accurate `math_ops` |
| `tl.shfl_xor` | (value, lane_mask: int32) | `value` of the lane whose index is this lane's xor `lane_mask` (every lane of the warp calls it) |

`INTRINSIC_OPS` are thread-level intrinsics a kernel names itself (`T.shfl_sync`, `T.any_sync`,
`T.get_lane_idx`, `T.ieee_add`, ...): each is one C expression per dialect, so a dialect spells
them as a table (`CStyleCodegen.intrinsic_formats`), not as code. Warp-wide ones need every lane
of the `mask` to reach the call.

`order` is a memory order, an int32 numbered as C11's `memory_order` and GCC's `__ATOMIC_*`
(`MEMORY_ORDERS`: 0 relaxed, 1 consume, 2 acquire, 3 release, 4 acq_rel, 5 seq_cst); an
atomic without it is relaxed. A dialect that prints only relaxed atomics rejects other orders.
A vector destination (a BufferLoad at a `Ramp`) stands for that many consecutive elements.

Registering is idempotent: another module of the core may register the same names first.
"""
from __future__ import annotations

from tvm import ir, tirx
from tvm.ir import StringImm

__all__ = [
    "BUILTIN_OPS",
    "MEMORY_ORDERS",
    "atomic_or",
    "atomic_load",
    "atomic_store",
    "register_builtins",
    "sync_threads",
    "sync_group",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "printf",
    "device_assert",
    "shfl_xor",
    "dp4a",
    "INTRINSIC_OPS",
    "FAST_MATH_OPS",
    "ROUNDING_MODES",
    "intrinsic",
]

# name -> number of inputs (-1: variadic); add/max/min/or take an optional order after them
BUILTIN_OPS = {
    "tl.sync_threads": 0,
    "tl.sync_group": 2,
    "tl.atomic_add": 2,
    "tl.atomic_max": 2,
    "tl.atomic_min": 2,
    "tl.atomic_or": 2,
    "tl.atomic_load": 2,
    "tl.atomic_store": 3,
    "tl.printf": -1,
    "tl.device_assert": 2,
    "tl.shfl_xor": 2,
    "tl.dp4a": 3,
}

# TileLang's fast-math functions (`T.__exp`, ...): op -> the math op it approximates
FAST_MATH_OPS = {f"tl.__{name}": name for name in ("exp", "exp10", "log", "log2", "log10", "tan", "cos", "sin")}

# Intrinsics printed from a dialect's `intrinsic_formats` table: name -> (arguments, value).
# "mask" is a uint32 lane mask (TileLang's default 0xffffffff: the whole warp); a `rounding`
# argument is a StringImm of "rn", "rz", "ru" or "rd" and picks the format keyed
# (name, rounding); else a format keyed (name, value dtype) wins over one keyed by the name
# (the packed two-lane ops: one spelling per vector dtype); `warp_size` may be left out (the
# target's warp size is printed).
INTRINSIC_OPS = {
    "tl.shfl_sync": "(mask, value, src_lane, width) -> value of lane `src_lane` of each `width`-lane group",
    "tl.shfl_up_sync": "(mask, value, delta, width) -> value of lane `lane - delta` (own value below 0)",
    "tl.shfl_down_sync": "(mask, value, delta, width) -> value of lane `lane + delta` (own value past the group)",
    "tl.shfl_xor_sync": "(mask, value, lane_mask, width) -> value of lane `lane ^ lane_mask`",
    "tl.any_sync": "(mask, predicate) -> int32: non-zero when any lane's predicate is",
    "tl.all_sync": "(mask, predicate) -> int32: non-zero when every lane's predicate is",
    "tl.ballot_sync": "(mask, predicate) -> uint64: bit n set when lane n's predicate is non-zero",
    "tl.ballot": "(predicate) -> uint64: ballot_sync over the whole warp",
    "tl.activemask": "() -> uint64: the lanes executing the call",
    "tl.match_any_sync": "(mask, value) -> uint32: the lanes whose value equals this lane's",
    "tl.match_all_sync": "(mask, value) -> uint32: `mask` when every lane has the same value, else 0",
    "tl.sync_warp": "(mask) -> void: a barrier across the lanes of `mask`",
    "tl.syncthreads_count": "(predicate) -> int32: block barrier, then how many threads had it non-zero",
    "tl.syncthreads_and": "(predicate) -> int32: block barrier, then non-zero when all had it non-zero",
    "tl.syncthreads_or": "(predicate) -> int32: block barrier, then non-zero when any had it non-zero",
    "tl.sync_grid": "() -> void: a barrier across every thread of the grid (cooperative launch)",
    "tl.named_barrier_arrive": "(barrier_id, thread_count) -> void: arrive at a named barrier, no wait",
    "tl.get_lane_idx": "([warp_size]) -> int32: linear thread index % warp_size",
    "tl.get_warp_idx": "([warp_size]) -> int32: linear thread index / warp_size",
    "tl.get_warp_idx_sync": "([warp_size]) -> int32: as tl.get_warp_idx, the warp converged",
    "tl.get_warp_group_idx": "(warp_size, warps_per_group) -> int32: linear index / (warp_size * warps_per_group)",
    "tl.shuffle_elect": "(group_threads) -> bool: true on one thread of each group (0: of the block)",
    "tl.ieee_add": "(x, y, rounding) -> x + y rounded as `rounding` says",
    "tl.ieee_sub": "(x, y, rounding) -> x - y",
    "tl.ieee_mul": "(x, y, rounding) -> x * y",
    "tl.ieee_fdiv": "(x, y, rounding) -> x / y",
    "tl.ieee_fmaf": "(x, y, z, rounding) -> x * y + z, rounded once",
    "tl.ieee_frcp": "(x, rounding) -> 1 / x",
    "tl.ieee_fsqrt": "(x, rounding) -> sqrt(x)",
    "tl.ieee_frsqrt": "(x) -> 1 / sqrt(x), round to nearest",
    "tl.fast_rcp": "(x) -> an approximate 1 / x",
    "tl.warp_reduce_sum": "(value) -> the sum of `value` over the warp's lanes, on every lane",
    "tl.warp_reduce_max": "(value) -> the maximum over the warp, on every lane",
    "tl.warp_reduce_min": "(value) -> the minimum over the warp, on every lane",
    "tl.warp_reduce_bitand": "(value) -> the bitwise and over the warp (integers), on every lane",
    "tl.warp_reduce_bitor": "(value) -> the bitwise or over the warp (integers), on every lane",
    "tl.rng_init": "(state, seed, subsequence, offset) -> void: a Philox4x32-10 stream into `state` (16 uint32)",
    "tl.rng_rand": "(state) -> uint32: the stream's next word",
    "tl.rng_rand_uniform": "(state) -> float32 or float64 in (0, 1]",
    "tl.rng_rand_normal": "(state) -> float32 or float64, standard normal (Box-Muller pairs)",
    "tl.add2": "(x, y) -> lane-wise x + y of two-lane vectors",
    "tl.sub2": "(x, y) -> lane-wise x - y",
    "tl.mul2": "(x, y) -> lane-wise x * y",
    "tl.fma2": "(x, y, z) -> lane-wise x * y + z",
    "tl.max2": "(x, y) -> lane-wise maximum",
    "tl.min2": "(x, y) -> lane-wise minimum",
    "tl.abs2": "(x) -> lane-wise absolute value",
}
ROUNDING_MODES = ("rn", "rz", "ru", "rd")

# index = the memory order's number in the IR (C11 memory_order, GCC __ATOMIC_*, TileLang's ids)
MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")

_OPAQUE = int(tirx.CallEffectKind.Opaque.value)


def _has_attr(name: str, key: str) -> bool:
    # `Op.has_attr` answers whether any op has `key`, not this one: read the value
    try:
        return ir.Op.get(name).get_attr(key) is not None
    except Exception:  # the op does not exist yet
        return False


def register_builtins() -> None:
    """Register every `tl.*` builtin op (opaque effect, printed as `T.tl.<name>`)."""
    for name in [*BUILTIN_OPS, *INTRINSIC_OPS, *FAST_MATH_OPS]:
        if not _has_attr(name, "TCallEffectKind"):
            ir.register_op_attr(name, "TCallEffectKind", _OPAQUE)
        if not _has_attr(name, "TScriptPrinterName"):
            ir.register_op_attr(name, "TScriptPrinterName", name, level=20)


def _dtype(expr) -> str:
    return str(expr.ty.dtype)


def sync_threads():
    """`tl.sync_threads()`: a barrier across the threads of a block."""
    return tirx.call_intrin("void", "tl.sync_threads")


def sync_group(barrier_id: int, thread_count: int):
    """`tl.sync_group(id, count)`: a barrier across the `count` threads of one thread range
    (`T.ws`); every thread of the range calls it with the same id, no other thread does."""
    return tirx.call_intrin("void", "tl.sync_group", tirx.const(int(barrier_id), "int32"),
                            tirx.const(int(thread_count), "int32"))


def _destination(name: str, dst):
    if not isinstance(dst, ir.TensorLoad):
        raise TypeError(f"{name}: the destination must be a BufferLoad (A[i, j]), got {type(dst).__name__}")
    return dst


def _order(memory_order) -> list:
    """The trailing order argument: none for relaxed (the default), else an int32."""
    if memory_order is None or (isinstance(memory_order, int) and memory_order == 0):
        return []
    return [memory_order if isinstance(memory_order, ir.Expr) else tirx.const(int(memory_order), "int32")]


def _atomic(name: str, dst, value, memory_order=None):
    _destination(name, dst)
    value = tirx.convert(value) if not isinstance(value, ir.Expr) else value
    if _dtype(value) != _dtype(dst):
        value = tirx.Cast(_dtype(dst), value)
    return tirx.call_intrin(_dtype(dst), name, dst, value, *_order(memory_order))


def atomic_add(dst, value, memory_order=None):
    """`tl.atomic_add(A[i], v)`: atomically `A[i] += v`; returns the old value."""
    return _atomic("tl.atomic_add", dst, value, memory_order)


def atomic_max(dst, value, memory_order=None):
    """`tl.atomic_max(A[i], v)`: atomically `A[i] = max(A[i], v)`; returns the old value."""
    return _atomic("tl.atomic_max", dst, value, memory_order)


def atomic_min(dst, value, memory_order=None):
    """`tl.atomic_min(A[i], v)`: atomically `A[i] = min(A[i], v)`; returns the old value."""
    return _atomic("tl.atomic_min", dst, value, memory_order)


def atomic_or(dst, value, memory_order=None):
    """`tl.atomic_or(A[i], v)`: atomically `A[i] |= v` (integers); returns the old value."""
    return _atomic("tl.atomic_or", dst, value, memory_order)


def atomic_load(src, memory_order):
    """`tl.atomic_load(A[i], order)`: the value of `A[i]`, read atomically."""
    _destination("tl.atomic_load", src)
    return tirx.call_intrin(_dtype(src), "tl.atomic_load", src, tirx.const(int(memory_order), "int32"))


def atomic_store(dst, value, memory_order):
    """`tl.atomic_store(A[i], v, order)`: `A[i] = v`, written atomically."""
    _destination("tl.atomic_store", dst)
    value = tirx.convert(value) if not isinstance(value, ir.Expr) else value
    if _dtype(value) != _dtype(dst):
        value = tirx.Cast(_dtype(dst), value)
    return tirx.call_intrin("void", "tl.atomic_store", dst, value, tirx.const(int(memory_order), "int32"))


def printf(fmt: str, *args):
    """`tl.printf("x=%f\\n", x)`: C printf from device code."""
    return tirx.call_intrin("int32", "tl.printf", StringImm(fmt), *args)


def device_assert(cond, msg: str):
    """`tl.device_assert(cond, "msg")`: stop the kernel with `msg` when `cond` is false."""
    return tirx.call_intrin("void", "tl.device_assert", cond, StringImm(msg))


register_builtins()


def shfl_xor(value, lane_mask):
    """`tl.shfl_xor(v, m)`: `v` of lane `lane ^ m` of the same warp (a target with the
    "warp_shuffle" feature prints it; all lanes of the warp must reach the call)."""
    mask = tirx.const(lane_mask, "int32") if isinstance(lane_mask, int) else lane_mask
    return tirx.call_intrin(_dtype(value), "tl.shfl_xor", value, mask)


def dp4a(a_ptr, b_ptr, c_ptr):
    """`tl.dp4a(a, b, c)`: `*c += ` the dot product of the 4 int8 at `a` and at `b` (pointers
    from `tvm_access_ptr`; `c`'s carries the write bit, so barrier placement sees the write)."""
    return tirx.call_intrin("void", "tl.dp4a", a_ptr, b_ptr, c_ptr)


def intrinsic(dtype: str, name: str, *args):
    """A call of `tl.<name>` (one of `INTRINSIC_OPS`) with value type `dtype`."""
    op = f"tl.{name}"
    if op not in INTRINSIC_OPS:
        raise ValueError(f"{op} is not an intrinsic of the printer; known: {', '.join(sorted(INTRINSIC_OPS))}")
    return tirx.call_intrin(dtype, op, *args)
