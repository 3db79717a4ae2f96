"""guard_memory_access: global-memory accesses that may leave their tensor are guarded at run time.

TileLang's meaning (its `LegalizeSafeMemoryAccess`): a load from a global tensor whose index
the compiler cannot prove inside the tensor reads 0 there, and such a store is skipped. A
partial tile (`B[by * 32 + i, bx * 64 + j]` of a 70 x 130 tensor), a symbolic size, an index
read from another tensor (`K[b, idx[i], h, d]`) all run correctly without a hand-written `if`.

Before: tile IR after `check` (tile ops not yet lowered; `T.Parallel` loops still loops).
After: every plain `BufferStore` to a global tensor and every `T.atomic_add`-style element op
whose index is not proven in bounds sits under `if <in bounds>:`; every load of a global tensor
whose index is not proven in bounds is `T.if_then_else(<in bounds>, load, 0)`. What is proven
comes from the enclosing loop ranges (constant or symbolic), the launch extents, the `if`
conditions around the access and the `T.if_then_else` conditions around a load, so whole
tiles, hand-guarded code and masked loads compile exactly as before. Tile ops (`T.copy`, ...)
are left alone: their lowerings mask partial tiles themselves.

`T.annotate_safe_value({A: v})` (TileLang's): a guarded read of `A` yields `v` instead of 0,
in the statements the annotation encloses. A `T.copy` from `A` there becomes the element loop
it means (the portable lowering, reading `v` outside `A`), since targets' own copies fill 0.

Shared and local buffers are the kernel author's to keep in bounds (as in TileLang): an index
the analysis cannot bound there is reported once per kernel as a `TileLangWarning`, with its
line; `check` already refuses indices that are certainly out of bounds. TileLang's pass configs
`tl.disable_safe_memory_legalize` and `tl.disable_out_of_bound_warning` turn the guards and the
warning off.
"""
from __future__ import annotations

import warnings

from tvm import ir
from tvm import tirx as tir

from ..ir import ATTR_SAFE_VALUE, TileOp, is_tile_op, source_of
from .errors import format_source
from .irutil import is_global, is_scalar_buffer, loosely_bounded, map_stmts, walk

__all__ = ["LegalizeSafeMemoryAccess", "TileLangWarning", "guard_memory_access"]


class TileLangWarning(UserWarning):
    """A kernel compiles, but something in it deserves a look (the message names the line)."""


def _is_select(node) -> bool:
    return isinstance(node, ir.Call) and isinstance(node.op, ir.Op) and str(node.op.name).endswith("if_then_else")


def _addressed_loads(expr) -> set:
    """Handles of the loads in `expr` that are the element an address is taken of."""
    found = set()

    def visit(call):
        name = str(call.op.name) if isinstance(call.op, ir.Op) else ""
        if "address_of" in name or "access_ptr" in name:
            found.update(a.__chandle__() for a in call.args if isinstance(a, ir.TensorLoad))

    walk(expr, visit, (ir.Call,))
    return found


def _join(conds: list):
    out = conds[0]
    for cond in conds[1:]:
        out = tir.And(out, cond)
    return out


