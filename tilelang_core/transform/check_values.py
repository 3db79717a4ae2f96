"""Checks of the values a kernel states, run by the `check` pass on the tile IR from the parser.

Each raises `TileLangCompileError` at the user's line, naming the value seen and the fix:
- shapes: no static dimension of a tensor parameter or an allocation is negative;
- launch parameters: every `T.Kernel` extent and `threads=` at least 1, `num_stages` of
  `T.Pipelined` at least 0, no `T.Kernel` inside another;
- indices the compiler can bound, where going out of bounds is certain: an unguarded store or
  load whose index, over the constant ranges of its enclosing loops and launch indices, lies
  wholly outside a static buffer dimension (`A[100]` of a 64-element tensor), or leaves a
  shared or local buffer (`T.Parallel(64)` over a 32-element shared tile), or whose int32
  arithmetic passes int32's range (it would wrap). A global index that only partly leaves its
  tensor (a partial tile) is TileLang's safe access: `guard_memory_access` guards it at run
  time. Accesses under an `if`, a `while` or a `T.if_then_else`/`Select`, and indices over any
  other variable, are left to run time;
- a lossy conversion a tile op would make silently: `T.gemm` of float operands into an integer
  accumulator. `T.copy` converts to the destination's dtype as TileLang's does, whatever the
  two dtypes (int32 -> int8 wraps, float -> int truncates), so it is not refused;
- the same rule for plain stores (`B[i] = A[i]`, `x = A[i]` into a `T.alloc_var`): the
  parser converts a value to the buffer's dtype with a cast of its own, which carries no
  source span (a cast the user wrote, `T.Cast`/`T.cast`/`.astype`, carries one). Such an
  implicit float -> int conversion is refused; an implicit int -> narrower int one is refused
  unless the value's range, over the constant loop and launch ranges, fits the destination
  (`B_int8[i] = i` with `i` in 0..63 passes; a `T.if_then_else` spans both its values), and
  only warned about when the value reads the destination itself (a counter `n = n + 1` of
  uint8: its bound merely restates the destination's range). Int -> float, float -> narrower float and
  widening conversions pass.
"""
from __future__ import annotations

import warnings

from tvm import ir
from tvm import tirx as tir
from tvm.sym import Analyzer

from ..ir import TileOp, format_source, is_tile_op, source_of
from .errors import TileLangCompileError
from .irutil import is_global, loosely_bounded, walk

__all__ = ["check_launch_parameters", "check_shapes", "check_constant_bounds", "check_lossy_tile_ops",
           "check_lossy_stores"]

_ANN_NUM_STAGES = "num_stages"


def _int(value) -> int | None:
    return int(value.value) if isinstance(value, tir.IntImm) else None


def check_launch_parameters(func: tir.PrimFunc) -> None:
    """Launch extents >= 1, num_stages >= 0, and one `T.Kernel` per launch."""

    def visit(stmt, open_tags: dict):
        if isinstance(stmt, tir.AttrStmt) and stmt.attr_key == "thread_extent":
            tag = stmt.node.thread_tag
            value = _int(stmt.value)
            if value is not None and value < 1:
                if tag.startswith("blockIdx"):
                    what = f"T.Kernel launches {value} blocks along {tag}"
                    fix = "give every grid dimension of T.Kernel at least 1 block"
                else:
                    what = f"T.Kernel asks for threads={value} ({tag})"
                    fix = "pass threads= at least 1 (e.g. threads=128)"
                raise TileLangCompileError(f"{what}; a launch extent must be at least 1: {fix}", source_of(stmt))
            if tag.startswith("blockIdx") and tag in open_tags:
                raise TileLangCompileError(
                    f"a T.Kernel is nested inside another (both launch {tag}; the outer one at line "
                    f"{(open_tags[tag] or ('?', '?'))[1]}); a kernel launches once: write the inner "
                    "loops as T.Parallel / T.serial, or launch the kernels one after another", source_of(stmt))
            inner = {**open_tags, tag: source_of(stmt)} if tag.startswith("blockIdx") else open_tags
            visit(stmt.body, inner)
            return
        if isinstance(stmt, tir.For):
            stages = stmt.annotations.get(_ANN_NUM_STAGES) if stmt.annotations else None
            value = _int(stages) if stages is not None and not isinstance(stages, int) else stages
            if value is not None and int(value) < 0:
                raise TileLangCompileError(
                    f"T.Pipelined(num_stages={int(value)}): the number of pipeline stages cannot be negative; "
                    "pass num_stages=0 (no pipelining) or more (e.g. 2 or 3)", source_of(stmt))
        for child in _children(stmt):
            visit(child, open_tags)

    visit(func.body, {})


