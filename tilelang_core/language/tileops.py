"""Tile ops: `T.copy`, `T.transpose`, `T.fill`, `T.clear`, `T.gemm`, reductions, `T.cumsum`, `T.cummax`
(atomics are in `atomics`).

Each function checks its operands (shapes that are provably wrong fail here, at the user's
line) and returns one `tl.*` call; TVMScript wraps it in an `Evaluate` statement. The
reductions are TileLang macros: inside a kernel they emit their statement themselves.
"""
from __future__ import annotations

from enum import IntEnum
from typing import Any

import tvm
from tvm import ir
from tvm.script.ir_builder import IRBuilder
from tvm.tirx.script.builder import ir as _tirx_builder

from tilelang_core.ir.constants import (
    ACCESS_READ,
    ACCESS_READ_WRITE,
    ACCESS_WRITE,
    NAN_PROPAGATING_KINDS,
    REDUCE_KINDS,
)
from tilelang_core.ir.ops import make_call
from tilelang_core.ir.region import Region

from .regions import (
    as_operand,
    as_region,
    as_scalar,
    check_same_extents,
    describe,
    format_shape,
    is_scalar,
    known_unequal,
    resolve_pair,
    squeeze_leading,
)

__all__ = [
    "GemmWarpPolicy",
    "async_copy",
    "clear",
    "copy",
    "cummax",
    "cumsum",
    "fill",
    "gemm",
    "reduce",
    "reduce_abssum",
    "reduce_absmax",
    "reduce_bitand",
    "reduce_bitor",
    "reduce_bitxor",
    "reduce_max",
    "reduce_min",
    "reduce_sum",
    "transpose",
]


class GemmWarpPolicy(IntEnum):
    """How `T.gemm` spreads the block's warps over the output tile."""

    Square = 0
    FullRow = 1
    FullCol = 2


_EVICTION_POLICIES = ("evict_normal", "evict_first", "evict_last")


def _check_copy_hints(coalesced_width, disable_tma, eviction_policy, prefer_instruction, annotations,
                      loop_layout) -> None:
    """TileLang's T.copy keywords. They steer how a backend moves the data (vector width, TMA
    or not, cache eviction, instruction family) and never change what is copied: they are
    checked here and lowered copies do not read them yet. `loop_layout` would change the
    thread mapping and is refused until the copy lowering honours it."""
    if coalesced_width is not None and (not isinstance(coalesced_width, int) or coalesced_width <= 0):
        raise ValueError(f"T.copy: coalesced_width must be a positive int, got {coalesced_width!r}")
    if not isinstance(disable_tma, bool):
        raise TypeError(f"T.copy: disable_tma must be True or False, got {disable_tma!r}")
    if eviction_policy is not None and eviction_policy not in _EVICTION_POLICIES:
        raise ValueError(f"T.copy: eviction_policy must be one of {', '.join(_EVICTION_POLICIES)}, "
                         f"got {eviction_policy!r}")
    if prefer_instruction is not None and not isinstance(prefer_instruction, str):
        raise TypeError(f"T.copy: prefer_instruction must be a string, got {prefer_instruction!r}")
    if annotations is not None and not isinstance(annotations, dict):
        raise TypeError(f"T.copy: annotations must be a dict, got {type(annotations).__name__}")
    if loop_layout is not None:
        raise NotImplementedError("T.copy: loop_layout= is not supported yet; leave it out and "
                                  "layout inference picks the copy's thread mapping")


