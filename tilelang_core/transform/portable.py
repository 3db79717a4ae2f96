"""The portable lowering of every tile op: what any backend gets on day one.

Each tile op becomes loop nests over its elements. Loops over independent elements are
`T.Parallel` loops (ForKind.PARALLEL), so one later pass (`partition_parallel`) decides how
they run: split over the threads of a block on SIMT targets, whole-tile loops on block-serial
ones. Reductions keep a serial inner loop per output element. Global accesses are masked:
a load past a tensor's edge reads 0, a store past it is skipped.

A backend overrides any op through `tilelang_lower_tile_op`, and may call these functions
for the parts it does not specialise.
"""
from __future__ import annotations

import math
from typing import Sequence

from tvm import ir as _ir
from tvm import tirx as tir
from tvm.sym import Analyzer

from ..codegen import builtins
from ..ir import Region, TileOp, dtype_of
from ..ir.constants import SCOPE_LOCAL
from .errors import TileLangCompileError
from .irutil import _is_zero, const, in_bounds, is_global, loop_nest, region_indices, seq, squeeze_extents

__all__ = ["lower_portable", "PORTABLE_LOWERINGS", "SCAN_KINDS", "reduce_init", "reduce_combine"]

PAR = tir.ForKind.PARALLEL
SER = tir.ForKind.SERIAL


def _load(buf: tir.Buffer, idx: Sequence[tir.Expr], dtype: str) -> tir.Expr:
    value = tir.BufferLoad(buf, list(idx))
    if str(buf.dtype) != str(dtype):
        value = tir.Cast(dtype, value)
    return value


def _masked_load(buf: tir.Buffer, idx, dtype: str, other: tir.Expr | None = None) -> tir.Expr:
    """`buf[idx]` in `dtype`; outside a global `buf` it reads `other` (default 0)."""
    value = _load(buf, idx, dtype)
    if is_global(buf):
        cond = in_bounds(buf, idx)
        if cond is not None:
            return tir.if_then_else(cond, value, tir.const(0, dtype) if other is None else tir.Cast(dtype, other))
    return value


def _masked_store(buf: tir.Buffer, idx, value: tir.Expr, span=None) -> tir.Stmt:
    store = tir.BufferStore(buf, value, list(idx), span=span)
    if is_global(buf):
        cond = in_bounds(buf, idx)
        if cond is not None:
            return tir.IfThenElse(cond, store, None, span=span)
    return store


def _shape_of(region: Region) -> list[tir.Expr]:
    return [region.extents[i] for i in squeeze_extents(region.extents)]


def _same_shape(a: Sequence[tir.Expr], b: Sequence[tir.Expr]) -> bool:
    from .irutil import analyzer

    return len(a) == len(b) and all(analyzer().can_prove_equal(x, y) for x, y in zip(a, b))


# --- copy / fill ----------------------------------------------------------------------------


def lower_copy(op: TileOp, ctx, other: tir.Expr | None = None) -> tir.Stmt:
    """The copy as a parallel nest; an element read outside a global source reads `other`
    (default 0: `T.annotate_safe_value` gives another), one written outside a global
    destination is skipped."""
    src, dst = op.regions[0], op.regions[1]
    shape_s, shape_d = _shape_of(src), _shape_of(dst)
    if not _same_shape(shape_s, shape_d):
        raise TileLangCompileError(
            f"T.copy: source {src.buffer.name} has shape {_fmt(shape_s)} but destination "
            f"{dst.buffer.name} has shape {_fmt(shape_d)}; give both sides the same extents "
            f"(a point like A[i, j] takes the other side's shape)", op.source)
    shape = shape_d

    def body(vs):
        value = _masked_load(src.buffer, region_indices(src.mins, src.extents, vs), str(dst.buffer.dtype), other)
        return _masked_store(dst.buffer, region_indices(dst.mins, dst.extents, vs), value, op.stmt.span)

    if not shape:
        return body([])
    # a T.alloc_local array is each thread's own: every thread copies all of its region (TileLang's
    # compressors copy `dense[row(tm), cols(tn)]` into one), unrolled as T.fill does, not a share
    local = SCOPE_LOCAL in (src.buffer.scope(), dst.buffer.scope())
    return loop_nest(shape, body, kind=tir.ForKind.UNROLLED if local else PAR, span=op.stmt.span)