def check_shapes(func: tir.PrimFunc) -> None:
    """No negative static dimension in a tensor parameter or an allocation."""

    def check(buffer, where) -> None:
        shape = _static_shape(buffer)
        for dim, size in enumerate(shape):
            if size is not None and size < 0:
                raise TileLangCompileError(
                    f"{buffer.name} has shape {tuple(d if d is not None else '?' for d in shape)}: dim {dim} is "
                    f"{size}, and a dimension cannot be negative; give it a size of 0 or more", where)

    lines: list = []  # the kernel's first line that has one (the function has no span of its own)
    walk(func.body, lambda node: lines.append(source_of(node)), (tir.AttrStmt, tir.BufferStore))
    where = source_of(func) or next((line for line in lines if line), None)
    for param in func.params:
        if tir.is_buffer_var(param):
            check(param, where)
    walk(func.body, lambda node: check(node.buffer, source_of(node)), (tir.AllocBuffer,))


def _children(stmt) -> list:
    if isinstance(stmt, tir.SeqStmt):
        return list(stmt.seq)
    if isinstance(stmt, tir.IfThenElse):
        return [stmt.then_case] + ([stmt.else_case] if stmt.else_case is not None else [])
    body = getattr(stmt, "body", None)  # For, While, AttrStmt, LetStmt
    return [body] if isinstance(body, tir.Stmt) else []


def _static_shape(buffer) -> list[int | None]:
    return [_int(d) for d in buffer.ty.shape]


def _vars_of(expr) -> list:
    """The scalar variables `expr` reads (buffer variables of its loads left out)."""
    found: list = [expr] if isinstance(expr, tir.Var) else []  # the walk does not visit its root
    walk(expr, lambda v: found.append(v) if isinstance(v.ty, ir.PrimType) else None, (tir.Var,))
    return found


def _has_conditional(expr) -> bool:
    found = []

    def visit(node):
        if isinstance(node, tir.Select) or (isinstance(node, ir.Call) and isinstance(node.op, ir.Op)
                                            and str(node.op.name).endswith("if_then_else")):
            found.append(node)

    walk(expr, visit, (tir.Select, ir.Call))
    return bool(found)


_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def _has_opaque(expr) -> bool:
    """Whether `expr` holds a load or a call (shifts, intrinsics): values the analyzer
    bounds by their whole type, not by the ranges of the loop variables."""
    if isinstance(expr, (ir.TensorLoad, ir.Call)):
        return True
    found = []
    walk(expr, found.append, (ir.TensorLoad, ir.Call))
    return bool(found)


class _Ranges:
    """The constant ranges of the loop and launch variables around a statement: an analyzer
    bound with them, and how each was set (for messages)."""

    def __init__(self) -> None:
        self.ana = Analyzer()
        self.known: dict[int, str] = {}  # var handle -> how its range was set

    def bind(self, var, low: int, extent: int, how: str) -> None:
        dtype = str(var.ty.dtype)
        self.ana.bind(var, ir.Range.from_min_extent(tir.IntImm(dtype, low), tir.IntImm(dtype, extent)), True)
        self.known[var.__chandle__()] = f"{var.name} in {low}..{low + extent - 1} ({how})"

    def walk(self, body, on_store) -> None:
        """Call `on_store(store, guarded)` for every BufferStore of `body`, with the ranges of
        its enclosing constant loops and launch indices bound; `guarded` under an `if`/`while`."""

        def visit(stmt, guarded: bool) -> None:
            if isinstance(stmt, tir.For):
                low, extent = _int(stmt.min), _int(stmt.extent)
                step = getattr(stmt, "step", None)
                if low is not None and extent is not None and extent > 0 and (step is None or _int(step) == 1):
                    self.bind(stmt.loop_var, low, extent, "loop")
            elif isinstance(stmt, tir.AttrStmt) and stmt.attr_key == "thread_extent":
                extent = _int(stmt.value)
                if extent is not None and extent > 0:
                    self.bind(stmt.node.var, 0, extent, stmt.node.thread_tag)
            elif isinstance(stmt, (tir.IfThenElse, tir.While)):
                guarded = True
            elif isinstance(stmt, tir.BufferStore):
                on_store(stmt, guarded)
                return
            for child in _children(stmt):
                visit(child, guarded)

        visit(body, False)


