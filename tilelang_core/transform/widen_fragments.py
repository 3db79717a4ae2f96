"""Fragments indexed past their declared shape are widened to the range the kernel uses.

TileLang gives a fragment (`T.alloc_fragment`) the layout of the loops that use it, and only
warns when an index may leave the declared shape; TileLang's attention-sink examples rely on
that: `sinks = T.alloc_fragment([heads])` is written and read as `sinks[i]` for `i` in
`T.Parallel(block_M)`, with `heads < block_M` in some configurations, and every element holds
the same value. Here such a program keeps that meaning: a fragment whose unguarded accesses,
over constant loop and launch ranges, provably reach past a dimension (and never below 0) gets
that dimension widened to the largest index used plus one, with a warning at the first such
access. Accesses that may go negative, symbolic shapes, shared and global buffers are left to
the checks (`check_constant_bounds`), which refuse what no widening explains.
"""
from __future__ import annotations

import warnings

import tvm_ffi
from tvm import ir
from tvm import tirx as tir

from ..ir import source_of
from ..ir.constants import SCOPE_FRAGMENT
from .check_values import _Ranges, _static_shape, _vars_of
from .errors import format_source
from .irutil import walk
from .safe_access import TileLangWarning

__all__ = ["widen_overindexed_fragments"]

# a widening past this many times the declared extent is an indexing mistake, left to the checks
_MAX_FACTOR = 64


def widen_overindexed_fragments(func: tir.PrimFunc, ctx=None) -> tir.PrimFunc:
    ranges = _Ranges()
    wanted: dict[int, tuple] = {}  # buffer handle -> (buffer, widened shape, first node)

    def note(buffer, indices, node) -> None:
        if buffer.scope() != SCOPE_FRAGMENT:
            return
        shape = _static_shape(buffer)
        if None in shape or len(indices) != len(shape):
            return
        key = buffer.__chandle__()
        widened = list(wanted[key][1]) if key in wanted else list(shape)
        for dim, (index, size) in enumerate(zip(indices, shape)):
            if not isinstance(index.ty, ir.PrimType) or index.ty.dtype.lanes != 1:
                return
            if any(v.__chandle__() not in ranges.known for v in _vars_of(index)):
                continue
            bound = ranges.ana.const_int_bound(index)
            low, high = int(bound.min_value), int(bound.max_value)
            if low < 0 or high >= size * _MAX_FACTOR:
                return  # negative or wild: the checks say what is wrong
            widened[dim] = max(widened[dim], high + 1)
        if widened != list(shape):  # widths only grow: a buffer once noted stays widened
            wanted[key] = (buffer, widened, wanted[key][2] if key in wanted else node)

    def on_store(stmt, guarded: bool) -> None:
        if guarded:
            return
        note(stmt.buffer, stmt.indices, stmt)
        loads: list = []
        walk(stmt.value, loads.append, (ir.TensorLoad,))
        for load in loads:
            note(load.source, load.indices, stmt)

    ranges.walk(func.body, on_store)
    if not wanted:
        return func
    new: dict[int, tir.Buffer] = {}
    for key, (buffer, shape, node) in wanted.items():
        new[key] = tir.decl_buffer(shape, buffer.dtype, name=buffer.name, scope=SCOPE_FRAGMENT)
        warnings.warn(
            f"fragment {buffer.name} is declared with shape {tuple(_static_shape(buffer))} but indexed up to "
            f"{tuple(s - 1 for s in shape)}; it is widened to {tuple(shape)} (TileLang gives a fragment the "
            f"layout of the loops that use it); declare it with the shape you index{format_source(source_of(node))}",
            TileLangWarning, stacklevel=2)

    def on_store(s: tir.BufferStore):
        b = new.get(s.buffer.__chandle__())
        return s if b is None else tir.BufferStore(b, s.value, list(s.indices), span=s.span)

    def on_load(ld):
        b = new.get(ld.source.__chandle__())
        return ld if b is None else tir.BufferLoad(b, list(ld.indices))

    def on_alloc(a: tir.AllocBuffer):
        b = new.get(a.buffer.__chandle__())
        return a if b is None else tir.AllocBuffer(b, annotations=a.annotations, span=a.span)

    body = tvm_ffi.structural_map(func.body, ((tir.BufferStore, on_store), (ir.TensorLoad, on_load),
                                              (tir.AllocBuffer, on_alloc)))
    return func.with_body(body)
