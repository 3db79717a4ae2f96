"""lower_thread_allreduce: TVM's `T.tvm_thread_allreduce` on SIMT targets.

Before: per-thread code may hold
    with T.attr(T.comm_reducer(combine, identity), "reduce_scope", ...):
        T.tvm_thread_allreduce(n, v_1..v_n, cond, r_1..r_n, tv_1, tv_2, ...)
meaning: over the threads that differ only in the listed thread variables `tv_*` (a *group*;
the other thread indices are fixed), combine every thread's values `v_i` (the identity where
`cond` is false) with the reducer, and store the group's result into `r_i` (buffer elements) on
every thread of the group. Every thread of the block must reach it, as for a barrier.
After: plain per-thread code, inside an `ATTR_SYNC_PLACED` region (it places its own barriers):
- when every thread extent is a power of two, the group is the set of flat thread indices that
  differ in a fixed set of bits. The bits below the warp size combine by a butterfly of
  `tl.shfl_xor` (targets with the "warp_shuffle" feature, blocks of at least one warp); the
  other bits through a shared scratch array: each thread publishes its partial, one barrier,
  each thread folds the partials of the threads that differ from it in those bits, one barrier;
- otherwise every value goes through the scratch array and each thread folds its whole group
  with a serial loop.
Block-serial targets never see the call: `check` rejects it there (explicit thread code runs
one thread after another, so a collective across threads cannot be emulated).
"""
from __future__ import annotations

from tvm import ir as _ir
from tvm import tirx as tir

from ..codegen import builtins
from ..ir import source_of
from ..ir.constants import ATTR_SYNC_PLACED
from .errors import TileLangCompileError
from .irutil import const, map_stmts, seq, substitute
from .kernel_info import launch_info

__all__ = ["lower_thread_allreduce", "is_thread_allreduce"]

_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def is_thread_allreduce(node) -> bool:
    """Whether `node` is an `Evaluate` of `tvm_thread_allreduce`."""
    return (isinstance(node, tir.Evaluate) and isinstance(node.value, _ir.Call)
            and getattr(node.value.op, "name", "") == "tirx.tvm_thread_allreduce")


