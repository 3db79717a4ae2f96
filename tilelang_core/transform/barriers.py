"""insert_barriers: block-wide barriers where threads exchange data through shared memory.

Before: thread-partitioned code with no barriers between a shared-memory write by some
threads and a read by others.
After, on SIMT targets: a `tl.sync_threads()` after each top-level statement that writes
block-shared storage and before the next statement that reads it. Block-serial targets run
a block as one thread of execution and need none.
"""
from __future__ import annotations

__all__ = ["insert_barriers"]


def insert_barriers(func, ctx):
    if ctx.block_serial:
        return func
    from .simt import insert_block_barriers

    return insert_block_barriers(func, ctx)
