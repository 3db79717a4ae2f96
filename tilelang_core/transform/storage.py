"""plan_storage: the block's shared memory against the target's budget.

Before: allocations in scope `shared.dyn` / `shared` anywhere in the kernel.
After: unchanged IR; `ctx.facts["shared_bytes"]` holds their total (each rounded up to 16
bytes, the way the code generator packs them). A kernel over the target's opt-in limit fails
here with the sizes of its buffers, not in the driver at launch.
"""
from __future__ import annotations

from tvm import tirx as tir

from ..ir import dtype_bytes, source_of
from .errors import CapabilityError
from .irutil import walk

__all__ = ["plan_storage", "buffer_bytes", "SHARED_SCOPES"]

SHARED_SCOPES = ("shared", "shared.dyn")


def buffer_bytes(buf: tir.Buffer) -> int | None:
    total = 1
    for dim in buf.shape:
        if not isinstance(dim, tir.IntImm):
            return None
        total *= int(dim)
    return total * dtype_bytes(buf.dtype)


def plan_storage(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    sizes: list[tuple[str, int]] = []

    def visit(node):
        if isinstance(node, tir.AllocBuffer) and node.buffer.scope() in SHARED_SCOPES:
            nbytes = buffer_bytes(node.buffer)
            if nbytes is None:
                raise CapabilityError(f"shared buffer {node.buffer.name} needs a constant shape, got {list(node.buffer.shape)}",
                                      source_of(node))
            sizes.append((node.buffer.name, (nbytes + 15) // 16 * 16, source_of(node)))

    walk(func.body, visit, (tir.AllocBuffer,))
    total = sum(n for _, n, _ in sizes)
    ctx.facts["shared_bytes"] = total
    limit = ctx.caps.shared_memory_optin
    if total > limit:
        detail = ", ".join(f"{name} {n} B" for name, n, _ in sizes)
        largest = max(sizes, key=lambda item: item[1])
        raise CapabilityError(
            f"the kernel needs {total} bytes of shared memory ({detail}) but {ctx.target} allows "
            f"{limit} per block (capability shared_memory_optin); use smaller tiles or fewer stages "
            f"(the largest buffer, {largest[0]}, is allocated here)", largest[2])
    return func