def lower_thread_allreduce(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    if ctx.block_serial:
        return func
    info = launch_info(func)

    def on_attr(attr: tir.AttrStmt):
        if attr.attr_key != "reduce_scope" or not isinstance(attr.node, tir.CommReducer):
            return attr
        if not is_thread_allreduce(attr.body):
            raise TileLangCompileError(
                "a `reduce_scope` attribute must hold exactly one T.tvm_thread_allreduce(...) call",
                source_of(attr))
        body = _Allreduce(attr.node, attr.body, info, ctx).lower()
        return tir.AttrStmt(const(0), ATTR_SYNC_PLACED, const(1), body)

    return func.with_body(map_stmts(func.body, (tir.AttrStmt,), on_attr))


def _same_var(a: tir.Var, b) -> bool:
    return isinstance(b, tir.Var) and a.same_as(b)


class _Allreduce:
    """One `tvm_thread_allreduce` call and the thread frame it runs in."""

    def __init__(self, reducer: tir.CommReducer, stmt: tir.Evaluate, info, ctx) -> None:
        self.reducer, self.stmt, self.ctx = reducer, stmt, ctx
        self.where = source_of(stmt)
        args = list(stmt.value.args)
        n = int(args[0])
        self.values = args[1:1 + n]
        self.cond = args[1 + n]
        self.results = args[2 + n:2 + 2 * n]
        reduce_vars = args[2 + 2 * n:]
        if len(self.results) != n or any(not isinstance(r, _ir.TensorLoad) for r in self.results):
            self.fail(f"expects {n} result buffer element(s) after the condition, e.g. `red[0]`")
        if len(reducer.lhs) != n:
            self.fail(f"the comm_reducer combines {len(reducer.lhs)} value(s) but the call reduces {n}")
        # the flat thread index: x + X*y + X*Y*z, over the tags the kernel launches
        self.extents, self.strides, self.coords = [], [], []
        stride, flat = 1, None
        reduced_tags = []
        for tag in _THREAD_TAGS:
            if tag not in info.extents:
                continue
            extent, var = int(info.extents[tag]), info.vars[tag]
            self.extents.append(extent)
            self.strides.append(stride)
            self.coords.append(var)
            if any(_same_var(var, v) for v in reduce_vars):
                reduced_tags.append(len(self.extents) - 1)
            term = var if stride == 1 else var * stride
            flat = term if flat is None else flat + term
            stride *= extent
        self.threads, self.flat = stride, flat if flat is not None else const(0)
        known = [self.coords[i] for i in reduced_tags]
        for v in reduce_vars:
            if not any(_same_var(v, k) for k in known):
                self.fail(f"reduces over {v}, which is not a thread index of this kernel "
                          f"(pass the variables of T.get_thread_binding / T.thread_binding)")
        self.reduced = reduced_tags
        self.dtypes = [str(v.ty.dtype) for v in self.values]

    def fail(self, why: str):
        raise TileLangCompileError(f"T.tvm_thread_allreduce {why}", self.where)

    # -- the reducer ------------------------------------------------------------------------

    def combine(self, a: list[tir.Expr], b: list[tir.Expr]) -> list[tir.Expr]:
        mapping = {}
        for lhs, rhs, x, y in zip(self.reducer.lhs, self.reducer.rhs, a, b):
            mapping[lhs] = x
            mapping[rhs] = y
        return [substitute(r, mapping) for r in self.reducer.result]

    def contributions(self) -> list[tir.Expr]:
        cond = self.cond
        if isinstance(cond, tir.IntImm) and int(cond.value) != 0:
            return list(self.values)
        return [tir.Select(cond, v, ident if str(ident.ty.dtype) == d else tir.Cast(d, ident))
                for v, ident, d in zip(self.values, self.reducer.identity_element, self.dtypes)]

    # -- lowering ---------------------------------------------------------------------------

    def lower(self) -> tir.Stmt:
        acc = [tir.decl_buffer((1,), d, name=f"allreduce_acc{i}", scope="local") for i, d in enumerate(self.dtypes)]
        out: list[tir.Stmt] = [tir.AllocBuffer(b) for b in acc]
        out += [tir.BufferStore(b, v, [const(0)]) for b, v in zip(acc, self.contributions())]

        def mine():
            return [tir.BufferLoad(b, [const(0)]) for b in acc]

        def assign(values):
            return [tir.BufferStore(b, v, [const(0)]) for b, v in zip(acc, values)]

        group = 1
        for i in self.reduced:
            group *= self.extents[i]
        bits = self._group_bits()
        warp = int(self.ctx.caps.warp_size)
        shuffles = "warp_shuffle" in self.ctx.caps.features and self.threads >= warp and self.threads % warp == 0
        if group == 1:
            pass
        elif bits is not None:
            lane_bits = bits & (warp - 1) if shuffles else 0
            for b in range(warp.bit_length()):
                if lane_bits & (1 << b):
                    current = mine()
                    out += assign(self.combine(current, [builtins.shfl_xor(v, 1 << b) for v in current]))
            block_bits = bits & ~lane_bits
            if block_bits:
                out += self._through_shared(acc, lambda scratch: assign(self._xor_fold(scratch, block_bits)))
        else:
            out += self._through_shared(acc, lambda scratch: self._loop_fold(scratch, acc))
        out += [tir.BufferStore(r.source, tir.BufferLoad(b, [const(0)]), list(r.indices)) for r, b in zip(self.results, acc)]
        return seq(out)

    def _xor_fold(self, scratch, block_bits: int) -> list[tir.Expr]:
        """The group's result from the scratch array: the partials of the threads whose flat
        index differs from this one's only in `block_bits`, folded in one order on every
        thread (so every thread gets the same bits)."""
        first = tir.bitwise_and(self.flat, const(~block_bits))
        members = [m for m in range(0, block_bits + 1) if m & block_bits == m]
        at = [first if m == 0 else tir.bitwise_or(first, const(m)) for m in members]
        total = [tir.BufferLoad(s, [at[0]]) for s in scratch]
        for index in at[1:]:
            total = self.combine(total, [tir.BufferLoad(s, [index]) for s in scratch])
        return total

    def _through_shared(self, acc, gather) -> list[tir.Stmt]:
        """Publish each thread's partial at its flat index, a barrier, the statements
        `gather(scratch)` that set the thread's accumulators, a barrier."""
        from .simt import sync_threads

        scratch = [tir.decl_buffer((self.threads,), d, name=f"allreduce_red{i}", scope="shared.dyn")
                   for i, d in enumerate(self.dtypes)]
        out: list[tir.Stmt] = [tir.AllocBuffer(s) for s in scratch]
        out += [tir.BufferStore(s, tir.BufferLoad(b, [const(0)]), [self.flat]) for s, b in zip(scratch, acc)]
        out.append(sync_threads())
        out += gather(scratch)
        out.append(sync_threads())
        return out

    def _loop_fold(self, scratch, acc) -> list[tir.Stmt]:
        """Fold the whole group from the scratch array with a serial loop (any extents), in
        the group's order on every thread."""
        base = self.flat
        for i in self.reduced:
            base = base - (self.coords[i] * self.strides[i] if self.strides[i] != 1 else self.coords[i])
        j = tir.Var("allreduce_j", "int32")
        offset, span = None, 1
        for i in self.reduced:
            coord = tir.floormod(tir.floordiv(j, const(span)) if span > 1 else j, const(self.extents[i]))
            span *= self.extents[i]
            term = coord * self.strides[i] if self.strides[i] != 1 else coord
            offset = term if offset is None else offset + term
        out = [tir.BufferStore(b, tir.BufferLoad(s, [base]), [const(0)]) for b, s in zip(acc, scratch)]
        current = [tir.BufferLoad(b, [const(0)]) for b in acc]
        step = self.combine(current, [tir.BufferLoad(s, [base + offset]) for s in scratch])
        out.append(tir.For(j, const(1), const(span - 1), tir.ForKind.SERIAL,
                           seq([tir.BufferStore(b, v, [const(0)]) for b, v in zip(acc, step)])))
        return out

    def _group_bits(self) -> int | None:
        """The flat-index bits the group's threads differ in, when every extent is a power of
        two; None otherwise."""
        if any(e & (e - 1) for e in self.extents):
            return None
        bits = 0
        for i in self.reduced:
            low = self.strides[i].bit_length() - 1
            bits |= (self.extents[i] - 1) << low
        return bits