def _conjuncts(cond) -> list:
    if isinstance(cond, tir.And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _reads_a_variable(index) -> bool:
    """Whether `index` reads a name the kernel assigns (`half = 1 << s`; a one-element local
    buffer): its value is unknown to the analysis, so a warning about it would be noise."""
    found = []
    walk(index, lambda load: found.append(load) if is_scalar_buffer(load.source) else None, (ir.TensorLoad,))
    return bool(found) or (isinstance(index, ir.TensorLoad) and is_scalar_buffer(index.source))


class _Guards:
    """The analyzer state while walking the kernel, and what was decided per statement."""

    def __init__(self, func: tir.PrimFunc) -> None:
        from tvm.sym import Analyzer
        self.ana = Analyzer()
        self.func = func
        self.replacements: dict[int, tir.Stmt] = {}  # statement handle -> guarded statement
        self.ours: set[int] = set()  # handles of the if_then_else calls this pass made
        self.warned: list[str] = []
        self.safe_values: dict[int, tir.Expr] = {}  # buffer handle -> T.annotate_safe_value's value

    # -- proofs ----------------------------------------------------------------------------
    def _proven(self, cond) -> bool:
        try:
            return bool(self.ana.can_prove(cond))
        except Exception:  # noqa: BLE001 - an expression the analyzer cannot take: not proven
            return False

    def _scalar(self, index) -> bool:
        ty = getattr(index, "ty", None)
        return isinstance(ty, ir.PrimType) and ty.dtype.lanes == 1 and "int" in str(ty.dtype)

    def needed(self, buffer, indices) -> list:
        """The bound checks of `buffer[indices]` this context does not prove."""
        conds = []
        for index, dim in zip(indices, buffer.ty.shape):
            if not self._scalar(index) or isinstance(index, tir.IntImm):
                continue
            dim = dim if str(dim.ty.dtype) == str(index.ty.dtype) else tir.Cast(str(index.ty.dtype), dim)
            for cond in (index < dim, index >= tir.const(0, str(index.ty.dtype))):
                if not self._proven(cond):
                    conds.append(cond)
        return conds

    def warn_local(self, buffer, indices, node) -> None:
        for index, dim in zip(indices, buffer.ty.shape):
            if not self._scalar(index) or isinstance(index, tir.IntImm) or loosely_bounded(index, reads=False) \
                    or _reads_a_variable(index):
                continue
            if not (self._proven(index < dim) and self._proven(index >= 0)):
                where = format_source(source_of(node))
                self.warned.append(f"{buffer.name}[{', '.join(str(i) for i in indices)}] may leave its "
                                   f"{buffer.scope()} buffer of shape {tuple(buffer.ty.shape)}{where}")
                return

    # -- expressions -----------------------------------------------------------------------
    def guard_expr(self, expr, node):
        """`expr` with every global load the context does not prove in bounds masked to 0
        (an element whose address is taken, `T.access_ptr(A[i], ...)` / `T.address_of`, is
        left as written: an address cannot be masked, the kernel's own code decides)."""
        addressed = _addressed_loads(expr)

        def on_load(load):
            buffer = load.source
            if not tir.is_buffer_var(buffer) or load.__chandle__() in addressed:
                return load
            if not is_global(buffer):
                self.warn_local(buffer, load.indices, node)
                return load
            if load.ty.dtype.lanes != 1:  # a whole vector the kernel loads as one: left as written
                return load
            conds = self.needed(buffer, load.indices)
            if not conds:
                return load
            guarded = tir.if_then_else(_join(conds), load, self.safe_value(buffer, str(load.ty.dtype)))
            self.ours.add(guarded.__chandle__())
            return guarded

        def on_call(call):
            if not _is_select(call) or call.__chandle__() in self.ours:
                return call
            cond, value, other = call.args
            value = self._discharge(value, cond)
            other = self._discharge(other, tir.Not(cond))
            if value.same_as(call.args[1]) and other.same_as(call.args[2]):
                return call
            return tir.if_then_else(cond, value, other, span=call.span)

        return map_stmts(expr, (ir.TensorLoad, ir.Call), lambda n: on_load(n) if isinstance(n, ir.TensorLoad)
                         else on_call(n))

    def _discharge(self, expr, cond):
        """Under `cond` (a user's mask), drop the checks of our guards that it proves."""

        def on_call(call):
            if call.__chandle__() not in self.ours:
                return call
            check, load, zero = call.args
            with self.ana.constraint_scope(cond):
                left = [c for c in _conjuncts(check) if not self._proven(c)]
            if not left:
                return load
            if len(left) == len(_conjuncts(check)):
                return call
            guarded = tir.if_then_else(_join(left), load, zero)
            self.ours.add(guarded.__chandle__())
            return guarded

        return map_stmts(expr, (ir.Call,), on_call)

    def safe_value(self, buffer, dtype: str) -> tir.Expr:
        """What a read outside `buffer` yields: its `T.annotate_safe_value`, else 0."""
        value = self.safe_values.get(buffer.__chandle__())
        return tir.const(0, dtype) if value is None else tir.Cast(dtype, value)

    # -- statements ------------------------------------------------------------------------
    def visit(self, stmt) -> None:
        if isinstance(stmt, tir.SeqStmt):
            for child in stmt.seq:
                self.visit(child)
        elif isinstance(stmt, tir.For):
            self._bind(stmt.loop_var, stmt.min, stmt.extent)
            self.visit(stmt.body)
        elif isinstance(stmt, tir.AttrStmt):
            if stmt.attr_key == "thread_extent":
                self._bind(stmt.node.var, tir.const(0, str(stmt.node.var.ty.dtype)), stmt.value)
            if stmt.attr_key == ATTR_SAFE_VALUE:
                self.safe_values[stmt.value.__chandle__()] = stmt.node
            self.visit(stmt.body)
        elif isinstance(stmt, tir.IfThenElse):
            with self.ana.constraint_scope(stmt.condition):
                self.visit(stmt.then_case)
            if stmt.else_case is not None:
                with self.ana.constraint_scope(tir.Not(stmt.condition)):
                    self.visit(stmt.else_case)
        elif isinstance(stmt, tir.BufferStore):
            self._store(stmt)
        elif isinstance(stmt, tir.Evaluate):
            self._evaluate(stmt)
        else:
            body = getattr(stmt, "body", None)  # While and what else carries a body
            if isinstance(body, tir.Stmt):
                self.visit(body)

    def _bind(self, var, low, extent) -> None:
        try:
            self.ana.bind(var, ir.Range.from_min_extent(low, extent), True)
        except Exception:  # noqa: BLE001 - a range the analyzer cannot take: the var stays unknown
            pass

    def _store(self, stmt) -> None:
        indices = [self.guard_expr(i, stmt) for i in stmt.indices]
        conds = []
        if is_global(stmt.buffer):
            conds = self.needed(stmt.buffer, stmt.indices)
        else:
            self.warn_local(stmt.buffer, stmt.indices, stmt)
        if conds:  # the value is read only where the store happens: its loads may rely on that
            with self.ana.constraint_scope(_join(conds)):
                value = self.guard_expr(stmt.value, stmt)
        else:
            value = self.guard_expr(stmt.value, stmt)
        if not conds and value.same_as(stmt.value) and all(a.same_as(b) for a, b in zip(indices, stmt.indices)):
            return
        new = tir.BufferStore(stmt.buffer, value, indices, span=stmt.span) if (
            not value.same_as(stmt.value) or not all(a.same_as(b) for a, b in zip(indices, stmt.indices))) else stmt
        if conds:
            new = tir.IfThenElse(_join(conds), new, None, span=stmt.span)
        self.replacements[stmt.__chandle__()] = new

    def _evaluate(self, stmt) -> None:
        if is_tile_op(stmt):
            op = TileOp.from_stmt(stmt)
            if op.name == "copy" and op.regions[0].buffer.__chandle__() in self.safe_values:
                self._copy_with_safe_value(op)
                return
            if op.name != "atomic_elem":
                return
            dst = op.args[1]
            conds = self.needed(dst.source, dst.indices) if is_global(dst.source) else []
            if conds:
                self.replacements[stmt.__chandle__()] = tir.IfThenElse(_join(conds), stmt, None, span=stmt.span)
            return
        value = self.guard_expr(stmt.value, stmt)
        if not value.same_as(stmt.value):
            self.replacements[stmt.__chandle__()] = tir.Evaluate(value, span=stmt.span)


    def _copy_with_safe_value(self, op) -> None:
        """A `T.copy` from a buffer with a safe value becomes the element loop it means (the
        portable lowering, reading the safe value outside the source): every target's own
        copy lowerings fill with 0 (cp.async zfill, TMA)."""
        from .portable import lower_copy

        source = op.regions[0].buffer
        self.replacements[op.stmt.__chandle__()] = lower_copy(op, None, self.safe_values[source.__chandle__()])


def guard_memory_access(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Guard the global accesses of `func` that may leave their tensor (see the module doc)."""
    options = getattr(ctx, "options", None) if ctx is not None else None
    if getattr(options, "disable_safe_memory_access", False):
        return func
    guards = _Guards(func)
    guards.visit(func.body)
    if guards.warned and not getattr(options, "disable_out_of_bound_warning", False):
        shown = "\n".join(f"  - {w}" for w in guards.warned[:8])
        more = f"\n  ... and {len(guards.warned) - 8} more" if len(guards.warned) > 8 else ""
        warnings.warn(f"indices the compiler cannot bound in shared or local memory (kept unguarded, as in "
                      f"TileLang; keep them in bounds):\n{shown}{more}", TileLangWarning, stacklevel=2)
    if not guards.replacements:
        return func
    table = guards.replacements
    body = map_stmts(func.body, (tir.BufferStore, tir.Evaluate), lambda s: table.get(s.__chandle__(), s))
    return func.with_body(body)


def LegalizeSafeMemoryAccess():  # noqa: N802 - TileLang's pass name
    """`guard_memory_access` as a TVM pass over every PrimFunc of a module; the entered
    `PassContext`'s `tl.disable_safe_memory_legalize` and `tl.disable_out_of_bound_warning`
    act as in a compile."""
    from ..jit.options import CompileOptions
    from .pass_context import ambient_configs

    class _Context:
        def __init__(self, options):
            self.options = options

    def run(func, _mod, _ctx):
        keys = {"tl.disable_safe_memory_legalize", "tl.disable_out_of_bound_warning"}
        options = CompileOptions.from_pass_configs({k: v for k, v in ambient_configs().items() if k in keys})
        return guard_memory_access(func, _Context(options))

    return tir.transform.prim_func_pass(run, opt_level=0, name="tl.LegalizeSafeMemoryAccess")