def lower_transpose(op: TileOp, ctx) -> tir.Stmt:
    """One parallel loop per source axis of extent other than 1; the destination's axis k
    follows the source's axis k, the last two swapped (a destination axis whose source axis
    has extent 1 stays at its min). Reads outside the source give 0, writes outside the
    destination are skipped, whatever the buffers' scopes."""
    src, dst = op.regions[0], op.regions[1]
    rank = len(src.extents)
    axes = squeeze_extents(src.extents)
    swap = list(range(rank - 2)) + [rank - 1, rank - 2]  # destination axis -> source axis
    loop_vars = [tir.Var("ijklmn"[n % 6] + ("" if n < 6 else str(n)), "int32") for n in range(len(axes))]
    ana = Analyzer()
    for var, axis in zip(loop_vars, axes):
        ana.bind(var, _ir.Range.from_min_extent(0, src.extents[axis]))
    var_of = dict(zip(axes, loop_vars))
    src_idx = [src.mins[a] + var_of[a] if a in var_of else src.mins[a] for a in range(rank)]
    dst_idx = [dst.mins[d] + var_of[swap[d]] if swap[d] in var_of else dst.mins[d] for d in range(rank)]
    dtype = str(dst.buffer.dtype)
    value = _load(src.buffer, src_idx, dtype)
    src_ok = in_bounds(src.buffer, src_idx, ana)
    if src_ok is not None:
        value = tir.if_then_else(src_ok, value, tir.const(0, dtype))
    body = tir.BufferStore(dst.buffer, value, dst_idx, span=op.stmt.span)
    dst_ok = in_bounds(dst.buffer, dst_idx, ana)
    if dst_ok is not None:
        body = tir.IfThenElse(dst_ok, body, None, span=op.stmt.span)
    for var, axis in reversed(list(zip(loop_vars, axes))):
        body = tir.For(var, const(0), src.extents[axis], PAR, body, span=op.stmt.span)
    return body


def lower_fill(op: TileOp, ctx) -> tir.Stmt:
    dst = op.regions[0]
    value = op.args[1]
    if dtype_of(value) != str(dst.buffer.dtype):
        value = tir.Cast(str(dst.buffer.dtype), value)
    shape = _shape_of(dst)

    def body(vs):
        return _masked_store(dst.buffer, region_indices(dst.mins, dst.extents, vs), value, op.stmt.span)

    if not shape:
        return body([])
    # a T.alloc_local array is each thread's own: every thread fills all of it (unrolled, so
    # the indices are constants and the array can stay in registers), not a share of it
    kind = tir.ForKind.UNROLLED if dst.buffer.scope() == SCOPE_LOCAL else PAR
    return loop_nest(shape, body, kind=kind, span=op.stmt.span)


# --- gemm -----------------------------------------------------------------------------------


