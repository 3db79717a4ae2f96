"""lower_tile_ops: every tile op becomes loops, by the backend's lowering or the portable one.

Before: `Evaluate(tl.copy/fill/gemm/reduce/...)` statements (see `tilelang_core.ir`).
After: no tile op is left; each became the statement returned by the target's
`tilelang_lower_tile_op` hook or, when that returns None, by `portable.lower_portable`.
Loops over independent elements are PARALLEL loops, for `partition_parallel` to place.
A tile op inside a `T.ws` scope is lowered for the threads of that range: its context's
`threads` is the range's size and `per_thread` runs over the range (see `thread_ranges`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from tvm import tirx as tir

from ..ir import TileOp, is_tile_op
from ..layout import FragmentLayouts
from . import barrier_ops  # noqa: F401 - registers the portable barrier-op lowerings
from . import portable
from .errors import TileLangCompileError
from .irutil import map_stmts
from .kernel_info import launch_info
from .layout_inference import FRAGMENT_LAYOUTS
from .thread_ranges import ThreadRange, ranges_of

__all__ = ["LowerContext", "lower_tile_ops"]


@dataclass
class LowerContext:
    """What a tile-op lowering may read: the target, its thread count and execution model.

    Inside a `T.ws` scope `threads` is the size of its thread range and `thread_range` the
    range (None: the whole block); `per_thread` then runs over the range's threads, indexed
    from 0.

    `portable(op)` returns the core's lowering of `op`, for backends that specialise part
    of an op and delegate the rest. `layout_of(fragment)` is the layout imposed on it at
    `infer_layout` (None: the portable distribution); a lowering that writes such a fragment
    per thread addresses `register_buffer(fragment)`, slot by slot, inside `per_thread(...)`.
    """

    target: Any
    threads: int
    block_serial: bool
    facts: dict
    thread_range: ThreadRange | None = None

    @property
    def caps(self):
        return self.target.capabilities

    @property
    def layouts(self) -> FragmentLayouts:
        return self.facts.setdefault(FRAGMENT_LAYOUTS, FragmentLayouts())

    def layout_of(self, buffer):
        return self.layouts.get(buffer)

    def register_buffer(self, buffer) -> tir.Buffer:
        return self.layouts.register_buffer(buffer)

    def per_thread(self, build: Callable[[tir.Var], tir.Stmt], span=None) -> tir.Stmt:
        """A statement that runs `build(thread)` once on every thread of the block, `thread`
        being the flat thread index (threadIdx.x + threadIdx.y * blockDim.x + ...).

        It is a `T.Parallel` loop over the threads, which the SIMT placement gives one
        iteration per thread; statements in it are not guarded to thread 0 and a fragment's
        `register_buffer` in it holds the calling thread's slots."""
        thread = tir.Var("thread", "int32")
        return tir.For(thread, tir.const(0, "int32"), tir.const(self.threads, "int32"),
                       tir.ForKind.PARALLEL, build(thread), span=span)

    def portable(self, op: TileOp) -> tir.Stmt:
        return portable.lower_portable(op, self)


def lower_tile_ops(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    block = launch_info(func).threads
    whole = LowerContext(ctx.target, block, ctx.block_serial, ctx.facts)
    ranges = ranges_of(func.body, (tir.Evaluate,), ctx.caps, ctx.target, block)
    contexts = {}

    def on_eval(stmt: tir.Evaluate):
        if not is_tile_op(stmt):
            return stmt
        op = TileOp.from_stmt(stmt)
        here = ranges.get(stmt.__chandle__())
        if here is None:
            lctx = whole
        else:
            if here not in contexts:
                contexts[here] = LowerContext(ctx.target, here.extent, ctx.block_serial, ctx.facts, here)
            lctx = contexts[here]
        lowered = ctx.hooks.lower_tile_op(op, lctx) if ctx.hooks is not None else None
        if lowered is None:
            lowered = portable.lower_portable(op, lctx)
        if not isinstance(lowered, tir.Stmt):
            raise TileLangCompileError(
                f"the lowering of T.{op.name} for {ctx.target} returned {type(lowered).__name__}, "
                f"not a statement (a backend bug)", op.source)
        return lowered

    return func.with_body(map_stmts(func.body, (tir.Evaluate,), on_eval))