def copy(src: Any, dst: Any, *, coalesced_width: int | None = None, disable_tma: bool = False,
         eviction_policy: str | None = None, prefer_instruction: str | None = None,
         annotations: dict | None = None, loop_layout: Any = None, **extensions: Any) -> ir.Call:
    """Copy a tile: `tl.copy(src_region, dst_region[, hints])`. A point on one side (`A[i, j]`)
    stands for a block of the other side's shape starting there. The keywords are TileLang's
    hints (see `_check_copy_hints`): accepted, checked, and without effect on the result.
    `disable_tma=True` and the keywords installed backends add (`extensions`, see
    `tilelang_core.language.extensions`) are recorded as `hints`, a JSON object that
    `TileOp.hints` reads back."""
    _check_copy_hints(coalesced_width, disable_tma, eviction_policy, prefer_instruction, annotations, loop_layout)
    from .extensions import check_extension_keywords

    hints = {"disable_tma": True} if disable_tma else {}
    hints.update(check_extension_keywords("copy", extensions))
    src_operand = as_operand(src, ACCESS_READ, "copy", "source")
    dst_operand = as_operand(dst, ACCESS_WRITE, "copy", "destination")
    roles = ("source", "destination")
    src_region, dst_region = resolve_pair(src_operand, dst_operand, "copy", roles)
    check_same_extents(src_region, dst_region, "copy")
    if hints:
        import json

        return make_call("copy", src_region.to_call(), dst_region.to_call(),
                         ir.StringImm(json.dumps(hints, sort_keys=True)))
    return make_call("copy", src_region.to_call(), dst_region.to_call())


def async_copy(src: Any, dst: Any, *, coalesced_width: int | None = None, annotations: dict | None = None,
               loop_layout: Any = None) -> ir.Call:
    """TileLang's explicitly asynchronous copy (global -> shared): `T.copy` with the hints
    `{"async_copy": true, "disable_tma": true}`. A target with an asynchronous copy engine
    issues the copy and commits it as one group without waiting for it: the kernel waits
    itself (`T.ptx_wait_group(0)` on CUDA) before it reads the tile. Elsewhere (and for a
    copy that engine cannot do) the copy is the ordinary synchronous one, complete when
    the statement is, so a later wait has nothing left to wait for."""
    _check_copy_hints(coalesced_width, False, None, None, annotations, loop_layout)
    import json

    src_operand = as_operand(src, ACCESS_READ, "async_copy", "source")
    dst_operand = as_operand(dst, ACCESS_WRITE, "async_copy", "destination")
    src_region, dst_region = resolve_pair(src_operand, dst_operand, "async_copy", ("source", "destination"))
    check_same_extents(src_region, dst_region, "async_copy")
    return make_call("copy", src_region.to_call(), dst_region.to_call(),
                     ir.StringImm(json.dumps({"async_copy": True, "disable_tma": True}, sort_keys=True)))


def transpose(src: Any, dst: Any) -> ir.Call:
    """Swap the last two axes: `dst[..., j, i] = src[..., i, j]`, over buffers or regions of
    equal rank (>= 2): `tl.transpose(src_region, dst_region)`. An element read outside the
    source buffer reads 0; one written outside the destination is skipped."""
    src_region = as_region(src, ACCESS_READ, "transpose", "source")
    dst_region = as_region(dst, ACCESS_WRITE, "transpose", "destination")
    if src_region.ndim < 2 or src_region.ndim != dst_region.ndim:
        raise ValueError(f"T.transpose needs a source and destination of the same rank, at least 2; got "
                         f"{describe(src_region)} and {describe(dst_region)}")
    swapped = [*src_region.extents[:-2], src_region.extents[-1], src_region.extents[-2]]
    if any(known_unequal(a, b) for a, b in zip(swapped, dst_region.extents)):
        raise ValueError(f"T.transpose: {describe(src_region)} transposed is {format_shape(swapped)}, "
                         f"but the destination is {describe(dst_region)}")
    return make_call("transpose", src_region.to_call(), dst_region.to_call())


def fill(buffer: Any, value: Any) -> ir.Call:
    """Set every element of a buffer or region to `value`: `tl.fill(dst_region, value)`."""
    region = as_region(buffer, ACCESS_WRITE, "fill", "destination")
    if not is_scalar(value):
        raise TypeError(f"T.fill: the value must be a scalar, got {type(value).__name__} {value}")
    return make_call("fill", region.to_call(), as_scalar(value, region.dtype))


def clear(buffer: Any) -> ir.Call:
    """`T.fill(buffer, 0)`."""
    return fill(buffer, 0)