def check_constant_bounds(func: tir.PrimFunc) -> None:
    """Unguarded accesses whose index range, over constant loop and launch ranges, leaves a
    static buffer dimension."""
    ranges = _Ranges()
    ana, known = ranges.ana, ranges.known

    def check_access(buffer, indices, node, kind: str) -> None:
        shape = _static_shape(buffer)
        for dim, (index, size) in enumerate(zip(indices, shape)):
            if size is None or not isinstance(index.ty, ir.PrimType) or index.ty.dtype.lanes != 1:
                continue
            variables = _vars_of(index)
            if any(v.__chandle__() not in known for v in variables):
                continue
            bound = ana.const_int_bound(index)
            low, high = int(bound.min_value), int(bound.max_value)
            if 0 <= low and high < size:
                continue
            if (low <= _INT32_MIN or high >= _INT32_MAX) and _has_opaque(index):
                continue  # a bound as wide as the integer type: a load or call in the index is not known statically
            wraps = str(index.ty.dtype) == "int32" and (low < _INT32_MIN or high > _INT32_MAX)
            partly_inside = high >= 0 and low < size
            if partly_inside and not wraps and (is_global(buffer) or loosely_bounded(index)):
                # global: guarded at run time (guard_memory_access), as TileLang does; shared or
                # local with an index the analysis bounds only loosely: a warning there
                continue
            seen = str(low) if low == high else f"{low}..{high}"
            ranges = "; ".join(dict.fromkeys(known[v.__chandle__()] for v in variables))
            extent = f"{buffer.name} has shape {tuple(shape)}, so dim {dim} takes 0..{size - 1}"
            raise TileLangCompileError(
                f"out-of-bounds {kind} {buffer.name}[{', '.join(str(i) for i in indices)}]: the index of dim {dim} "
                f"is {seen}{f' (with {ranges})' if ranges else ''}, but {extent}; keep the index inside the "
                "buffer (a smaller loop extent or T.Parallel range), or guard the access with `if`",
                source_of(node))

    def check_loads(value, node) -> None:
        if _has_conditional(value):
            return
        loads: list = []
        walk(value, loads.append, (ir.TensorLoad,))
        for load in loads:
            check_access(load.source, load.indices, node, "read of")

    def on_store(stmt, guarded: bool) -> None:
        if not guarded:
            check_access(stmt.buffer, stmt.indices, stmt, "write to")
            check_loads(stmt.value, stmt)

    ranges.walk(func.body, on_store)


def _dtype(region) -> str:
    return str(region.buffer.ty.dtype)


def _lossy(src: str, dst: str) -> str | None:
    """Why converting `src` values to `dst` loses them silently, or None."""
    if _is_float(src) and _is_int(dst):
        example = " (130.0 -> int8 gives -126)" if dst == "int8" else ""
        return f"float values are truncated toward zero (2.7 -> 2) and wrap outside {dst}'s range{example}"
    if _is_int(src) and _is_int(dst) and _bits(dst) < _bits(src):
        return f"{src} values outside {dst}'s range wrap"
    return None


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _bits(dtype: str) -> int:
    digits = "".join(c for c in dtype.split("x")[0] if c.isdigit())
    return int(digits) if digits else 32


