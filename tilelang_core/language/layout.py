"""Layouts the user asks for: `T.Layout`, `T.make_swizzled_layout`, `T.annotate_layout`.

The parser only records them (AttrStmt "tl.layout" per buffer, see `tilelang_core.ir`);
layout inference decides what they mean on a target.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Sequence

from tvm import ir
from tvm import tirx
from tvm.tirx import IndexMap, is_buffer_var
from tvm.tirx.script.builder import ir as _builder
from tvm.tirx.script.builder import utils as _builder_utils

from tilelang_core.ir.constants import ATTR_FRAGMENT_REPLICATE, ATTR_LAYOUT, LAYOUT_SWIZZLED

from .tensor import normalize_shape

__all__ = ["Layout", "Fragment", "SwizzledLayout", "annotate_layout", "make_swizzled_layout"]


class Layout:
    """`T.Layout(shape, forward_fn)`: element `idx` of a tile of `shape` lives at
    `forward_fn(*idx)` (one index or a tuple of indices) in the physical buffer."""

    def __init__(self, shape: Any, forward_fn: Callable[..., Any]) -> None:
        self.shape = normalize_shape(shape)
        params = inspect.signature(forward_fn).parameters.values()
        variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        arity = sum(p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                    for p in params)
        if arity != len(self.shape) and not (variadic and arity <= len(self.shape)):
            raise ValueError(
                f"T.Layout: the function takes {arity} indices but the shape {self.shape} "
                f"has {len(self.shape)} dims"
            )
        # int64 index vars: TVMScript reads printed index maps back with int64 vars; a
        # function of `*idx` (TileLang's swizzle helpers) gets one index per dim
        self.index_map = IndexMap.from_func(forward_fn, ndim=len(self.shape), index_dtype="int64")
        self._forward_fn = forward_fn

    def attr_node(self) -> Any:
        return self.index_map

    def expand(self, leading_shape: Any) -> "Layout":
        """This layout under leading dims that pass through: a layout of shape
        `leading_shape + self.shape` (TileLang's `Layout.expand`)."""
        lead = normalize_shape(leading_shape)
        inner, count = self._forward_fn, len(lead)

        def place(*idx):
            out = inner(*idx[count:])
            return [*idx[:count], *(out if isinstance(out, (list, tuple)) else [out])]

        return Layout((*lead, *self.shape), place)

    def is_equal(self, other: "Layout") -> bool:
        """Whether `other` has this shape and places every element where this one does."""
        if not isinstance(other, Layout):
            raise TypeError(f"Layout.is_equal: expected a T.Layout, got {type(other).__name__}")
        same_shape = [int(a) for a in self.shape] == [int(b) for b in other.shape]
        return same_shape and bool(self.index_map.is_equivalent_to(other.index_map))


class Fragment:
    """`T.Fragment(shape, forward_thread_fn=, replicate=1, forward_index_fn=)`: TileLang's
    register layout of a fragment, given forward: element `idx` (and replica `rep` when
    `replicate > 1`) is held by thread `forward_thread_fn(*idx[, rep])` in register slot
    `forward_index_fn(*idx)` (default: the row-major position of `idx` among the thread's
    elements is not guessed: give it). `forward_fn(*idx[, rep]) -> (thread, slot)` gives both
    at once. Use it in `T.annotate_layout({frag: T.Fragment(...)})`; layout inference then
    keeps the fragment in exactly this layout, and a matrix instruction that needs another
    one is an error naming both."""

    def __init__(self, shape: Any, forward_thread_fn: Callable[..., Any] | None = None, replicate: int = 1,
                 forward_index_fn: Callable[..., Any] | None = None,
                 forward_fn: Callable[..., Any] | None = None) -> None:
        self.shape = normalize_shape(shape)
        self.replicate = int(replicate)
        ndim = len(self.shape)
        if forward_fn is None and (forward_thread_fn is None or forward_index_fn is None):
            raise ValueError("T.Fragment: give forward_fn, or both forward_thread_fn and forward_index_fn")
        if self.replicate < 1:
            raise ValueError(f"T.Fragment: replicate must be at least 1, got {replicate}")

        def both(*args):
            idx, rep = args[:ndim], args[ndim]
            if forward_fn is not None:
                out = forward_fn(*idx, rep) if self.replicate > 1 else forward_fn(*idx)
                return list(out)
            thread = forward_thread_fn(*idx, rep) if self.replicate > 1 else forward_thread_fn(*idx)
            return [thread, forward_index_fn(*idx)]

        self.index_map = IndexMap.from_func(both, ndim=ndim + 1, index_dtype="int32")

    def attr_node(self) -> Any:
        return self.index_map


class SwizzledLayout:
    """`T.make_swizzled_layout(buf)`: the target's bank-conflict-free swizzle for `buf`."""

    def __init__(self, buffer: ir.Var) -> None:
        self.buffer = buffer

    def attr_node(self) -> Any:
        return LAYOUT_SWIZZLED


def make_swizzled_layout(
    buffer: Any, k_major: bool = True, allow_pad: bool = True
) -> SwizzledLayout:
    """The swizzled shared-memory layout of `buffer`, chosen by the target at lowering."""
    if not is_buffer_var(buffer):
        raise TypeError(f"T.make_swizzled_layout: expected a buffer, got {type(buffer).__name__}")
    return SwizzledLayout(buffer)


def _check_layout_shape(buffer: ir.Var, layout: Layout) -> None:
    shape = tuple(buffer.ty.shape)
    if len(shape) != len(layout.shape):
        raise ValueError(
            f"T.annotate_layout: {buffer.name} has {len(shape)} dims but its layout is for "
            f"shape {layout.shape}"
        )


def annotate_layout(layout_map: Mapping[Any, Any]) -> Any:
    """Record `{buffer: layout}`: one `AttrStmt(node, "tl.layout", buffer)` per entry around
    the rest of the enclosing scope."""
    frames: list[Any] = []
    items: Sequence[tuple[Any, Any]] = list(layout_map.items())
    for buffer, layout in items:
        if not is_buffer_var(buffer):
            raise TypeError(
                f"T.annotate_layout: keys must be buffers, got {type(buffer).__name__} {buffer}"
            )
        if not isinstance(layout, (Layout, SwizzledLayout, Fragment)):
            raise TypeError(
                f"T.annotate_layout: the layout of {buffer.name} must come from T.Layout, T.Fragment or "
                f"T.make_swizzled_layout, got {type(layout).__name__}"
            )
        if isinstance(layout, (Layout, Fragment)):
            _check_layout_shape(buffer, layout)
        frames.append(_builder.attr(layout.attr_node(), ATTR_LAYOUT, buffer))
        if isinstance(layout, Fragment):
            frames.append(_builder.attr(tirx.IntImm("int32", layout.replicate), ATTR_FRAGMENT_REPLICATE, buffer))
    if not frames:
        return None
    if len(frames) == 1:
        return frames[0]
    return _builder_utils._FrameScope(frames)  # pylint: disable=protected-access
