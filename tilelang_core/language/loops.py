"""Loops: `T.Pipelined`, `T.Parallel`, and TileLang's spellings of `T.serial/unroll/vectorized`.

`for i, j in T.Parallel(a, b)` needs a parser hook: TVMScript's `for` accepts only one
`ForFrame`, and there is no frame that opens several parallel loops. `install_for_handler`
wraps the tirx `For` handler once per process: a loop over a `T.Parallel(...)` call opens one
parallel loop per extent; every other loop goes to TVM's handler unchanged.
"""
from __future__ import annotations

import threading
from contextlib import ExitStack
from typing import Any, Sequence

from tvm.script.parser._core import dispatch, doc
from tvm.tirx.script.builder import ir as _builder
from tvm.tirx.script.parser import parser as _tirx_parser

from tilelang_core.ir.constants import (
    ANN_NUM_STAGES,
    ANN_PARALLEL_COALESCED_WIDTH,
    ANN_PIPELINE_GROUP,
    ANN_PIPELINE_ORDER,
    ANN_PIPELINE_STAGE,
    ANN_PIPELINE_SYNC,
)

__all__ = [
    "Parallel",
    "Persistent",
    "Pipelined",
    "Serial",
    "Unroll",
    "Vectorized",
    "grid",
    "serial",
    "unroll",
    "vectorized",
]


def _bounds(start: Any, stop: Any) -> tuple[Any, Any]:
    return (0, start) if stop is None else (start, stop)


def serial(
    start: Any, stop: Any = None, step: Any = None, *, annotations: dict | None = None
) -> Any:
    """A serial loop over [start, stop) (or [0, start)) with an optional step."""
    return _builder.serial(*_bounds(start, stop), step=step, annotations=annotations)


Serial = serial  # TileLang's capitalised spelling


def unroll(
    start: Any,
    stop: Any = None,
    step: Any = None,
    *,
    explicit: bool = False,
    unroll_factor: int | None = None,
    annotations: dict | None = None,
) -> Any:
    """An unrolled loop; `unroll_factor=` asks for a partial unroll (`#pragma unroll N`)."""
    if unroll_factor is not None:
        return _builder.serial(
            *_bounds(start, stop), step=step, unroll=unroll_factor, annotations=annotations
        )
    return _builder.unroll(*_bounds(start, stop), step=step, annotations=annotations)


def vectorized(
    start: Any, stop: Any = None, step: Any = None, *, annotations: dict | None = None
) -> Any:
    """A vectorized loop."""
    return _builder.vectorized(*_bounds(start, stop), step=step, annotations=annotations)


grid = _builder.grid


def Pipelined(  # noqa: N802 - TileLang's name
    start: Any,
    stop: Any = None,
    num_stages: int = 0,
    order: Sequence[int] | None = None,
    stage: Sequence[int] | None = None,
    sync: Sequence[Sequence[int]] | None = None,
    group: Sequence[Sequence[int]] | None = None,
) -> Any:
    """A serial loop whose body the pipeline planner software-pipelines over `num_stages`.

    `order` and `stage` (one entry per statement of the body) fix the planner's choice.
    """
    annotations: dict[str, Any] = {ANN_NUM_STAGES: int(num_stages)}
    for key, value in (
        (ANN_PIPELINE_ORDER, order),
        (ANN_PIPELINE_STAGE, stage),
        (ANN_PIPELINE_SYNC, sync),
        (ANN_PIPELINE_GROUP, group),
    ):
        if value is not None:
            annotations[key] = list(value)
    if order is not None and stage is not None and len(order) != len(stage):
        raise ValueError(
            f"T.Pipelined order= and stage= need one entry per statement, "
            f"got {len(order)} and {len(stage)}"
        )
    return _builder.serial(*_bounds(start, stop), annotations=annotations)


class ParallelNest:
    """The loops of `T.Parallel(a, b, ...)`: one parallel loop per extent, outermost first."""

    def __init__(self, extents: Sequence[Any], coalesced_width: int | None) -> None:
        self.extents = tuple(extents)
        self.coalesced_width = coalesced_width

    def frames(self) -> list[Any]:
        frames = []
        for index, extent in enumerate(self.extents):
            annotations = None
            if self.coalesced_width is not None and index == len(self.extents) - 1:
                annotations = {ANN_PARALLEL_COALESCED_WIDTH: int(self.coalesced_width)}
            frames.append(_builder.parallel(*_bounds(extent, None), annotations=annotations))
        return frames