def lower_gemm(op: TileOp, ctx) -> tir.Stmt:
    a, b, c = op.regions[:3]
    trans_a, trans_b, _policy, clear = (int(x) for x in op.args[3:7])
    m, n, k = op.args[7:10]
    acc = str(c.buffer.dtype)

    def matrix(region, row, col):
        # the operand's matrix is its last two dims, whatever their extents (a 1 x K row of A
        # is still indexed [row, k]); leading dims take their mins
        out = list(region.mins)
        out[-2] = row if _is_zero(out[-2]) else out[-2] + row
        out[-1] = col if _is_zero(out[-1]) else out[-1] + col
        return out

    def a_at(i, kk):
        return _load(a.buffer, matrix(a, kk, i) if trans_a else matrix(a, i, kk), acc)

    def b_at(kk, j):
        return _load(b.buffer, matrix(b, j, kk) if trans_b else matrix(b, kk, j), acc)

    def c_idx(i, j):
        return matrix(c, i, j)

    i, j, kk = (tir.Var(n_, "int32") for n_ in ("i", "j", "k"))
    stmts = []
    if clear:
        stmts.append(loop_nest([m, n], lambda vs: tir.BufferStore(
            c.buffer, tir.const(0, acc), c_idx(*vs)), kind=PAR, span=op.stmt.span))
    if ctx.block_serial:
        # i, k, j: the innermost loop runs along contiguous rows of B and C, so it vectorizes.
        update = tir.BufferStore(c.buffer, tir.BufferLoad(c.buffer, c_idx(i, j)) + a_at(i, kk) * b_at(kk, j),
                                 c_idx(i, j), span=op.stmt.span)
        inner = tir.For(j, const(0), n, PAR, update)
        stmts.append(tir.For(i, const(0), m, SER, tir.For(kk, const(0), k, SER, inner), span=op.stmt.span))
    else:
        # one output element per iteration of the parallel loops, summed over k in a register
        update = tir.BufferStore(c.buffer, tir.BufferLoad(c.buffer, c_idx(i, j)) + a_at(i, kk) * b_at(kk, j),
                                 c_idx(i, j), span=op.stmt.span)
        stmts.append(tir.For(i, const(0), m, PAR, tir.For(j, const(0), n, PAR,
                                                           tir.For(kk, const(0), k, SER, update)), span=op.stmt.span))
    return seq(stmts)


# --- reductions -----------------------------------------------------------------------------


def reduce_init(kind: str, dtype: str) -> tir.Expr:
    """The identity of a `T.reduce_<kind>`: -inf for a float max (the lowest value for
    integers), +inf for a float min, all bits set for bitand, else 0. A NaN-propagating kind
    (`max_nan`, ...) has the identity of its plain kind."""
    kind = kind.removesuffix(NAN_SUFFIX)
    is_float = dtype.startswith(("float", "bfloat"))
    if kind == "max":
        return tir.const(-math.inf, dtype) if is_float else tir.min_value(dtype)
    if kind == "min":
        return tir.const(math.inf, dtype) if is_float else tir.max_value(dtype)
    if kind == "bitand":
        return tir.const(True, dtype) if dtype == "bool" else tir.const(-1, dtype) if dtype.startswith("int") else tir.max_value(dtype)
    return tir.const(0, dtype)


NAN_SUFFIX = "_nan"
"""The suffix of the NaN-propagating reduce kinds (`ir.constants.NAN_PROPAGATING_KINDS`)."""


def _propagate_nan(acc: tir.Expr, value: tir.Expr, folded: tir.Expr) -> tir.Expr:
    """`folded`, unless `acc` or `value` is a NaN (a float unequal to itself): then that NaN.
    Integers have no NaN: `folded` as it is."""
    if not str(dtype_of(acc)).startswith(("float", "bfloat")):
        return folded
    return tir.Select(acc != acc, acc, tir.Select(value != value, value, folded))


def reduce_combine(kind: str, acc: tir.Expr, value: tir.Expr) -> tir.Expr:
    """One step of a `T.reduce_<kind>`: fold `value` into `acc` (abs first for abssum/absmax).
    `max_nan`, `min_nan`, `absmax_nan`: as max, min, absmax, except that a NaN operand makes the
    result NaN (`T.reduce_max(..., nan_propagate=True)`)."""
    if kind.endswith(NAN_SUFFIX):
        plain = kind.removesuffix(NAN_SUFFIX)
        if plain == "absmax":
            value = tir.abs(value)
            plain = "max"
        return _propagate_nan(acc, value, reduce_combine(plain, acc, value))
    if kind == "max":
        return tir.max(acc, value)
    if kind == "min":
        return tir.min(acc, value)
    if kind == "sum":
        return acc + value
    if kind == "abssum":
        return acc + tir.abs(value)
    if kind == "absmax":
        return tir.max(acc, tir.abs(value))
    if dtype_of(acc) == "bool" and kind in _BOOL_BITWISE:
        return _BOOL_BITWISE[kind](acc, value)
    if kind == "bitand":
        return tir.bitwise_and(acc, value)
    if kind == "bitor":
        return tir.bitwise_or(acc, value)
    if kind == "bitxor":
        return tir.bitwise_xor(acc, value)
    raise ValueError(kind)


