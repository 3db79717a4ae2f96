"""plan_storage: the block's shared memory: lifetimes, and the total against the budget.

Before: allocations in scope `shared.dyn` / `shared` anywhere in the kernel.
After: the PrimFunc carries `ATTR_SHARED_LIFETIMES` ({buffer name: [first, last]}): the
top-level statements of the kernel body (under the launch attributes, the `T.Kernel` keywords
and `T.annotate_layout`'s layouts) that touch each dynamic shared buffer. Buffers whose lifetimes do not overlap may share bytes (e.g. an
epilogue's staging tile and a main loop's pipeline stages); the code generator places them
with `place_buffers`. `ctx.facts["shared_bytes"]` holds the resulting total. The core's
barrier pass puts a barrier between a top-level statement that reads shared memory and a
later one that writes it, so reuse needs no barrier of its own. A kernel over the target's
opt-in limit fails here with the sizes of its buffers, not in the driver at launch.
`ctx.facts["shared_plan"]` records the placement for `Kernel.explain()`; TileLang's pass config
`tl.disable_shared_memory_reuse` gives every buffer bytes of its own.
"""
from __future__ import annotations

from tvm import tirx as tir

from ..ir import dtype_bytes, source_of
from ..ir.constants import ATTR_FRAGMENT_REPLICATE, ATTR_KERNEL_HINTS, ATTR_LAYOUT
from .errors import CapabilityError
from .irutil import walk

__all__ = ["plan_storage", "buffer_bytes", "place_buffers", "shared_bytes", "map_top_level", "SHARED_SCOPES", "ATTR_SHARED_LIFETIMES"]

ATTR_SHARED_LIFETIMES = "tl.shared_lifetimes"
ALIGN = 16


