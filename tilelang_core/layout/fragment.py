"""`FragmentLayout` (where a fragment's elements live in registers) and `FragmentLayouts`
(the layouts of one kernel's fragments, by buffer)."""
from __future__ import annotations

import math
from typing import Callable, Sequence

__all__ = ["FragmentLayout", "FragmentLayouts"]


class FragmentLayout:
    """Where each element of a fragment lives in the registers of a block.

    Element `idx` (one index per dim of `shape`) is register `slot` of thread `thread`:
    `(thread, slot) = forward(*idx)` and `idx = inverse(thread, slot)`. Every thread of the
    block holds exactly `slots` elements and every element is held by exactly one thread
    (`threads * slots == prod(shape)`). Both functions take Python ints and TIR expressions
    alike: write them with `+ - * // %` and no Python branching on their arguments.

    `key` names the mapping: layouts with equal keys, shapes, thread and slot counts are the
    same layout, so two ops that impose equal layouts on one fragment agree.
    """

    def __init__(self, key: str, shape: Sequence[int], threads: int, slots: int,
                 forward: Callable, inverse: Callable) -> None:
        self.key = str(key)
        self.shape = tuple(int(d) for d in shape)
        self.threads = int(threads)
        self.slots = int(slots)
        self.forward = forward
        self.inverse = inverse
        if self.threads * self.slots != math.prod(self.shape):
            raise ValueError(f"fragment layout {self.key}: {self.threads} threads x {self.slots} slots "
                             f"!= {math.prod(self.shape)} elements of shape {self.shape}")

    def identity(self) -> tuple:
        return (self.key, self.shape, self.threads, self.slots)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FragmentLayout) and self.identity() == other.identity()

    def __hash__(self) -> int:
        return hash(self.identity())

    def __repr__(self) -> str:
        return f"FragmentLayout({self.key}, shape={self.shape}, threads={self.threads}, slots={self.slots})"

    def check(self) -> None:
        """Raise ValueError unless `forward` and `inverse` are inverse bijections between the
        elements and the (thread, slot) pairs (evaluated on Python ints; for tests)."""
        seen = set()
        for thread in range(self.threads):
            for slot in range(self.slots):
                idx = tuple(int(i) for i in self.inverse(thread, slot))
                if len(idx) != len(self.shape) or not all(0 <= i < d for i, d in zip(idx, self.shape)):
                    raise ValueError(f"{self}: inverse({thread}, {slot}) = {idx} lies outside the shape")
                if idx in seen:
                    raise ValueError(f"{self}: element {idx} is held twice")
                seen.add(idx)
                back = tuple(int(v) for v in self.forward(*idx))
                if back != (thread, slot):
                    raise ValueError(f"{self}: forward{idx} = {back}, expected {(thread, slot)}")


class FragmentLayouts:
    """The layouts imposed on one kernel's fragments, by buffer (first imposed wins), and the
    per-thread register array of each (`register_buffer`), shared by every pass."""

    def __init__(self) -> None:
        self._layouts: dict[int, tuple[object, FragmentLayout]] = {}
        self._registers: dict[int, object] = {}

    @staticmethod
    def _key(buffer) -> int:
        return buffer.__chandle__()

    def impose(self, buffer, layout: FragmentLayout) -> bool:
        """Record `layout` for `buffer`; False (and nothing recorded) when another layout was
        imposed on it before."""
        held = self._layouts.get(self._key(buffer))
        if held is not None:
            return held[1] == layout
        self._layouts[self._key(buffer)] = (buffer, layout)
        return True

    def get(self, buffer) -> FragmentLayout | None:
        held = self._layouts.get(self._key(buffer))
        return held[1] if held is not None else None

    def register_buffer(self, buffer):
        """The per-thread array (`layout.slots` elements, scope "local") that holds `buffer`'s
        elements in its layout; the same buffer object on every call."""
        from tvm import tirx

        key = self._key(buffer)
        if key not in self._registers:
            layout = self.get(buffer)
            if layout is None:
                raise KeyError(f"fragment {buffer.name} has no imposed layout")
            self._registers[key] = tirx.decl_buffer((layout.slots,), buffer.dtype,
                                                    name=f"{buffer.name}_reg", scope="local")
        return self._registers[key]

    def has_register_buffer(self, buffer) -> bool:
        """Whether a lowering has asked for `buffer`'s register array."""
        return self._key(buffer) in self._registers

    def __contains__(self, buffer) -> bool:
        return self._key(buffer) in self._layouts

    def __len__(self) -> int:
        return len(self._layouts)

    def items(self):
        return [(buf, layout) for buf, layout in self._layouts.values()]