_BOOL_BITWISE = {"bitand": tir.And, "bitor": tir.Or, "bitxor": tir.NE}


def _axes_with(region: Region, dim: int) -> list[int]:
    """The region's dimensions that are not of extent 1, plus `dim` (the one an op runs along)."""
    return [d for d in range(len(region.extents)) if d == dim or d in squeeze_extents(region.extents)]


def _indices_along(region: Region, axes: list[int], values) -> list[tir.Expr]:
    """Indices of a region element: `values[i]` along `axes[i]`, the min elsewhere."""
    out = list(region.mins)
    for axis, value in zip(axes, values):
        out[axis] = region.mins[axis] + value
    return out


def lower_reduce(op: TileOp, ctx) -> tir.Stmt:
    from .reduce_registers import lower_register_reduce

    in_registers = lower_register_reduce(op, ctx)
    if in_registers is not None:
        return in_registers
    src, dst = op.regions[:2]
    kind = str(op.args[2].value)
    clear = bool(int(op.args[4]))
    if int(op.args[3]) >= len(src.extents):
        raise TileLangCompileError(f"T.reduce_{kind}: dim={int(op.args[3])} but the source has {len(src.extents)} dims", op.source)
    # work on the dimensions that are not 1 (a 1 x N tile reduces like an N vector)
    axes = _axes_with(src, int(op.args[3]))
    dim = axes.index(int(op.args[3]))
    src_shape = [src.extents[a] for a in axes]
    dst_shape = _shape_of(dst)
    kept = [e for d, e in enumerate(src_shape) if d != dim]
    if not _same_shape(kept, dst_shape):
        raise TileLangCompileError(
            f"T.reduce_{kind}: reducing {_fmt(src_shape)} over dim {dim} gives {_fmt(kept)}, "
            f"but the destination has shape {_fmt(dst_shape)}", op.source)
    dtype = str(dst.buffer.dtype)
    acc_buf = tir.decl_buffer((1,), dtype, name=f"{kind}_acc", scope="local")
    r = tir.Var("r", "int32")

    def body(vs):
        src_vars = list(vs[:dim]) + [r] + list(vs[dim:])
        value = _load(src.buffer, _indices_along(src, axes, src_vars), dtype)
        acc = tir.BufferLoad(acc_buf, [0])
        d_idx = region_indices(dst.mins, dst.extents, vs)
        final = acc if clear else reduce_combine(kind, tir.BufferLoad(dst.buffer, d_idx), acc)
        return seq([
            tir.AllocBuffer(acc_buf),
            tir.BufferStore(acc_buf, reduce_init(kind, dtype), [0]),
            tir.For(r, const(0), src_shape[dim], SER,
                    tir.BufferStore(acc_buf, reduce_combine(kind, acc, value), [0])),
            tir.BufferStore(dst.buffer, final, d_idx),
        ])

    if not kept:
        return body([])
    return loop_nest(kept, body, kind=PAR, span=op.stmt.span)


SCAN_KINDS = {"cumsum": "sum", "cummax": "max"}
"""Each scan tile op -> the `reduce_combine` kind it folds with."""


def lower_scan(op: TileOp, ctx) -> tir.Stmt:
    """An inclusive scan (`T.cumsum`, `T.cummax`) along `dim`: one serial walk per position of
    the other axes, folding each element into a running value (`reduce_init` /
    `reduce_combine` of the op's kind) and storing it; from the end when `reverse`."""
    kind = SCAN_KINDS[op.name]
    src, dst = op.regions[:2]
    reverse = bool(int(op.args[3]))
    axes = _axes_with(src, int(op.args[2]))
    dim = axes.index(int(op.args[2]))
    shape = [src.extents[a] for a in axes]
    dst_axes = _axes_with(dst, int(op.args[2]))
    dtype = str(dst.buffer.dtype)
    acc_buf = tir.decl_buffer((1,), dtype, name=f"{op.name}_acc", scope="local")
    r = tir.Var("r", "int32")
    kept = [e for d, e in enumerate(shape) if d != dim]

    def body(vs):
        pos = (shape[dim] - 1 - r) if reverse else r
        full = list(vs[:dim]) + [pos] + list(vs[dim:])
        acc = tir.BufferLoad(acc_buf, [0])
        value = _load(src.buffer, _indices_along(src, axes, full), dtype)
        return seq([
            tir.AllocBuffer(acc_buf),
            tir.BufferStore(acc_buf, reduce_init(kind, dtype), [0]),
            tir.For(r, const(0), shape[dim], SER, seq([
                tir.BufferStore(acc_buf, reduce_combine(kind, acc, value), [0]),
                tir.BufferStore(dst.buffer, acc, _indices_along(dst, dst_axes, full)),
            ])),
        ])

    if not kept:
        return body([])
    return loop_nest(kept, body, kind=PAR, span=op.stmt.span)