def Parallel(*extents: Any, coalesced_width: int | None = None, prefer_async: bool | None = None,  # noqa: N802
             annotations: dict | None = None) -> Any:
    """Loops whose iterations are independent, one per extent: `for i, j in T.Parallel(M, N)`.

    Each becomes a `For` of kind PARALLEL; layout inference later splits them over threads.
    `prefer_async` (TileLang's hint that a copy-like loop may become asynchronous copies) and
    `annotations` (TileLang's scheduling hints for the loop, such as
    `{"parallel_async_without_async_commit_wait": True}`) are accepted and change nothing: the
    backends choose asynchronous copies and their waits themselves. The meaning of the loop
    never depends on them.
    """
    if not extents:
        raise ValueError("T.Parallel needs at least one extent")
    if annotations is not None and not isinstance(annotations, dict):
        raise TypeError(f"T.Parallel: annotations must be a dict of loop hints, got {type(annotations).__name__}")
    nest = ParallelNest(extents, coalesced_width)
    return nest.frames()[0] if len(extents) == 1 else nest


class Persistent:  # noqa: N801 - TileLang's name
    """`for bx, by in T.Persistent([m_tiles, n_tiles], wave_size, index, group_size=8)`: the tiles
    of a domain handed out in waves to `wave_size` persistent blocks, this one being `index`.

    Wave `w` gives this block tile `t = w * wave_size + index`. Tiles are numbered in groups
    of `group_size` along the last dim (the first dims varying fastest within a group, for L2
    reuse): `t` decomposes over `[ceil(last / g), dims[:-1]..., g]`, the last coordinate is
    `group * g + offset`. The body runs for tiles inside the domain only.
    """

    def __init__(self, domain: Sequence[Any], wave_size: Any, index: Any, group_size: Any = 8) -> None:
        if not domain:
            raise ValueError("T.Persistent needs a non-empty domain, e.g. [T.ceildiv(M, bm), T.ceildiv(N, bn)]")
        self.domain, self.wave_size, self.index, self.group_size = list(domain), wave_size, index, group_size

    def emit(self, parser: Any, node: doc.For) -> None:
        last = self.domain[-1]
        group = _builder.max(1, _builder.min(self.group_size, last)) if self.group_size is not None else 1
        radix = [_builder.ceildiv(last, group), *self.domain[:-1], group]
        padded = radix[0]
        for r in radix[1:]:
            padded = padded * r
        with parser.var_table.with_frame(), _builder.serial(0, _builder.ceildiv(padded, self.wave_size)) as wave:
            tile = wave * self.wave_size + self.index
            digits, rest = [None] * len(radix), tile
            for i in range(len(radix) - 1, 0, -1):
                digits[i], rest = _builder.truncmod(rest, radix[i]), _builder.truncdiv(rest, radix[i])
            digits[0] = rest
            coords = [*digits[1:-1], digits[0] * group + digits[-1]]
            with _builder.If(_builder.And(tile < padded, coords[-1] < last)):
                with _builder.Then():
                    parser.eval_assign(target=node.target, source=coords if len(coords) > 1 else coords[0],
                                       bind_value=_tirx_parser.bind_assign_value)
                    parser.visit_body(node.body)


def _parallel_call(parser: Any, node: doc.For) -> Any:
    """The loops of a `for ... in T.Parallel(...)` loop, else None (TVM's handler runs).
    A `T.Persistent(...)` loop comes back as its `Persistent` object."""
    call = node.iter
    if not isinstance(call, doc.Call):
        return None
    if isinstance(call.func, doc.Name) and call.func.id == "range":
        return None
    try:
        func = parser.eval_expr(call.func)
    except Exception:  # pylint: disable=broad-except
        return None  # let TVM's handler evaluate it and report the error
    if func is Persistent:
        return parser.eval_expr(call)
    if func is not Parallel:
        return None
    value = parser.eval_expr(call)
    return value.frames() if isinstance(value, ParallelNest) else [value]


_parallel = threading.local()


def inside_parallel() -> bool:
    """Whether the statement being parsed lies inside a `T.Parallel` nest."""
    return getattr(_parallel, "depth", 0) > 0


def _visit_parallel(parser: Any, node: doc.For, frames: list[Any]) -> None:
    with parser.var_table.with_frame(), ExitStack() as loops:
        loop_vars = [loops.enter_context(frame) for frame in frames]
        source = loop_vars if len(loop_vars) > 1 else loop_vars[0]
        bind = _tirx_parser.bind_for_value
        parser.eval_assign(target=node.target, source=source, bind_value=bind)
        _parallel.depth = getattr(_parallel, "depth", 0) + 1
        try:
            parser.visit_body(node.body)
        finally:
            _parallel.depth -= 1


_installed = False


def install_for_handler() -> None:
    """Teach the tirx parser's `for` about `T.Parallel(a, b, ...)` (idempotent)."""
    global _installed  # pylint: disable=global-statement
    if _installed:
        return
    tvm_visit_for = dispatch.get(token="tirx", type_name="For")

    def visit_for(parser: Any, node: doc.For) -> None:
        frames = _parallel_call(parser, node)
        if frames is None:
            return tvm_visit_for(parser, node)
        if isinstance(frames, Persistent):
            return frames.emit(parser, node)
        return _visit_parallel(parser, node, frames)

    dispatch.register(token="tirx", type_name="For")(visit_for)
    _installed = True



Unroll = unroll  # TileLang's capitalised spellings
Vectorized = vectorized