def check_lossy_tile_ops(func: tir.PrimFunc) -> None:
    """`T.gemm` of floats into an integer accumulator."""

    def visit(node):
        if not is_tile_op(node):
            return
        op = TileOp.from_stmt(node)
        # T.copy converts to the destination's dtype as TileLang's does (C conversion: an int8
        # GEMM's int32 accumulator copied into an int8 output wraps), so it is not checked here
        if op.name == "gemm" and len(op.regions) >= 3:
            a, b, c = (_dtype(r) for r in op.regions[:3])
            if (_is_float(a) or _is_float(b)) and _is_int(c):
                raise TileLangCompileError(
                    f"T.gemm of {a} x {b} operands into the {c} accumulator {op.regions[2].buffer.name}: each "
                    f"product would be truncated to an integer; accumulate in float32 (T.alloc_fragment(..., "
                    f"\"float32\")) and convert the result explicitly, or pass integer operands", op.source)

    walk(func.body, visit, (tir.Evaluate,))


def check_lossy_stores(func: tir.PrimFunc) -> None:
    """Plain stores whose value the parser converted implicitly, losing values (see the module
    docstring): float -> int, and int -> narrower int unless the value's range fits."""
    ranges = _Ranges()

    def on_store(stmt, guarded: bool) -> None:
        value = stmt.value
        if not isinstance(value, tir.Cast) or value.span is not None or source_of(stmt) is None:
            return  # a cast the user wrote, no cast, or a store the compiler generated
        src, dst = str(value.value.ty.dtype), str(value.ty.dtype)
        why = _lossy(src, dst)
        if why is None:
            return
        if _is_int(src):
            low, high = _int_bound(ranges.ana, value.value)
            if _fits_range(low, high, dst):
                return
            if _reads(value.value, stmt.buffer):
                # a value carried from one store to the next (a uint8 counter, `n = n + 1`):
                # the bound only restates the destination's range, so the check cannot tell;
                # TileLang converts (wraps), as the cast says, and so do we, with a warning
                warnings.warn(f"the store into {stmt.buffer.name} ({dst}) at {format_source(stmt)} converts a {src} "
                              f"value computed from {stmt.buffer.name} itself, which the compiler cannot bound: "
                              f"values outside {dst}'s range wrap", stacklevel=2)
                return
            if low > _INT32_MIN and high < _INT32_MAX:
                why += f" (this value spans {low}..{high})"
        name = stmt.buffer.name
        raise TileLangCompileError(
            f"the store into {name} ({dst}) converts the {src} value implicitly and loses values: {why}; "
            f"write the conversion where you mean it, {name}[...] = T.Cast(\"{dst}\", ...) after rounding "
            f"or clamping, or store into a {src} buffer", source_of(stmt))

    ranges.walk(func.body, on_store)


def _reads(expr, buffer) -> bool:
    """Whether `expr` loads from `buffer`."""
    found: list = []
    walk(expr, lambda load: found.append(load) if load.source.same_as(buffer) else None, (ir.TensorLoad,))
    return bool(found)


def _fits(bound, dtype: str) -> bool:
    """Whether a constant integer bound lies inside `dtype`'s range."""
    return _fits_range(int(bound.min_value), int(bound.max_value), dtype)


def _fits_range(low: int, high: int, dtype: str) -> bool:
    bits = _bits(dtype)
    lowest, highest = (0, 2 ** bits - 1) if dtype.startswith("uint") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return lowest <= low and high <= highest


def _int_bound(ana, expr) -> tuple[int, int]:
    """(min, max) of an integer value: a choice (`T.if_then_else`, `T.Select`) spans both of
    its values, which the analyzer does not look into; anything else is the analyzer's bound."""
    choice = None
    if isinstance(expr, tir.Select):
        choice = (expr.true_value, expr.false_value)
    elif isinstance(expr, ir.Call) and isinstance(expr.op, ir.Op) and expr.op.name.endswith("if_then_else"):
        choice = tuple(expr.args[1:3])
    if choice is not None:
        bounds = [_int_bound(ana, value) for value in choice]
        return min(b[0] for b in bounds), max(b[1] for b in bounds)
    bound = ana.const_int_bound(expr)
    return int(bound.min_value), int(bound.max_value)
