"""`Analyzer`: what a kernel's tile ops do over its whole grid, and a roofline time for it.

Counted from the tile IR (`@T.prim_func`, or `jit_fn.get_tir(...)`), before lowering: each
`T.gemm` does 2*M*N*K FLOPs, each `T.copy` with a global tensor on one side moves the bytes of
that side's region; both are multiplied by the trip counts of the loops around them (constant
extents) and by the grid's block count. Symbolic extents count as 1 (say so with a constant
shape to count them). The time is the larger of FLOPs / peak and bytes / bandwidth; the peak and
bandwidth come from `device` where it states them (TileLang's carver `CUDA(...)` objects,
or anything with `peak_tflops` / `bandwidth` attributes), else the estimate is of bytes alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AnalysisResult", "Analyzer"]


@dataclass(frozen=True)
class AnalysisResult:
    """The analysis: FLOPs, global bytes, the roofline's time in seconds (None when neither
    rate is known), and the rates it used (TFLOP/s and GB/s; None when unknown)."""

    total_flops: int
    total_global_bytes: int
    estimated_time: float | None
    expected_tflops: float | None
    expected_bandwidth_GBps: float | None


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        inner = getattr(value, "value", None)
        return int(inner) if isinstance(inner, int) else None


class Analyzer:
    """`Analyzer.analysis(func, device)` -> `AnalysisResult` (see the module doc)."""

    def __init__(self, fn: Any, device: Any = None) -> None:
        funcs = list(fn.functions.values()) if hasattr(fn, "functions") else [fn]
        self.funcs = funcs
        self.device = device
        self.total_flops = 0
        self.total_global_bytes = 0

    def run(self) -> "Analyzer":
        from tvm import tirx

        from ..ir import TileOp, dtype_bytes, is_tile_op

        def visit(stmt, scale: int) -> None:
            if isinstance(stmt, tirx.SeqStmt):
                for child in stmt.seq:
                    visit(child, scale)
            elif isinstance(stmt, tirx.For):
                visit(stmt.body, scale * (_int(stmt.extent) or 1))
            elif isinstance(stmt, tirx.AttrStmt):
                grows = stmt.attr_key == "thread_extent" and str(stmt.node.thread_tag).startswith("blockIdx")
                visit(stmt.body, scale * ((_int(stmt.value) or 1) if grows else 1))
            elif isinstance(stmt, tirx.IfThenElse):
                visit(stmt.then_case, scale)
                if stmt.else_case is not None:
                    visit(stmt.else_case, scale)
            elif isinstance(stmt, tirx.Evaluate) and is_tile_op(stmt):
                op = TileOp.from_stmt(stmt)
                if op.name == "gemm":
                    m, n, k = (_int(op.args[i]) or 0 for i in (7, 8, 9))
                    self.total_flops += 2 * m * n * k * scale
                elif op.name == "copy" and op.regions:
                    side = next((r for r in op.regions if r.buffer.scope() == "global"), None)
                    if side is not None:
                        elements = 1
                        for extent in side.extents:
                            elements *= _int(extent) or 1
                        self.total_global_bytes += elements * dtype_bytes(str(side.buffer.ty.dtype)) * scale
            else:
                body = getattr(stmt, "body", None)
                if isinstance(body, tirx.Stmt):
                    visit(body, scale)

        for func in self.funcs:
            visit(func.body, 1)
        return self

    def calculate(self) -> AnalysisResult:
        peak = getattr(self.device, "peak_tflops", None)
        bandwidth = getattr(self.device, "bandwidth", None)
        if isinstance(bandwidth, (list, tuple)):  # TileLang's carver: (read, write) in MB/s
            bandwidth = max(bandwidth) / 1000.0
        peak = float(peak) if isinstance(peak, (int, float)) else None
        bandwidth = float(bandwidth) if isinstance(bandwidth, (int, float)) else None
        times = []
        if bandwidth:
            times.append(self.total_global_bytes / (bandwidth * 1e9))
        if peak:
            times.append(self.total_flops / (peak * 1e12))
        return AnalysisResult(self.total_flops, self.total_global_bytes, max(times) if times else None, peak, bandwidth)

    @classmethod
    def analysis(cls, fn: Any, device: Any = None) -> AnalysisResult:
        return cls(fn, device).run().calculate()
