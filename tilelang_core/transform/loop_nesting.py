"""What may sit inside a `T.Parallel` loop: TileLang's nested-loop rules, checked before lowering.

A `T.Parallel` loop spreads its iterations over the block's threads. Inside it:
- another `T.Parallel` directly nested is fine (the nest is one parallel space);
- a `T.Pipelined` loop is refused: a software pipeline is the whole block's schedule of copies
  and barriers, which no single iteration can run (`T.Pipelined` around `T.Parallel` is the
  way round);
- a tile-wide op (`T.copy`, `T.gemm`, `T.fill`/`T.clear`, `T.reduce_*`, `T.cumsum`, ...) is
  refused: it is already spread over all the block's threads, so inside a loop whose
  iterations are themselves spread it would run once per iteration on a part of the block.
Element ops (`T.atomic_add` on an element, `T.print`, `T.device_assert`, and a tile op all of
whose regions are one element, e.g. `T.copy(A[i, j], B[i, j])`) stay allowed.
The error is a `TileLangCompileError` (a `ValueError`) naming the op and its line.
"""
from __future__ import annotations

from tvm import tirx as tir

from ..ir import source_of
from ..ir.constants import ANN_NUM_STAGES
from ..ir.region import Region, is_region_call
from ..ir.tileop import tile_op_call
from .errors import TileLangCompileError

__all__ = ["check_loop_nesting"]

# tile ops that spread over the whole block (refused inside T.Parallel)
_TILE_WIDE = {"copy", "transpose", "fill", "gemm", "reduce", "cumsum", "cummax", "tma_copy", "finalize_reducer"}


def _is_parallel(loop) -> bool:
    return isinstance(loop, tir.For) and loop.kind == tir.ForKind.PARALLEL


def _single_elements(call) -> bool:
    """Whether every region the op names is one element (`T.copy(A[i, j], B[i, j])` in a
    `T.Parallel` is an element copy, which TileLang allows)."""
    regions = [Region.from_call(a) for a in call.args if is_region_call(a)]
    return bool(regions) and all(isinstance(e, tir.IntImm) and int(e.value) == 1
                                 for r in regions for e in r.extents)


def check_loop_nesting(func: tir.PrimFunc) -> None:
    """Raise a `TileLangCompileError` for a `T.Pipelined` loop or a tile-wide op inside a
    `T.Parallel` loop of `func` (see the module doc)."""

    def visit(stmt, parallel) -> None:
        if isinstance(stmt, tir.SeqStmt):
            for child in stmt.seq:
                visit(child, parallel)
            return
        if isinstance(stmt, tir.For):
            if parallel is not None and ANN_NUM_STAGES in stmt.annotations:
                raise TileLangCompileError(
                    "a T.Pipelined loop inside a T.Parallel loop: a software pipeline schedules the whole "
                    "block and cannot run per parallel iteration; put the T.Parallel loop inside the "
                    "T.Pipelined one", source_of(stmt) or source_of(parallel))
            visit(stmt.body, stmt if _is_parallel(stmt) else parallel)
            return
        if isinstance(stmt, tir.IfThenElse):
            visit(stmt.then_case, parallel)
            if stmt.else_case is not None:
                visit(stmt.else_case, parallel)
            return
        call = tile_op_call(stmt)
        if call is not None:
            name = call.op.name[3:]
            if parallel is not None and name in _TILE_WIDE and not _single_elements(call):
                raise TileLangCompileError(
                    f"T.{name} inside a T.Parallel loop: a tile op already runs on all the block's threads, "
                    f"so it cannot be one iteration of a loop spread over them; move it out of the T.Parallel "
                    f"loop (or write the element-wise loop yourself)", source_of(stmt) or source_of(parallel))
            return
        body = getattr(stmt, "body", None)
        if isinstance(body, tir.Stmt):
            visit(body, parallel)

    visit(func.body, None)
