"""`Fragment`: where each element of a block-wide register tile lives, with replication.

A fragment layout maps the block's registers to the tile: slot `s` of thread `t` holds element
`element_of(t, s)`. Every thread of the layout's thread range holds `slots` registers, so the
layout has `threads * slots` registers for `prod(shape)` elements: each element is held by
`replicate = threads * slots / prod(shape)` threads (a row maximum that every thread of the row
needs is replicated over them). An element has the same slot in every thread that holds it.

`element_of` is written once with `+ - * // %` and `xor` (no Python branching on its
arguments), so it evaluates on Python ints, NumPy arrays (tables, checks, drawings) and TIR
expressions (code). Everything else is derived from its table: the holders of an element,
its slot, equality of two layouts (the same registers hold the same elements, whatever the
functions look like), projections and compositions.

TileLang users know the forward view (`forward_thread(idx, rep)`, `forward_index(idx)`); it is
here too, read from the table.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

__all__ = ["Fragment", "FragmentError", "xor", "cyclic_fragment", "replicated_fragment", "row_fragment"]


class FragmentError(ValueError):
    """A fragment layout that is not one (an element held twice in a thread, a register that
    points outside the tile, replicas in different slots, ...)."""


def xor(a, b):
    """a ^ b for Python ints, NumPy arrays and TIR expressions."""
    if isinstance(a, (int, np.integer, np.ndarray)) and isinstance(b, (int, np.integer, np.ndarray)):
        return np.bitwise_xor(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else int(a) ^ int(b)
    from tvm import tirx

    return tirx.bitwise_xor(a, b)


def is_symbolic(x) -> bool:
    return not isinstance(x, (int, np.integer, np.ndarray))


class Fragment:
    """A register layout of a tile of `shape` over `threads` threads with `slots` registers
    each (see the module docstring). `name` is for reports; it does not decide equality.

    `element_of(thread, slot)` returns one index per dim. A layout derived from another
    (`project`, `replicate`, `repeat`) may accept only integer slots; `symbolic_slots` says
    whether `element_of` takes a TIR slot variable too.
    """

    def __init__(self, shape: Sequence[int], threads: int, slots: int,
                 element_of: Callable, name: str = "fragment", *, symbolic_slots: bool = True) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.threads = int(threads)
        self.slots = int(slots)
        self._element_of = element_of
        self.name = str(name)
        self.symbolic_slots = symbolic_slots
        total = math.prod(self.shape)
        if self.threads <= 0 or self.slots <= 0 or (self.threads * self.slots) % max(total, 1):
            raise FragmentError(f"{self.name}: {self.threads} threads x {self.slots} slots do not hold the "
                                f"{total} elements of shape {self.shape} a whole number of times")
        self._table = None
        self._slot_table = None
        self._holders = None
        self._hash = None

    # -- the map --------------------------------------------------------------------------

    @property
    def replicate(self) -> int:
        """How many threads hold each element."""
        return self.threads * self.slots // math.prod(self.shape)

    @property
    def fully_replicated(self) -> bool:
        """Whether every thread holds the whole tile (TileLang's `IsCompletedReplicated`)."""
        return self.slots == math.prod(self.shape)

    def element_of(self, thread, slot) -> tuple:
        """The element held in `slot` of `thread` (ints, NumPy arrays or TIR expressions)."""
        if is_symbolic(slot) and not self.symbolic_slots:
            raise FragmentError(f"{self.name}: this derived layout takes constant slots only")
        idx = self._element_of(thread, slot)
        if not isinstance(idx, (tuple, list)):
            idx = (idx,)
        if len(idx) != len(self.shape):
            raise FragmentError(f"{self.name}: element_of returned {len(idx)} indices for a {len(self.shape)}-d tile")
        return tuple(idx)

    def table(self) -> np.ndarray:
        """`table[t, s]` = the element (one index per dim) in slot `s` of thread `t`."""
        if self._table is None:
            t = np.arange(self.threads, dtype=np.int64)[:, None]
            s = np.arange(self.slots, dtype=np.int64)[None, :]
            idx = self.element_of(t, s)
            cols = [np.broadcast_to(np.asarray(i, dtype=np.int64), (self.threads, self.slots)) for i in idx]
            self._table = np.stack(cols, axis=-1) if cols else np.zeros((self.threads, self.slots, 0), np.int64)
        return self._table

    def _flat(self, table: np.ndarray) -> np.ndarray:
        if not self.shape:
            return np.zeros(table.shape[:-1], np.int64)
        return np.ravel_multi_index(tuple(np.moveaxis(table, -1, 0)), self.shape, mode="wrap")

    def _derive(self) -> None:
        """Holder and slot tables; raises FragmentError unless this is a fragment layout."""
        if self._holders is not None:
            return
        table = self.table()
        inside = np.all((table >= 0) & (table < np.array(self.shape or (1,), np.int64)[: table.shape[-1]]), axis=-1)
        if not inside.all():
            t, s = map(int, np.argwhere(~inside)[0])
            raise FragmentError(f"{self.name}: slot {s} of thread {t} holds {tuple(table[t, s])}, outside shape {self.shape}")
        flat = self._flat(table)
        total = max(math.prod(self.shape), 1)
        for t in range(self.threads):
            row = flat[t]
            if len(np.unique(row)) != self.slots:
                vals, counts = np.unique(row, return_counts=True)
                dup = np.unravel_index(int(vals[counts > 1][0]), self.shape) if self.shape else ()
                raise FragmentError(f"{self.name}: thread {t} holds element {tuple(int(i) for i in dup)} in two slots")
        slot_of = np.full(total, -1, np.int64)
        holders = np.full((total, self.replicate), -1, np.int64)
        filled = np.zeros(total, np.int64)
        order = np.argsort(flat, axis=None, kind="stable")
        for pos in order:
            t, s = divmod(int(pos), self.slots)
            e = int(flat[t, s])
            if slot_of[e] == -1:
                slot_of[e] = s
            elif slot_of[e] != s:
                raise FragmentError(f"{self.name}: element {self._unflat(e)} is in slot {slot_of[e]} of one thread and "
                                    f"slot {s} of thread {t}; replicas must share a slot")
            if filled[e] >= self.replicate:
                raise FragmentError(f"{self.name}: element {self._unflat(e)} is held by more than {self.replicate} threads")
            holders[e, filled[e]] = t
            filled[e] += 1
        if (filled != self.replicate).any():
            e = int(np.argmin(filled))
            raise FragmentError(f"{self.name}: element {self._unflat(e)} is held by {int(filled[e])} threads, "
                                f"expected {self.replicate}")
        self._slot_table, self._holders = slot_of, holders

    def _unflat(self, e: int) -> tuple:
        return tuple(int(i) for i in np.unravel_index(e, self.shape)) if self.shape else ()

    def check(self) -> "Fragment":
        """Raise FragmentError unless every register holds an element of the tile, every
        element is held by `replicate` threads in one slot, and no thread holds an element
        twice; return self."""
        self._derive()
        return self

    def slot_of(self, *idx) -> int:
        """The slot that holds element `idx` (in each of its holders)."""
        self._derive()
        return int(self._slot_table[self._flat(np.array(idx, np.int64)[None])[0]])

    def holders(self, *idx) -> tuple[int, ...]:
        """The threads that hold element `idx`, ascending."""
        self._derive()
        return tuple(int(t) for t in self._holders[self._flat(np.array(idx, np.int64)[None])[0]])

    def forward_thread(self, *idx, rep: int = 0) -> int:
        """TileLang's name: the `rep`-th thread holding element `idx`."""
        return self.holders(*idx)[rep]

    def forward_index(self, *idx) -> int:
        """TileLang's name: the register slot of element `idx`."""
        return self.slot_of(*idx)

    def slot_table(self) -> np.ndarray:
        """`slot_table()[flat element]` = its slot."""
        self._derive()
        return self._slot_table

    def holder_table(self) -> np.ndarray:
        """`holder_table()[flat element]` = its holders, ascending."""
        self._derive()
        return self._holders

    # -- identity ---------------------------------------------------------------------------

    def same_registers(self, other: "Fragment") -> bool:
        """Whether both layouts put the same elements in the same registers."""
        return (isinstance(other, Fragment) and self.shape == other.shape and self.threads == other.threads
                and self.slots == other.slots and np.array_equal(self.table(), other.table()))

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Fragment) and self.same_registers(other))

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.shape, self.threads, self.slots, self.table().tobytes()))
        return self._hash

    def __repr__(self) -> str:
        rep = f", replicate={self.replicate}" if self.replicate > 1 else ""
        return f"Fragment({self.name}, shape={self.shape}, threads={self.threads}, slots={self.slots}{rep})"

    # -- algebra ----------------------------------------------------------------------------

    def replicate_over(self, copies: int) -> "Fragment":
        """The same layout held `copies` times by consecutive thread ranges: thread
        `t` holds what thread `t % threads` held."""
        base = self
        return Fragment(self.shape, self.threads * copies, self.slots,
                        lambda t, s: base.element_of(t % base.threads, s),
                        f"{self.name}.replicate({copies})", symbolic_slots=self.symbolic_slots)

    def repeat(self, copies: int, dim: int = 0, over: str = "threads") -> "Fragment":
        """The tile `copies` times along `dim`, copy `c` held by threads `c * threads ...`
        (`over="threads"`) or by slots `c * slots ...` of the same threads (`over="slots"`)."""
        base, n = self, self.shape[dim]
        shape = list(self.shape)
        shape[dim] *= copies

        def shifted(idx, c):
            return tuple(i + c * n if d == dim else i for d, i in enumerate(idx))

        if over == "threads":
            fn = lambda t, s: shifted(base.element_of(t % base.threads, s), t // base.threads)  # noqa: E731
            return Fragment(shape, self.threads * copies, self.slots, fn, f"{self.name}.repeat({copies},{dim})",
                            symbolic_slots=self.symbolic_slots)
        if over == "slots":
            fn = lambda t, s: shifted(base.element_of(t, s % base.slots), s // base.slots)  # noqa: E731
            return Fragment(shape, self.threads, self.slots * copies, fn, f"{self.name}.repeat({copies},{dim},slots)",
                            symbolic_slots=self.symbolic_slots)
        raise ValueError(f"repeat: over must be 'threads' or 'slots', got {over!r}")

    def reshape(self, shape: Sequence[int]) -> "Fragment":
        """The same registers seen as a tile of `shape` (same element count, row-major order
        kept, as `T.reshape` sees a fragment): slot `s` of thread `t` holds the element of
        `shape` whose row-major position is that of `element_of(t, s)` in `self.shape`."""
        shape = tuple(int(d) for d in shape)
        if math.prod(shape) != math.prod(self.shape):
            raise FragmentError(f"{self.name}: cannot reshape {self.shape} to {shape} (element counts differ)")
        if shape == self.shape:
            return self
        base = self

        def element_of(t, s):
            flat = 0
            for i, d in zip(base.element_of(t, s), base.shape):
                flat = flat * d + i
            return _unflatten(flat, shape)

        return Fragment(shape, self.threads, self.slots, element_of, f"{self.name}.reshape{shape}",
                        symbolic_slots=self.symbolic_slots)

    def permute(self, order: Sequence[int]) -> "Fragment":
        """The same registers with the dims reordered: dim `k` of the result is dim
        `order[k]` of self (`permute((1, 0))` is the transposed tile)."""
        order = [int(d) for d in order]
        if sorted(order) != list(range(len(self.shape))):
            raise FragmentError(f"{self.name}: {order} is not a permutation of the {len(self.shape)} dims")
        if order == sorted(order):
            return self
        base = self
        return Fragment(tuple(self.shape[d] for d in order), self.threads, self.slots,
                        lambda t, s: tuple(base.element_of(t, s)[d] for d in order),
                        f"{self.name}.permute{tuple(order)}", symbolic_slots=self.symbolic_slots)

    def project(self, dims: Sequence[int]) -> "Fragment":
        """The layout of the tile's `dims` (others dropped): a thread holds index `i` of the
        kept dims when it held any element with those indices, e.g. a row reduction's result,
        replicated over the threads that shared a row. Raises FragmentError when the threads
        would hold different numbers of kept elements or order them differently."""
        dims = list(dims)
        table = self.table()[:, :, dims]
        kept_shape = tuple(self.shape[d] for d in dims)
        flat = np.ravel_multi_index(tuple(np.moveaxis(table, -1, 0)), kept_shape) if dims else np.zeros(table.shape[:2], np.int64)
        firsts = []
        for t in range(self.threads):
            _, first = np.unique(flat[t], return_index=True)
            firsts.append(np.sort(first))
        count = len(firsts[0])
        if any(len(f) != count for f in firsts) or any(not np.array_equal(f, firsts[0]) for f in firsts):
            raise FragmentError(f"{self.name}: threads hold their elements of dims {dims} in different slots")
        src_slots = firsts[0].astype(np.int64)
        base = self

        def element_of(t, s):
            slot = _lookup(src_slots, s)
            idx = base.element_of(t, slot)
            return tuple(idx[d] for d in dims)

        affine = _affine_fit(src_slots)
        projected = Fragment(kept_shape, self.threads, count, element_of, f"{self.name}.project{tuple(dims)}",
                             symbolic_slots=affine is not None and self.symbolic_slots)
        projected.source_slots = src_slots  # slot s of the projection came from this slot of self
        projected.check()
        return projected

    def window(self, starts: Sequence[int], extents: Sequence[int]) -> "Fragment":
        """The layout of the sub-tile `[starts, starts + extents)` (e.g. 64 of an accumulator's
        256 columns): thread `t` holds the window's elements it held, in slot order; slot `s`
        of the window is slot `source_slots[s]` of self. Raises FragmentError unless every
        thread holds its window elements in the same slots of self."""
        starts, extents = [int(x) for x in starts], [int(x) for x in extents]
        if len(starts) != len(self.shape) or len(extents) != len(self.shape) or any(
                lo < 0 or n < 1 or lo + n > d for lo, n, d in zip(starts, extents, self.shape)):
            raise FragmentError(f"{self.name}: window {starts} + {extents} is not inside shape {self.shape}")
        table = self.table()
        lo, hi = np.array(starts, np.int64), np.array(starts, np.int64) + np.array(extents, np.int64)
        inside = np.all((table >= lo) & (table < hi), axis=-1) if self.shape else np.ones(table.shape[:2], bool)
        if not (inside == inside[:1]).all():
            raise FragmentError(f"{self.name}: threads hold the window {starts} + {extents} in different slots")
        src_slots = np.nonzero(inside[0])[0].astype(np.int64)
        if not len(src_slots):
            raise FragmentError(f"{self.name}: no thread holds the window {starts} + {extents}")
        base = self

        def element_of(t, s):
            idx = base.element_of(t, _lookup(src_slots, s))
            return tuple(i - o if o else i for i, o in zip(idx, starts))

        windowed = Fragment(extents, self.threads, len(src_slots), element_of,
                            f"{self.name}.window({tuple(starts)}, {tuple(extents)})",
                            symbolic_slots=_affine_fit(src_slots) is not None and self.symbolic_slots)
        windowed.source_slots = src_slots
        return windowed.check()

    def replica_bits(self) -> int | None:
        """The thread-index bits that tell the holders of an element apart, when the holders
        of every element are `t ^ m` for all `m` made of those bits (t the first holder);
        0 when nothing is replicated; None when replicas follow another pattern."""
        if self.replicate == 1:
            return 0
        holders = self.holder_table()
        first = holders[:, :1]
        diffs = np.bitwise_xor(holders, first)
        bits = int(np.bitwise_or.reduce(diffs, axis=None))
        if bin(bits).count("1") != int(math.log2(self.replicate)) or 2 ** bin(bits).count("1") != self.replicate:
            return None
        if ((first & bits) != 0).any():
            return None
        return bits

    # -- presentation ---------------------------------------------------------------------

    def draw(self, path, cell: int = 32):
        """A picture of this layout (".svg" or ".png"; see `tilelang_core.layout.plot`)."""
        from .plot import plot_layout

        return plot_layout(self, path, cell)

    def describe(self) -> str:
        rep = f", replicated x{self.replicate}" if self.replicate > 1 else ""
        return f"{self.name}: {self.slots} registers per thread over {self.threads} threads{rep}"


def _lookup(values: np.ndarray, s):
    """values[s] for an int or NumPy slot; for a TIR slot, the affine form of `values`."""
    if isinstance(s, (int, np.integer)):
        return int(values[int(s)])
    if isinstance(s, np.ndarray):
        return values[s]
    fit = _affine_fit(values)
    if fit is None:
        raise FragmentError("a derived layout was asked for a symbolic slot")
    a, b = fit
    return s * a + b if b else s * a


def _affine_fit(values: np.ndarray):
    if len(values) == 1:
        return (1, int(values[0]))
    a = int(values[1] - values[0])
    b = int(values[0])
    if np.array_equal(values, a * np.arange(len(values)) + b):
        return (a, b)
    return None


def cyclic_fragment(shape: Sequence[int], threads: int, vector: int = 1) -> Fragment | None:
    """Element `flat` (row-major) in chunks of `vector` consecutive elements dealt to the
    threads in turn: thread `t`, slot `s` holds flat element
    `((s // vector) * threads + t) * vector + s % vector`. None unless the tile is a whole
    number of rounds."""
    shape = tuple(int(d) for d in shape)
    total = math.prod(shape)
    if total % (threads * vector):
        return None
    slots = total // threads

    def element_of(t, s):
        return _unflatten(((s // vector) * threads + t) * vector + s % vector, shape)

    return Fragment(shape, threads, slots, element_of, f"cyclic[vec {vector}]")


def _unflatten(flat, shape: tuple) -> tuple:
    """Row-major indices of element `flat` of `shape` (ints, NumPy arrays or TIR)."""
    idx = []
    for d in reversed(shape[1:]):
        idx.append(flat % d)
        flat = flat // d
    idx.append(flat)
    return tuple(reversed(idx))


def replicated_fragment(shape: Sequence[int], threads: int) -> Fragment:
    """Every thread holds the whole tile, element `flat` (row-major) in slot `flat`: the
    layout of a fragment read or written outside `T.Parallel` (TileLang's fully replicated
    "floating" fragment), where each thread runs the code on its own copy."""
    shape = tuple(int(d) for d in shape)
    return Fragment(shape, threads, math.prod(shape), lambda t, s: _unflatten(s, shape), "replicated")


def row_fragment(m: int, n: int, threads: int, max_lanes: int, vector: int = 1) -> Fragment | None:
    """An (m, n) tile whose rows each lie in `lanes` consecutive threads (the most, up to
    `max_lanes`, for which rows divide evenly), each thread holding chunks of `vector`
    consecutive columns: thread `t` holds row `(s // per_row) * groups + t // lanes`, columns
    `((s % per_row) // vector * lanes + t % lanes) * vector + s % vector`. A row reduces
    inside its lanes; consecutive threads read consecutive chunks of a row."""
    lanes = max_lanes
    while lanes >= 1:
        if threads % lanes == 0 and n % (lanes * vector) == 0 and m % (threads // lanes) == 0:
            break
        lanes //= 2
    if lanes < 1:
        return None
    groups = threads // lanes
    per_row = n // lanes

    def element_of(t, s):
        row = (s // per_row) * groups + t // lanes
        col = (((s % per_row) // vector) * lanes + t % lanes) * vector + s % vector
        return row, col

    return Fragment((m, n), threads, m * n // threads, element_of, f"rows[{lanes} lanes, vec {vector}]")