def _matrix(region: Region, role: str) -> tuple:
    extents = squeeze_leading(region.extents, 2)
    if extents is None or len(extents) != 2:
        raise ValueError(
            f"T.gemm: {role} must be a matrix (leading dims of extent 1 are allowed), "
            f"got {describe(region)}"
        )
    return extents


def gemm(
    A: Any,  # noqa: N803 - TileLang's argument names
    B: Any,  # noqa: N803
    C: Any,  # noqa: N803
    transpose_A: bool = False,  # noqa: N803
    transpose_B: bool = False,  # noqa: N803
    policy: GemmWarpPolicy | int = GemmWarpPolicy.Square,
    clear_accum: bool = False,
    k_pack: int = 1,
    wg_wait: int = 0,
) -> ir.Call:
    """`C += A @ B` on tiles (`C = A @ B` with `clear_accum=True`):
    `tl.gemm(A, B, C, transpose_A, transpose_B, policy, clear_accum, M, N, K)`."""
    if k_pack != 1 or wg_wait != 0:
        raise ValueError(
            "T.gemm: k_pack and wg_wait are not supported by tilelang-core; leave them out"
        )
    policy = GemmWarpPolicy(int(policy))
    a = as_region(A, ACCESS_READ, "gemm", "A")
    b = as_region(B, ACCESS_READ, "gemm", "B")
    c = as_region(C, ACCESS_READ_WRITE, "gemm", "C")
    a0, a1 = _matrix(a, "A")
    b0, b1 = _matrix(b, "B")
    c0, c1 = _matrix(c, "C")
    m, k_a = (a1, a0) if transpose_A else (a0, a1)
    k_b, n = (b1, b0) if transpose_B else (b0, b1)
    shapes = (
        f"A is {describe(a)}, B is {describe(b)}, C is {describe(c)}, "
        f"transpose_A={bool(transpose_A)}, transpose_B={bool(transpose_B)}"
    )
    if known_unequal(k_a, k_b):
        raise ValueError(f"T.gemm: K of A is {k_a} but K of B is {k_b}; {shapes}")
    if known_unequal(m, c0) or known_unequal(n, c1):
        raise ValueError(f"T.gemm: A @ B is ({m}, {n}) but C is ({c0}, {c1}); {shapes}")
    if isinstance(clear_accum, ir.Expr) and not isinstance(clear_accum, tvm.tirx.IntImm):
        # a condition known at run time (`clear_accum=(k == 0)`): C is cleared where it holds,
        # then accumulated into as usual
        from tvm.tirx.script.builder import ir as _builder

        with _builder.If(clear_accum):
            with _builder.Then():
                _builder.evaluate(clear(C))
        clear_accum = False
    return make_call(
        "gemm",
        a.to_call(),
        b.to_call(),
        c.to_call(),
        bool(transpose_A),
        bool(transpose_B),
        int(policy),
        bool(clear_accum),
        c0,
        c1,
        k_a,
    )


def _normalize_dim(dim: int, ndim: int, op: str) -> int:
    if not -ndim <= dim < ndim:
        raise ValueError(f"T.{op}: dim={dim} is out of range for a {ndim}-dim source")
    return dim % ndim


def _check_reduced_shape(src: Region, dst: Region, dim: int, op: str) -> None:
    expected = [e for i, e in enumerate(src.extents) if i != dim]
    got = list(dst.extents)
    if len(got) == len(src.extents):  # keepdim form: the reduced dim has extent 1
        if known_unequal(got[dim], 1):
            got = None
        else:
            got.pop(dim)
    mismatch = got is None or len(got) != len(expected)
    if mismatch or any(known_unequal(x, y) for x, y in zip(got, expected)):
        raise ValueError(
            f"T.{op}: reducing {describe(src)} over dim {dim} gives {format_shape(expected)}, "
            f"but the destination is {describe(dst)}"
        )


