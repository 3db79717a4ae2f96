"""`TileOp`: a Python view of one tile-op statement, for the lowering passes."""
from __future__ import annotations

from dataclasses import dataclass

import tvm_ffi
from tvm import ir, tirx

from .constants import TILE_OP_NAMES
from .region import Region, is_region_call
from .source import source_of

__all__ = ["TileOp", "collect_tile_ops", "is_tile_op", "tile_op_call"]


def tile_op_call(stmt: object) -> ir.Call | None:
    """The `tl.*` call of a tile-op statement (`Evaluate(Call(tl.<op>, ...))`), else None."""
    if not isinstance(stmt, tirx.Evaluate):
        return None
    call = stmt.value
    if isinstance(call, ir.Call) and isinstance(call.op, ir.Op) and call.op.name in TILE_OP_NAMES:
        return call
    return None


def is_tile_op(stmt: object, name: str | None = None) -> bool:
    """Whether `stmt` is a tile-op statement (of op `name`, e.g. "copy" or "tl.copy", if given)."""
    call = tile_op_call(stmt)
    if call is None:
        return False
    return name is None or call.op.name in (name, f"tl.{name}")


@dataclass(frozen=True, eq=False)
class TileOp:
    """One tile op: `name` without the "tl." prefix ("copy", "gemm", ...), the raw call
    `args`, the `regions` among them (in argument order) and the user's `source` line.

    Argument orders (the contract; see `tilelang_core.ir`):
    copy(src, dst[, hints]) · transpose(src, dst) · fill(dst, value) ·
    gemm(A, B, C, trans_A, trans_B, policy, clear_accum, M, N, K[, wg_wait]) ·
    gemm_sp(A_sparse, E, B, C, trans_A, trans_E, trans_B, policy, clear_accum, M, N, K) · reduce(src, dst, kind, dim, clear) · cumsum / cummax(src, dst, dim, reverse) ·
    atomic(kind, dst, src or value, memory_order, use_tma) ·
    atomic_elem(kind, BufferLoad dst, value, memory_order) ·
    use_swizzle(panel_size, order) · print(value or region, msg) · device_assert(cond, msg) ·
    init_barriers(barriers, *arrive_counts) · barrier_wait(BufferLoad barrier, parity) ·
    barrier_arrive(BufferLoad barrier) · tma_copy(src, dst, BufferLoad barrier) ·
    reducer_info(reducer, op) · finalize_reducer(reducer, dst, op[, init]).
    """

    name: str
    args: tuple
    regions: tuple[Region, ...]
    source: tuple[str, int] | None
    stmt: tirx.Evaluate

    @classmethod
    def from_stmt(cls, stmt: tirx.Evaluate) -> TileOp:
        """The view of a tile-op statement; ValueError if `stmt` is not one."""
        call = tile_op_call(stmt)
        if call is None:
            raise ValueError(f"not a tile-op statement: {stmt}")
        regions = tuple(Region.from_call(a) for a in call.args if is_region_call(a))
        return cls(call.op.name[3:], tuple(call.args), regions, source_of(stmt), stmt)

    @property
    def call(self) -> ir.Call:
        return self.stmt.value

    @property
    def hints(self) -> dict:
        """A copy's recorded hints: `{"disable_tma": True}`, `{"async_copy": True}` (T.async_copy:
        a backend with an asynchronous copy engine may leave the wait to the kernel) and the
        keywords installed backends add to `T.copy` (`tilelang_language_keywords`), as passed;
        {} when none (and for other ops). A backend reads only its own keywords, `disable_tma`
        and `async_copy`."""
        if self.name != "copy" or len(self.args) < 3 or not isinstance(self.args[2], ir.StringImm):
            return {}
        import json

        return json.loads(str(self.args[2].value))

    def int_arg(self, index: int) -> int:
        """Argument `index` as a Python int (it must be an IntImm)."""
        return int(self.args[index].value)

    def str_arg(self, index: int) -> str:
        """Argument `index` as a Python str (it must be a StringImm)."""
        return str(self.args[index].value)

    @property
    def location(self) -> str:
        """`file:line`, for error messages."""
        return f"{self.source[0]}:{self.source[1]}" if self.source else "<unknown location>"


def collect_tile_ops(node: object) -> list[TileOp]:
    """Every tile op under `node` (a PrimFunc or a Stmt), in program order."""
    found: list[TileOp] = []

    def visit(stmt: tirx.Evaluate) -> None:
        if tile_op_call(stmt) is not None:
            found.append(TileOp.from_stmt(stmt))

    tvm_ffi.structural_walk(node, [(tirx.Evaluate, visit)], order="pre")
    return found
