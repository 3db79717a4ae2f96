"""Small names of TileLang's language: integer helpers (`T.cdiv`, `T.align_up`,
`T.index_to_coordinates`), whole-buffer predicates (`T.any_of`, `T.all_of`), vector lanes
(`T.extract_lane`), loop control (`T.loop_break`), and TVM's expression classes re-exported
for annotations (`T.PrimExpr`, `T.StringImm`).
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx
from tvm.tirx import is_buffer_var

from .misc import ceildiv

__all__ = ["PrimExpr", "StringImm", "align_up", "all_of", "any_of", "cdiv", "extract_lane",
           "index_to_coordinates", "loop_break"]

PrimExpr = ir.Expr  # the class of every scalar expression, for `x: T.PrimExpr` annotations
StringImm = ir.StringImm
cdiv = ceildiv

_MAX_PREDICATE_ELEMENTS = 4096  # an any_of/all_of over more elements is a reduction, not an expression


def align_up(x: Any, y: Any) -> Any:
    """`x` rounded up to a multiple of `y`: `T.cdiv(x, y) * y` (an int for ints)."""
    return ceildiv(x, y) * y


def index_to_coordinates(index: Any, shape: Any) -> list:
    """The row-major coordinates of flat `index` in `shape`: the inverse of
    `((i0 * s1 + i1) * s2 + i2)`."""
    coordinates = []
    for extent in reversed(list(shape)):
        coordinates.append(index % extent)
        index = index // extent
    return coordinates[::-1]


def _elements(buffer: Any, name: str) -> list:
    """The element loads of a buffer or region `buffer` (constant extents)."""
    if is_buffer_var(buffer):
        source, mins, extents = buffer, [0] * len(buffer.shape), list(buffer.shape)
    elif isinstance(buffer, ir.TensorRegion):
        source = buffer.source
        mins, extents = [r.min for r in buffer.region], [r.extent for r in buffer.region]
    else:
        raise TypeError(f"T.{name}: expects a buffer or a region like B[0:8], got {type(buffer).__name__} {buffer}")
    sizes = []
    for extent in extents:
        if not isinstance(extent, (int, tirx.IntImm)):
            raise ValueError(f"T.{name}: the extents of {source.name} must be constants, got {extents}")
        sizes.append(int(extent))
    total = 1
    for s in sizes:
        total *= s
    if total > _MAX_PREDICATE_ELEMENTS:
        raise ValueError(f"T.{name}: {total} elements of {source.name}; at most {_MAX_PREDICATE_ELEMENTS} "
                         f"(reduce larger buffers with T.reduce_max/T.reduce_sum)")
    loads = []
    for flat in range(total):
        coords = index_to_coordinates(flat, sizes)
        loads.append(tirx.BufferLoad(source, [m + c for m, c in zip(mins, coords)]))
    return loads


def _truth(value: ir.Expr) -> ir.Expr:
    return value if str(value.ty.dtype) == "bool" else value != tirx.const(0, str(value.ty.dtype))


def any_of(buffer: Any) -> ir.Expr:
    """bool: whether any element of `buffer` (or region) is true / non-zero."""
    loads = _elements(buffer, "any_of")
    result = _truth(loads[0])
    for load in loads[1:]:
        result = tirx.Or(result, _truth(load))
    return result


def all_of(buffer: Any) -> ir.Expr:
    """bool: whether every element of `buffer` (or region) is true / non-zero."""
    loads = _elements(buffer, "all_of")
    result = _truth(loads[0])
    for load in loads[1:]:
        result = tirx.And(result, _truth(load))
    return result


def extract_lane(vector: Any, lane: Any) -> ir.Expr:
    """Lane `lane` (a constant) of the vector expression `vector`, as a scalar."""
    if not isinstance(vector, ir.Expr):
        raise TypeError(f"T.extract_lane: expects a vector expression, got {type(vector).__name__}")
    lanes = ir.PrimType(str(vector.ty.dtype)).dtype.lanes
    if lanes <= 1:
        raise ValueError(f"T.extract_lane: expects a vector expression, got dtype {vector.ty.dtype}")
    if isinstance(lane, tirx.IntImm):
        lane = int(lane.value)
    if not isinstance(lane, int) or isinstance(lane, bool):
        raise TypeError(f"T.extract_lane: the lane must be a constant int, got {lane!r}")
    if not 0 <= lane < lanes:
        raise ValueError(f"T.extract_lane: lane {lane} of a {lanes}-lane vector")
    return tirx.Shuffle([vector], [tirx.const(lane, "int32")])


def loop_break() -> ir.Call:
    """Leave the innermost loop (C's `break`)."""
    return tirx.call_intrin("void", "tirx.break_loop")