def _emit(call: ir.Call) -> ir.Call | None:
    """Add `call` to the kernel being built as a statement and return None, as TileLang's
    macro-style ops do (so a plain Python helper a kernel calls can emit them); outside a
    kernel, return the call."""
    if not IRBuilder.is_in_scope():
        return call
    _tirx_builder.evaluate(call)
    return None


_BIT_KINDS = ("bitand", "bitor", "bitxor")


# `annotations=` keys `T.reduce_*` accepts, with what each means here
REDUCE_ANNOTATIONS = {
    # TileLang's switch for packed float32x2 sums on sm_100+; the reductions here fold
    # scalars, so either value gives the same code
    "enable_fadd2": bool,
}


def _check_batch(batch: Any, op: str, dst: Region) -> None:
    """`batch=`: how many results share one cross-thread combine (TileLang's batched AllReduce:
    fewer barriers). A positive int that divides the destination's element count."""
    if isinstance(batch, bool) or not isinstance(batch, int):
        raise TypeError(f"T.{op}: batch must be an int, got {type(batch).__name__} {batch!r}")
    if batch < 1:
        raise ValueError(f"T.{op}: batch must be >= 1, got {batch}")
    total = 1
    for extent in dst.extents:
        if not isinstance(extent, (int, tvm.tirx.IntImm)):
            return  # a symbolic destination: checked only where its size is known
        total *= int(extent)
    if batch > total:
        raise ValueError(f"T.{op}: batch={batch} exceeds total output elements ({total}) of {describe(dst)}")
    if total % batch:
        raise ValueError(f"T.{op}: batch={batch} must evenly divide the {total} output elements of {describe(dst)}")


def _check_reduce_annotations(annotations: Any, op: str) -> None:
    if annotations is None:
        return
    if not isinstance(annotations, dict):
        raise TypeError(f"T.{op}: annotations must be a dict, got {type(annotations).__name__}")
    for key, value in annotations.items():
        if key not in REDUCE_ANNOTATIONS:
            raise ValueError(f"T.{op}: unknown annotation {key!r}; the ones a reduction accepts: "
                             f"{', '.join(sorted(REDUCE_ANNOTATIONS))}")
        if not isinstance(value, REDUCE_ANNOTATIONS[key]):
            raise TypeError(f"T.{op}: annotation {key!r} must be a {REDUCE_ANNOTATIONS[key].__name__}, got {value!r}")


def reduce(buffer: Any, out: Any, reduce_type: str, dim: int = -1, clear: bool = True, batch: int = 1,
           nan_propagate: bool = False, annotations: dict | None = None) -> ir.Call | None:
    """Reduce `buffer` over `dim` into `out`: `tl.reduce(src, dst, kind, dim, clear)`.
    With `clear=False` the result is combined with what `out` holds.

    `nan_propagate=True` (max, min, absmax): a NaN among the values makes the result NaN (by
    default these return the non-NaN operand, as CUDA's `__hmax`/`fmaxf` do); the kind becomes
    `max_nan`/`min_nan`/`absmax_nan`. `batch` (TileLang: how many results share one batched
    cross-thread combine) is checked (>= 1, dividing the destination's element count) and
    does not change the result; `annotations` accepts TileLang's `{"enable_fadd2": bool}`.

    Inside a kernel the statement is emitted where the call is made (also from a Python
    helper the kernel calls) and None is returned, as in TileLang."""
    if reduce_type not in REDUCE_KINDS:
        raise ValueError(f"T.reduce: kind must be one of {REDUCE_KINDS}, got {reduce_type!r}")
    op = f"reduce_{reduce_type}"
    src = as_region(buffer, ACCESS_READ, op, "source")
    dst = as_region(out, ACCESS_WRITE if clear else ACCESS_READ_WRITE, op, "destination")
    if reduce_type in _BIT_KINDS and not str(dst.dtype).startswith(("int", "uint", "bool")):
        raise ValueError(f"T.{op} needs an integer or bool destination, got {describe(dst)} of dtype {dst.dtype}")
    _check_batch(batch, op, dst)
    _check_reduce_annotations(annotations, op)
    kind = reduce_type
    if nan_propagate:
        if reduce_type not in NAN_PROPAGATING_KINDS:
            raise ValueError(f"T.{op}: nan_propagate applies to {', '.join(NAN_PROPAGATING_KINDS)} only")
        kind = NAN_PROPAGATING_KINDS[reduce_type]
    dim = _normalize_dim(dim, src.ndim, op)
    _check_reduced_shape(src, dst, dim, op)
    return _emit(make_call("reduce", src.to_call(), dst.to_call(), kind, dim, bool(clear)))