def place_buffers(items, align: int = ALIGN) -> tuple[dict, int]:
    """Offsets for `items` = [(key, bytes, first, last)] or [(key, bytes, first, last, align)]:
    buffers whose [first, last] ranges overlap get disjoint bytes (first fit, in the given
    order, so buffers that all overlap pack one after the other), each at a multiple of its own
    alignment (the fifth element) or of `align`; returns ({key: offset}, total rounded up to
    `align`)."""
    placed: list[tuple[int, int, int, int]] = []  # offset, end, first, last
    offsets = {}
    for key, size, first, last, *own in items:
        step = own[0] if own else align
        offset = 0
        for lo, hi, f, l in sorted(placed):
            if f > last or l < first:
                continue
            if offset + size <= lo:
                break
            offset = max(offset, (hi + step - 1) // step * step)
        offsets[key] = offset
        placed.append((offset, offset + size, first, last))
    total = max((hi for _, hi, _, _ in placed), default=0)
    return offsets, (total + align - 1) // align * align


# Attributes that wrap the rest of the kernel body without changing where anything runs: the
# launch, the `T.Kernel` keywords and `T.annotate_layout`'s layouts. The kernel's top-level
# statements are under these.
_WRAPPERS = ("thread_extent", ATTR_KERNEL_HINTS, ATTR_LAYOUT, ATTR_FRAGMENT_REPLICATE)


def _wraps(stmt) -> bool:
    return isinstance(stmt, tir.AttrStmt) and stmt.attr_key in _WRAPPERS


def map_top_level(body, rewrite):
    """`body` with the list of the kernel's top-level statements replaced by `rewrite(list)`.
    Lifetimes count in these statements: a pass that adds a shared buffer at the top level
    uses this to place it where `plan_storage` will count it."""
    if _wraps(body):
        return tir.AttrStmt(body.node, body.attr_key, body.value, map_top_level(body.body, rewrite))
    new = rewrite(list(body.seq) if isinstance(body, tir.SeqStmt) else [body])
    return new[0] if len(new) == 1 else tir.SeqStmt(new)


def _top_level(body) -> list:
    """The kernel's top-level statements, the statements of a wrapper among them (a layout
    annotation after the allocations) counted as top-level too."""
    while _wraps(body):
        body = body.body
    out = []
    for stmt in (list(body.seq) if isinstance(body, tir.SeqStmt) else [body]):
        out.extend(_top_level(stmt) if _wraps(stmt) else [stmt])
    return out


def _lifetimes(func: tir.PrimFunc) -> dict[int, tuple[int, int]]:
    """buffer handle -> (first, last) top-level statement that allocates or touches it."""
    from tvm import ir as _ir

    spans: dict[int, tuple[int, int]] = {}
    for index, stmt in enumerate(_top_level(func.body)):
        if isinstance(stmt, tir.AllocBuffer):
            continue
        seen = set()

        def visit(node):
            buf = None
            if isinstance(node, (tir.BufferStore, tir.AllocBuffer)):
                buf = node.buffer
            elif isinstance(node, _ir.TensorLoad):
                buf = node.source
            elif isinstance(node, _ir.Call) and isinstance(node.op, _ir.Op) and node.op.name == "tirx.buffer_data":
                buf = node.args[0]
            if buf is not None:
                seen.add(buf.__chandle__())

        walk(stmt, visit)
        for key in seen:
            first, last = spans.get(key, (index, index))
            spans[key] = (min(first, index), max(last, index))
    return spans

SHARED_SCOPES = ("shared", "shared.dyn")


def buffer_bytes(buf: tir.Buffer) -> int | None:
    total = 1
    for dim in buf.shape:
        if not isinstance(dim, tir.IntImm):
            return None
        total *= int(dim)
    return total * dtype_bytes(buf.dtype)


def _plan(func: tir.PrimFunc, reuse: bool = True) -> tuple[int, list, dict, dict]:
    """(total bytes, [(name, bytes, source)] per shared allocation, {name: [first, last]} of the
    dynamic ones, {name: offset}): the placement `plan_storage` checks and the code generator
    follows. Without `reuse` every buffer is live for the whole kernel."""
    sizes: list[tuple[str, int]] = []
    buffers = []

    def visit(node):
        if isinstance(node, tir.AllocBuffer) and node.buffer.scope() in SHARED_SCOPES:
            nbytes = buffer_bytes(node.buffer)
            if nbytes is None:
                raise CapabilityError(f"shared buffer {node.buffer.name} needs a constant shape, got {list(node.buffer.shape)}",
                                      source_of(node))
            sizes.append((node.buffer.name, (nbytes + 15) // 16 * 16, source_of(node)))
            buffers.append(node.buffer)

    walk(func.body, visit, (tir.AllocBuffer,))
    spans = _lifetimes(func)
    names = [b.name for b in buffers]
    lifetimes = {}
    everything = (0, 1 << 30)
    if len(set(names)) == len(names):  # the printer finds buffers by name
        lifetimes = {b.name: list(spans.get(b.__chandle__(), everything) if reuse else everything)
                     for b in buffers if b.scope() == "shared.dyn"}
    items = [(name, n, *lifetimes.get(name, everything)) for name, n, _ in sizes]
    offsets, total = place_buffers(items)
    return total, sizes, lifetimes, offsets


def shared_bytes(func: tir.PrimFunc) -> int:
    """The bytes of shared memory `func`'s block needs as `plan_storage` will count them:
    buffers whose top-level lifetimes do not overlap share bytes. A pass that adds a shared
    buffer asks this first, to stay within the target's `shared_memory_optin`."""
    return _plan(func)[0]


def describe_plan(sizes: list, lifetimes: dict, offsets: dict) -> list[dict]:
    """The plan as `Kernel.explain()` reports it: per shared buffer its bytes, its offset and
    the top-level statements it is live in (None: the whole kernel)."""
    out = []
    for name, nbytes, _ in sizes:
        span = lifetimes.get(name)
        live = None if span is None or int(span[1]) >= 1 << 30 else [int(span[0]), int(span[1])]
        out.append({"buffer": name, "bytes": int(nbytes), "offset": int(offsets.get(name, 0)), "live": live})
    return out


def _fragments_in_shared(ctx, names: set) -> str:
    """The fragments among `names` that layout inference left in shared memory, with why (a
    sentence for the budget error: often the reason the budget is exceeded)."""
    layouts = ctx.facts.get("fragment_layouts")
    if layouts is None:
        return ""
    notes = [f"{d.buffer.name}: {d.reason}" for d in layouts.decisions()
             if not d.in_registers and d.buffer.name in names and d.reason]
    return ("; fragments in shared memory instead of registers: " + "; ".join(notes)) if notes else ""


def plan_storage(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    reuse = not getattr(ctx.options, "disable_shared_memory_reuse", False)
    total, sizes, lifetimes, offsets = _plan(func, reuse)
    ctx.facts["shared_bytes"] = total
    ctx.facts["shared_plan"] = {"total": total, "buffers": describe_plan(sizes, lifetimes, offsets)}
    limit = ctx.caps.shared_memory_optin
    if total > limit:
        detail = ", ".join(f"{name} {n} B" for name, n, _ in sizes)
        largest = max(sizes, key=lambda item: item[1])
        moved = _fragments_in_shared(ctx, {name for name, _, _ in sizes})
        raise CapabilityError(
            f"the kernel needs {total} bytes of shared memory ({detail}) but {ctx.target} allows "
            f"{limit} per block (capability shared_memory_optin); use smaller tiles or fewer stages "
            f"(the largest buffer, {largest[0]}, is allocated here){moved}", largest[2])
    if lifetimes:
        func = func.with_attr(ATTR_SHARED_LIFETIMES, lifetimes)
    return func