# --- atomics, printing, assertions, hints ---------------------------------------------------


def lower_atomic(op: TileOp, ctx) -> tir.Stmt:
    kind, order, use_tma = str(op.args[0].value), int(op.args[3]), bool(int(op.args[4]))
    if use_tma and not ctx.caps.has_copy_engine("tma"):
        raise TileLangCompileError(
            f"T.atomic_{kind}(use_tma=True) needs the TMA copy engine (capability 'tma'), which {ctx.target} "
            f"does not have; leave use_tma out", op.source)
    dst = op.regions[0]
    src = op.regions[1] if len(op.regions) > 1 else None  # else a scalar value, op.args[2]
    shape = _shape_of(dst)

    def body(vs):
        d_idx = region_indices(dst.mins, dst.extents, vs)
        if src is None:
            value = op.args[2]
        else:
            value = _masked_load(src.buffer, region_indices(src.mins, src.extents, vs), str(dst.buffer.dtype))
        call = tir.Evaluate(_ATOMICS[kind](tir.BufferLoad(dst.buffer, d_idx), value, order))
        cond = in_bounds(dst.buffer, d_idx) if is_global(dst.buffer) else None
        return tir.IfThenElse(cond, call, None) if cond is not None else call

    return loop_nest(shape, body, kind=PAR, span=op.stmt.span) if shape else body([])


def lower_atomic_elem(op: TileOp, ctx) -> tir.Stmt:
    kind = str(op.args[0].value)
    target, value, order = op.args[1], op.args[2], int(op.args[3])
    buf_dtype = str(target.source.dtype)
    if dtype_of(value) != buf_dtype:
        value = tir.Cast(buf_dtype, value)
    return tir.Evaluate(_ATOMICS[kind](target, value, order))


_ATOMICS = {"add": builtins.atomic_add, "max": builtins.atomic_max, "min": builtins.atomic_min,
            "or": builtins.atomic_or}


def _fmt_of(dtype: str) -> tuple[str, str]:
    """printf conversion and the dtype to cast to before printing."""
    if dtype.startswith(("float", "bfloat")):
        return "%f", "float64"
    if dtype.startswith("uint"):
        return "%llu", "uint64"
    return "%lld", "int64"


def lower_print(op: TileOp, ctx) -> tir.Stmt:
    msg = str(op.args[-1].value) if isinstance(op.args[-1], _ir.StringImm) else ""
    prefix = f"{msg}: " if msg else ""
    where = f"[{op.source[0].rsplit('/', 1)[-1]}:{op.source[1]}] " if op.source else ""
    if op.regions:
        region = op.regions[0]
        shape = _shape_of(region)
        conv, cast = _fmt_of(str(region.buffer.dtype))

        def body(vs):
            idx = region_indices(region.mins, region.extents, vs)
            fmt = f"{where}{prefix}{region.buffer.name}[" + ", ".join(["%d"] * len(vs)) + f"] = {conv}\n"
            return tir.Evaluate(builtins.printf(fmt, *vs, tir.Cast(cast, tir.BufferLoad(region.buffer, idx))))

        return loop_nest(shape, body, kind=SER, span=op.stmt.span) if shape else body([])
    value = op.args[0]
    conv, cast = _fmt_of(dtype_of(value))
    return tir.Evaluate(builtins.printf(f"{where}{prefix}{conv}\n", tir.Cast(cast, value)))