def reduce_max(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
               nan_propagate: bool = False, annotations: dict | None = None) -> None:
    """Row/column maximum of a tile (the identity is -inf for floats); NaN operands are
    skipped unless `nan_propagate` (see `reduce`)."""
    return reduce(buffer, out, "max", dim, clear, batch, nan_propagate, annotations)


def reduce_min(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
               nan_propagate: bool = False, annotations: dict | None = None) -> None:
    """Row/column minimum of a tile (the identity is +inf for floats); NaN operands are
    skipped unless `nan_propagate` (see `reduce`)."""
    return reduce(buffer, out, "min", dim, clear, batch, nan_propagate, annotations)


def reduce_sum(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
               annotations: dict | None = None) -> None:
    """Row/column sum of a tile."""
    return reduce(buffer, out, "sum", dim, clear, batch, annotations=annotations)


def reduce_abssum(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
                  annotations: dict | None = None) -> None:
    """Row/column sum of absolute values of a tile."""
    return reduce(buffer, out, "abssum", dim, clear, batch, annotations=annotations)


def reduce_absmax(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
                  nan_propagate: bool = False, annotations: dict | None = None) -> None:
    """Row/column maximum of absolute values of a tile; NaN operands are skipped unless
    `nan_propagate` (see `reduce`)."""
    return reduce(buffer, out, "absmax", dim, clear, batch, nan_propagate, annotations)


def reduce_bitand(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
                  annotations: dict | None = None) -> None:
    """Row/column bitwise and of an integer (or bool) tile."""
    return reduce(buffer, out, "bitand", dim, clear, batch, annotations=annotations)


def reduce_bitor(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
                 annotations: dict | None = None) -> None:
    """Row/column bitwise or of an integer (or bool) tile."""
    return reduce(buffer, out, "bitor", dim, clear, batch, annotations=annotations)


def reduce_bitxor(buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1,
                  annotations: dict | None = None) -> None:
    """Row/column bitwise xor of an integer (or bool) tile."""
    return reduce(buffer, out, "bitxor", dim, clear, batch, annotations=annotations)


def _scan(name: str, src: Any, dst: Any, dim: int, reverse: bool) -> ir.Call:
    """`tl.<name>(src, dst, dim, reverse)` for an inclusive scan, in place when `dst` is None."""
    source = as_region(src, ACCESS_READ, name, "source")
    in_place = dst is None
    access = ACCESS_READ_WRITE if in_place else ACCESS_WRITE
    target = as_region(src if in_place else dst, access, name, "destination")
    dim = _normalize_dim(dim, source.ndim, name)
    check_same_extents(source, target, name)
    return make_call(name, source.to_call(), target.to_call(), dim, bool(reverse))


def cumsum(src: Any, dst: Any = None, dim: int = 0, reverse: bool = False) -> ir.Call:
    """Inclusive prefix sum along `dim` (in place when `dst` is None):
    `tl.cumsum(src, dst, dim, reverse)`."""
    return _scan("cumsum", src, dst, dim, reverse)


def cummax(src: Any, dst: Any = None, dim: int = 0, reverse: bool = False) -> ir.Call:
    """Inclusive running maximum along `dim` (in place when `dst` is None; from the end when
    `reverse`): `tl.cummax(src, dst, dim, reverse)`. Element k of the result is the maximum
    of elements 0..k of the source (k..end when reversed), as `numpy.maximum.accumulate`."""
    return _scan("cummax", src, dst, dim, reverse)
