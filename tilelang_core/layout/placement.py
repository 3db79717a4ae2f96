"""`FragmentLayouts`: what layout inference decided for one kernel's fragments.

For every fragment (`T.alloc_fragment`) of a kernel on a SIMT target: its layout (a
`Fragment`), where it lives (the block's registers, or shared memory when no layout serves all
its uses), who decided it (an op and its source line) and, for a fragment in shared memory,
why. Tile-op lowerings read it (`LowerContext.layout_of`, `register_buffer`), the SIMT
placement partitions loops by it, and `Kernel.explain()` prints its report.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .fragment_model import Fragment

__all__ = ["FragmentLayouts", "FragmentDecision"]


@dataclass
class FragmentDecision:
    """One fragment's outcome: `layout` (None: none found), `in_registers`, the op that gave
    the layout (`origin`, e.g. "T.gemm at line 40") and, when in shared memory, `reason`."""

    buffer: object
    layout: Fragment | None = None
    origin: str = ""
    in_registers: bool = True
    reason: str = ""
    pinned: bool = False  # a strict constraint (a matrix instruction, the user's annotation)
    by_user: bool = False  # the user's T.annotate_layout with a T.Fragment
    notes: list = field(default_factory=list)

    def entry(self) -> dict:
        shape = tuple(int(d) for d in self.buffer.shape) if all(hasattr(d, "value") for d in self.buffer.shape) \
            else tuple(str(d) for d in self.buffer.shape)
        return {
            "fragment": self.buffer.name,
            "shape": shape,
            "dtype": str(self.buffer.dtype),
            "layout": self.layout.name if self.layout is not None else None,
            "threads": self.layout.threads if self.layout is not None else None,
            "registers_per_thread": self.layout.slots if self.layout is not None and self.in_registers else 0,
            "replicate": self.layout.replicate if self.layout is not None else None,
            "placement": "registers" if self.in_registers else "shared",
            "origin": self.origin,
            "reason": self.reason,
            "notes": list(self.notes),
        }


class FragmentLayouts:
    """The layout decisions of one kernel's fragments, by buffer, and the per-thread register
    array of each (`register_buffer`), shared by every pass."""

    def __init__(self) -> None:
        self._decisions: dict[int, FragmentDecision] = {}
        self._registers: dict[int, object] = {}
        self._source: dict[int, object] = {}  # a view's key -> the fragment it views
        self._views: dict[int, list] = {}  # a fragment's key -> its views

    def link(self, view, source) -> None:
        """Declare `view` (`T.reshape` / `T.view` of the fragment `source`, same dtype and
        element count) a second name for `source`'s registers: a layout or a placement given
        to either is the other's too (the layout reshaped), and `register_buffer(view)` is
        `source`'s register array — a row-major reshape keeps every element in its slot."""
        root = self._source.get(self._key(source), source)
        self._source[self._key(view)] = root
        self._views.setdefault(self._key(root), []).append(view)
        self._sync(root)

    def source_of(self, buffer):
        """The fragment `buffer` is a view of, or `buffer` itself."""
        return self._source.get(self._key(buffer), buffer)

    def is_view(self, buffer) -> bool:
        return self._key(buffer) in self._source

    def _sync(self, root) -> None:
        d = self.decision(root)
        for view in self._views.get(self._key(root), ()):
            v = self.decision(view)
            v.layout = d.layout.reshape(tuple(int(x) for x in view.shape)) if d.layout is not None else None
            v.origin, v.pinned, v.by_user = d.origin, d.pinned, d.by_user
            v.in_registers, v.reason = d.in_registers, d.reason

    @staticmethod
    def _key(buffer) -> int:
        return buffer.__chandle__()

    def decision(self, buffer) -> FragmentDecision:
        key = self._key(buffer)
        if key not in self._decisions:
            self._decisions[key] = FragmentDecision(buffer)
        return self._decisions[key]

    def impose(self, buffer, layout: Fragment, origin: str = "", pinned: bool = False) -> bool:
        """Record `layout` for `buffer`; False (nothing changes) when it has another one."""
        root = self.source_of(buffer)
        if root is not buffer:
            layout = layout.reshape(tuple(int(x) for x in root.shape))
        d = self.decision(root)
        if d.layout is not None:
            if d.layout != layout:
                d.notes.append(f"{origin or 'an op'} asked for {layout.name}; kept {d.layout.name} from {d.origin}")
                return False
            return True
        d.layout, d.origin, d.pinned = layout, origin, pinned
        self._sync(root)
        return True

    def move_to_shared(self, buffer, reason: str) -> None:
        root = self.source_of(buffer)
        d = self.decision(root)
        if d.in_registers:
            d.in_registers, d.reason = False, reason if root is buffer else f"{reason} (through its view {buffer.name})"
            self._sync(root)

    def get(self, buffer) -> Fragment | None:
        """The layout decided for `buffer` (also when it was then moved to shared memory: a
        lowering that writes its registers is staged through shared memory)."""
        d = self._decisions.get(self._key(buffer))
        return d.layout if d is not None else None

    def in_registers(self, buffer) -> bool:
        d = self._decisions.get(self._key(buffer))
        return d is not None and d.in_registers and d.layout is not None

    def register_buffer(self, buffer):
        """The per-thread array (`layout.slots` elements, scope "local") that holds `buffer`'s
        elements in its layout; the same buffer object on every call."""
        from tvm import tirx

        buffer = self.source_of(buffer)
        key = self._key(buffer)
        if key not in self._registers:
            layout = self.get(buffer)
            if layout is None:
                raise KeyError(f"fragment {buffer.name} has no layout")
            self._registers[key] = tirx.decl_buffer((layout.slots,), buffer.dtype,
                                                    name=f"{buffer.name}_reg", scope="local")
        return self._registers[key]

    def has_register_buffer(self, buffer) -> bool:
        """Whether a lowering has asked for `buffer`'s register array."""
        return self._key(self.source_of(buffer)) in self._registers

    def __contains__(self, buffer) -> bool:
        d = self._decisions.get(self._key(buffer))
        return d is not None and d.layout is not None

    def __len__(self) -> int:
        return sum(1 for d in self.decisions() if d.layout is not None)

    def items(self):
        """(buffer, layout) of every fragment that has a layout (views left out: they are
        their source's registers)."""
        return [(d.buffer, d.layout) for d in self.decisions() if d.layout is not None]

    def decisions(self) -> list[FragmentDecision]:
        """The decisions of the allocated fragments (views left out)."""
        return [d for k, d in self._decisions.items() if k not in self._source]

    def report(self) -> list[dict]:
        """One entry per fragment: name, shape, dtype, layout, registers per thread,
        replication, placement, origin and reason (see `FragmentDecision.entry`)."""
        return [d.entry() for d in self.decisions()]
