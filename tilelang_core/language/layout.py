"""Layouts the user asks for: `T.Layout`, `T.make_swizzled_layout`, `T.annotate_layout`.

The parser only records them (AttrStmt "tl.layout" per buffer, see `tilelang_core.ir`);
layout inference decides what they mean on a target.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Sequence

import tvm_ffi
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

    def __repr__(self) -> str:
        inputs = ", ".join(str(v) for v in self.index_map.initial_indices)
        outputs = ", ".join(str(e) for e in self.index_map.final_indices)
        return f"Layout(shape={list(self.shape)}, ({inputs}) -> ({outputs}))"

    def get_input_shape(self) -> list:
        """The tile's shape (what the layout is indexed with)."""
        return list(self.shape)

    def get_output_shape(self) -> list:
        """The physical shape: per output index, one more than its largest value over the tile."""
        return _output_extents(self.index_map, self.shape)

    def get_forward_index(self) -> list:
        """The output indices, over this layout's own input variables."""
        return list(self.index_map.final_indices)

    def get_linearized_forward_index(self) -> Any:
        """The output indices flattened row-major over `get_output_shape()`, as an expression of
        the canonical input variables (the same for every layout of this rank, so the results of
        two layouts compare with an `Analyzer`)."""
        extents = self.get_output_shape()
        flat = tirx.const(0, "int64")
        for index, extent in zip(self.index_map.final_indices, extents):
            flat = flat * extent + (index if index.ty.dtype == "int64" else tirx.Cast("int64", index))
        canonical = {var: _input_var(k) for k, var in enumerate(self.index_map.initial_indices)}
        return _simplify(_substitute(flat, canonical))

    def expand(self, leading_shape: Any) -> "Layout":
        """This layout under leading dims that pass through: a layout of shape
        `leading_shape + self.shape` (TileLang's `Layout.expand`); an empty `leading_shape`
        gives this layout itself."""
        if isinstance(leading_shape, str) or not isinstance(leading_shape, (int, list, tuple)):
            raise TypeError(f"Layout.expand: leading_shape must be an int or a list of ints, got "
                            f"{type(leading_shape).__name__} {leading_shape!r}")
        if isinstance(leading_shape, int):
            leading_shape = [leading_shape]
        if not leading_shape:
            return self
        if any(isinstance(d, int) and d <= 0 for d in leading_shape):
            raise ValueError(f"Layout.expand: leading dims must be positive, got {list(leading_shape)}")
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
    """`T.Fragment(shape, forward_fn=None, forward_thread_fn=None, replicate=1, forward_index_fn=None)`
    (TileLang's parameter order: a second positional argument is `forward_fn`): TileLang's
    register layout of a fragment, given forward: element `idx` (and replica `rep` when
    `replicate > 1`) is held by thread `forward_thread_fn(*idx[, rep])` in register slot
    `forward_index_fn(*idx)` (default: the row-major position among the indices the thread
    does not read, where that is one slot per element). `forward_fn(*idx[, rep]) -> (thread, slot)` gives both
    at once. Use it in `T.annotate_layout({frag: T.Fragment(...)})`; layout inference then
    keeps the fragment in exactly this layout, and a matrix instruction that needs another
    one is an error naming both."""

    def __init__(self, shape: Any, forward_fn: Callable[..., Any] | None = None,
                 forward_thread_fn: Callable[..., Any] | None = None, replicate: int = 1,
                 forward_index_fn: Callable[..., Any] | None = None) -> None:
        self.shape = normalize_shape(shape)
        self.replicate_size = int(replicate)
        ndim = len(self.shape)
        if forward_fn is None and forward_thread_fn is None:
            raise ValueError("T.Fragment: give forward_fn, or forward_thread_fn (with forward_index_fn, "
                             "or alone when the thread is a one-to-one function of the indices it reads)")
        if self.replicate_size < 1:
            raise ValueError(f"T.Fragment: replicate must be at least 1, got {replicate}")
        if forward_fn is None and forward_index_fn is None:
            forward_index_fn = _unused_index_fn(self.shape, forward_thread_fn, self.replicate_size)

        def both(*args):
            idx, rep = args[:ndim], args[ndim]
            if forward_fn is not None:
                out = forward_fn(*idx, rep) if self.replicate_size > 1 else forward_fn(*idx)
            else:
                thread = forward_thread_fn(*idx, rep) if self.replicate_size > 1 else forward_thread_fn(*idx)
                out = [thread, forward_index_fn(*idx)]
            # a constant (slot 0 of a one-register layout) is an int32 expression like the rest
            return [tirx.const(v, "int32") if isinstance(v, int) else v for v in out]

        self.index_map = IndexMap.from_func(both, ndim=ndim + 1, index_dtype="int32")

    def attr_node(self) -> Any:
        return self.index_map

    def is_equal(self, other: "Fragment") -> bool:
        """Whether `other` has this shape and replication and places every element (and replica)
        in the same thread and register slot."""
        if not isinstance(other, Fragment):
            raise TypeError(f"Fragment.is_equal: expected a T.Fragment, got {type(other).__name__}")
        return ([int(a) for a in self.shape] == [int(b) for b in other.shape]
                and self.replicate_size == other.replicate_size
                and bool(self.index_map.is_equivalent_to(other.index_map)))

    def get_input_shape(self) -> list:
        """The fragment's shape."""
        return list(self.shape)

    def get_thread_size(self) -> int:
        """How many threads the fragment spans."""
        return self.extents()[0]

    # -- TileLang's layout algebra (Fragment.repeat / replicate): a block's layout built
    # from an instruction's, as its `plot_layout` examples do

    def _place(self, idx: Sequence[Any], rep: Any) -> list:
        """(thread, slot) of element `idx`, replica `rep`."""
        return list(self.index_map.map_indices([*idx, rep]))

    def extents(self) -> tuple[int, int]:
        """(threads, slots): how many threads the fragment spans and registers each holds
        (one more than the largest thread / slot any element or replica maps to)."""
        from tvm.sym import Analyzer

        analyzer = Analyzer()
        inputs = self.index_map.initial_indices
        for var, extent in zip(inputs, (*self.shape, self.replicate_size)):
            analyzer.bind(var, ir.Range.from_min_extent(0, int(extent)))
        thread, slot = self.index_map.final_indices
        return (int(analyzer.const_int_bound(thread).max_value) + 1,
                int(analyzer.const_int_bound(slot).max_value) + 1)

    def repeat(self, repeats: Sequence[int], repeat_on_thread: bool = False,
               lower_dim_first: bool = True) -> "Fragment":
        """This layout tiled `repeats[d]` times along each dim d. Copy number `r` (the tile's
        position, the last dim counting fastest when `lower_dim_first`, the first otherwise)
        goes to threads `r * threads` and up (`repeat_on_thread`) or to register slots
        `r * slots` and up of the same threads."""
        ndim = len(self.shape)
        if len(repeats) != ndim:
            raise ValueError(f"Fragment.repeat: {len(repeats)} repeats for a {ndim}-D fragment of shape {self.shape}")
        threads, slots = self.extents()
        order = range(ndim - 1, -1, -1) if lower_dim_first else range(ndim)

        def forward(*args):
            idx, rep = args[:ndim], (args[ndim] if self.replicate_size > 1 else 0)
            copy, stride = 0, 1
            for d in order:
                copy = copy + stride * (idx[d] // self.shape[d])
                stride *= int(repeats[d])
            thread, slot = self._place([i % e for i, e in zip(idx, self.shape)], rep)
            return [thread + threads * copy, slot] if repeat_on_thread else [thread, slot + slots * copy]

        shape = [e * int(r) for e, r in zip(self.shape, repeats)]
        return Fragment(shape, forward_fn=forward, replicate=self.replicate_size)

    def replicate(self, times: int) -> "Fragment":
        """This layout held `times` times over: copy `c` by threads `c * threads` and up."""
        if int(times) < 1:
            raise ValueError(f"Fragment.replicate: times must be at least 1, got {times}")
        threads, _ = self.extents()
        ndim, before = len(self.shape), self.replicate_size

        def forward(*args):
            idx, rep = args[:ndim], args[ndim]
            thread, slot = self._place(idx, rep % before)
            return [thread + threads * (rep // before), slot]

        return Fragment(self.shape, forward_fn=forward, replicate=before * int(times))

    def __repr__(self) -> str:
        threads, slots = self.extents()
        return (f"Fragment(shape={list(self.shape)}, threads={threads}, slots per thread={slots}, "
                f"replicate={self.replicate_size})")


_INPUT_VARS: dict = {}


def _input_var(k: int) -> tirx.Var:
    """The k-th canonical input variable (int64, like the layouts' own)."""
    if k not in _INPUT_VARS:
        _INPUT_VARS[k] = tirx.Var(f"_i{k}", "int64")
    return _INPUT_VARS[k]


def _analyzer(variables: Sequence[Any], extents: Sequence[Any]):
    from tvm.sym import Analyzer

    analyzer = Analyzer()
    for var, extent in zip(variables, extents):
        analyzer.bind(var, ir.Range.from_min_extent(tirx.const(0, var.ty.dtype), tirx.const(int(extent), var.ty.dtype)))
    return analyzer


def _simplify(expr: Any) -> Any:
    from tvm.sym import Analyzer

    return Analyzer().simplify(expr)


def _substitute(expr: Any, mapping: dict) -> Any:
    return tvm_ffi.structural_map(expr, (((tirx.Var,), lambda v: mapping.get(v, v)),))


def _output_extents(index_map: IndexMap, shape: Sequence[Any]) -> list:
    analyzer = _analyzer(index_map.initial_indices, shape)
    return [int(analyzer.const_int_bound(e).max_value) + 1 for e in index_map.final_indices]


def _one_slot_per_thread(shape, forward_thread_fn, replicate: int, unused: list) -> bool:
    """Whether (thread, default slot) differs for every two elements of one replica, evaluated
    over the whole tile with NumPy index grids (the thread functions TileLang programs write are
    integer arithmetic on their indices)."""
    import numpy as np

    grids = np.meshgrid(*[np.arange(int(e)) for e in shape], indexing="ij")
    try:
        for r in range(replicate):
            thread = forward_thread_fn(*grids, r) if replicate > 1 else forward_thread_fn(*grids)
            thread = np.broadcast_to(np.asarray(thread, dtype=np.int64), grids[0].shape)
            slot = np.zeros(grids[0].shape, dtype=np.int64)
            for k in unused:
                slot = slot * int(shape[k]) + grids[k]
            pairs = np.stack([thread.ravel(), slot.ravel()], axis=1)
            if len(np.unique(pairs, axis=0)) != pairs.shape[0]:
                return False
    except (TypeError, ValueError, AttributeError):
        return False  # not plain arithmetic: the caller asks for forward_index_fn
    return True


def _unused_index_fn(shape: Sequence[Any], forward_thread_fn: Callable[..., Any], replicate: int) -> Callable:
    """TileLang's default register slot of a fragment given by its thread function alone: the
    row-major position among the indices the thread does not read. Checked over the tile: where
    two elements would share a thread and a slot, an error asking for `forward_index_fn`."""
    ndim = len(shape)
    variables = [tirx.Var(f"i{k}", "int32") for k in range(ndim)]
    rep = tirx.Var("rep", "int32")
    thread = forward_thread_fn(*variables, rep) if replicate > 1 else forward_thread_fn(*variables)
    thread = tirx.const(thread, "int32") if isinstance(thread, int) else thread
    used: list = []
    tvm_ffi.structural_walk(thread, (((tirx.Var,), used.append),))
    unused = [k for k, v in enumerate(variables) if not any(v.same_as(u) for u in used)]
    if not _one_slot_per_thread(shape, forward_thread_fn, replicate, unused):
        raise ValueError(
            f"T.Fragment: with thread {thread}, two elements would share a thread and a register slot "
            f"(the slot defaults to the position among the indices the thread does not read: "
            f"{[f'i{k}' for k in unused]}); give forward_index_fn")

    def index(*idx):
        slot = 0
        for k in unused:
            slot = slot * int(shape[k]) + idx[k]
        return slot

    return index


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
            frames.append(_builder.attr(tirx.IntImm("int32", layout.replicate_size), ATTR_FRAGMENT_REPLICATE, buffer))
    if not frames:
        return None
    if len(frames) == 1:
        return frames[0]
    return _builder_utils._FrameScope(frames)  # pylint: disable=protected-access