def lower_device_assert(op: TileOp, ctx) -> tir.Stmt:
    cond = op.args[0]
    msg = str(op.args[1].value) if len(op.args) > 1 else "device assertion failed"
    where = f"{op.source[0]}:{op.source[1]}: " if op.source else ""
    return tir.Evaluate(builtins.device_assert(cond, where + msg))


def lower_finalize_reducer(op: TileOp, ctx) -> tir.Stmt:
    """`tl.finalize_reducer(reducer, dst, op[, init])`: on SIMT targets the replicas of a
    register reducer combine in place (`reduce_registers.combine_replicas`); then, when `dst`
    is another buffer or an init value was given, a nest `dst[i] = reducer[i]` (combined with
    init). A reducer that left registers would have raced in its updates: that is an error."""
    from .reduce_registers import ACROSS, combine_replicas

    src, dst = op.regions[:2]
    kind = op.str_arg(2)
    init = op.args[3] if len(op.args) > 3 else None
    out: list[tir.Stmt] = []
    layout = None if ctx.block_serial else ctx.layouts.get(src.buffer)
    if not ctx.block_serial:
        decision = ctx.layouts.decision(src.buffer)
        if not decision.in_registers:
            raise TileLangCompileError(
                f"T.finalize_reducer: the reducer {src.buffer.name} could not stay in registers ({decision.reason}), "
                f"so the threads updating it would race; update it only inside T.Parallel nests that also index "
                f"a register fragment by every loop variable", op.source)
    if layout is not None and layout.replicate > 1:
        if layout.replica_bits() is None:
            raise TileLangCompileError(
                f"T.finalize_reducer: the reducer {src.buffer.name} is replicated over threads in a pattern "
                f"({layout.name}) whose replicas cannot be combined by thread-index bits; use power-of-two "
                f"tile sizes and thread counts", op.source)
        reg = ctx.register_buffer(src.buffer)
        acc = tir.decl_buffer((layout.slots,), str(reg.dtype), name=f"{src.buffer.name}_partial", scope="local")
        out.append(combine_replicas(
            ctx, layout, ACROSS[kind], acc,
            lambda thread: [tir.BufferStore(acc, tir.BufferLoad(reg, [const(d)]), [const(d)]) for d in range(layout.slots)],
            lambda d, total: tir.BufferStore(reg, total, [const(d)]), src.buffer.name, span=op.stmt.span))
    if dst.buffer.same_as(src.buffer) and init is None:
        return seq(out) if out else tir.Evaluate(const(0))
    shape = _shape_of(dst)

    def body(vs):
        value = _load(src.buffer, region_indices(src.mins, src.extents, vs), str(dst.buffer.dtype))
        if init is not None:
            value = reduce_combine(kind, value, init)
        return tir.BufferStore(dst.buffer, value, region_indices(dst.mins, dst.extents, vs))

    out.append(loop_nest(shape, body, kind=PAR, span=op.stmt.span) if shape else body([]))
    return seq(out)


def lower_nothing(op: TileOp, ctx) -> tir.Stmt:
    """Hints with no effect on results (rasterization, layout annotations) on this path."""
    return tir.Evaluate(const(0))


PORTABLE_LOWERINGS = {
    "copy": lower_copy,
    "transpose": lower_transpose,
    "fill": lower_fill,
    "gemm": lower_gemm,
    "reduce": lower_reduce,
    "cumsum": lower_scan,
    "cummax": lower_scan,
    "atomic": lower_atomic,
    "atomic_elem": lower_atomic_elem,
    "print": lower_print,
    "device_assert": lower_device_assert,
    "use_swizzle": lower_nothing,
    "annotate_layout": lower_nothing,
    "reducer_info": lower_nothing,
    "finalize_reducer": lower_finalize_reducer,
}


def lower_portable(op: TileOp, ctx) -> tir.Stmt:
    fn = PORTABLE_LOWERINGS.get(op.name)
    if fn is None:
        raise TileLangCompileError(f"no lowering for tile op T.{op.name}", op.source)
    return fn(op, ctx)


def _fmt(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
