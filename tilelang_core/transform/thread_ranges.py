"""Thread ranges: the threads a `T.ws(...)` scope runs on, as the passes see them.

`with T.ws(g, ...)` is an `AttrStmt(n, ATTR_THREAD_GROUPS, IntImm(g))`: its body runs
on the threads of groups g .. g + n - 1, a group being the target's `thread_group_size`
threads (capability). Inside it, the passes treat the range as the block:
- layout inference gives fragments used only there layouts over the range's threads, and
  tile-op hooks see `threads` = the range's size (a GEMM inside `T.ws(0)` on a 256-thread
  block plans for 128 threads);
- the SIMT placement partitions tile ops and `T.Parallel` nests over the range, with the
  flat thread index minus the range's first thread, and guards the body to the range;
- barriers the core places inside are `tl.sync_group(id, count)` over the range's threads
  (a block-wide barrier there would wait for threads that never come).
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx as tir

from ..codegen import builtins
from ..ir.constants import ATTR_THREAD_GROUPS, ATTR_THREAD_RANGE
from ..ir.source import source_of
from .errors import CapabilityError, TileLangCompileError
from .irutil import const, walk

__all__ = ["ThreadRange", "is_thread_groups", "thread_range", "range_barrier_ids", "group_barrier", "ranges_of"]


@dataclass(frozen=True)
class ThreadRange:
    """Threads `begin .. begin + extent - 1` of the block (flat thread indices)."""

    begin: int
    extent: int

    @property
    def end(self) -> int:
        return self.begin + self.extent

    def local(self, tid: tir.Expr) -> tir.Expr:
        """The index of thread `tid` within the range."""
        return tid if self.begin == 0 else tid - const(self.begin)

    def contains(self, tid: tir.Expr, block_threads: int) -> tir.Expr | None:
        """The condition that `tid` lies in the range (None: every thread of the block does)."""
        conds = []
        if self.begin > 0:
            conds.append(tid >= const(self.begin))
        if self.end < block_threads:
            conds.append(tid < const(self.end))
        if not conds:
            return None
        return conds[0] if len(conds) == 1 else tir.And(conds[0], conds[1])

    def describe(self) -> str:
        return f"threads {self.begin}..{self.end - 1}"


def is_thread_groups(stmt) -> bool:
    """A `T.ws` scope, or a range of threads given in threads (`ATTR_THREAD_RANGE`)."""
    return isinstance(stmt, tir.AttrStmt) and stmt.attr_key in (ATTR_THREAD_GROUPS, ATTR_THREAD_RANGE)


def thread_range(attr: tir.AttrStmt, caps, target, block_threads: int) -> ThreadRange:
    """The threads a `T.ws` attribute names on this target; a clear error when the target has
    no thread groups or the groups lie past the block."""
    if attr.attr_key == ATTR_THREAD_RANGE:
        return _explicit_range(attr, caps, target, block_threads)
    count, first = int(attr.node), int(attr.value)
    groups = ", ".join(str(g) for g in range(first, first + count))
    size = caps.thread_group_size
    if not size:
        raise CapabilityError(
            f"T.ws({groups}) runs its body on one group of threads, but {target} has no thread groups "
            f"(capability thread_group_size); write the kernel without T.ws for this target, or compile "
            f"for a target that has them", source_of(attr))
    found = ThreadRange(first * size, count * size)
    if found.end > block_threads:
        raise TileLangCompileError(
            f"T.ws({groups}) runs on {found.describe()} (groups of {size} threads on {target}), but the "
            f"block has {block_threads} threads; launch T.Kernel with threads={found.end} or more", source_of(attr))
    return found


def _explicit_range(attr: tir.AttrStmt, caps, target, block_threads: int) -> ThreadRange:
    """The threads an `ATTR_THREAD_RANGE` attribute names: whole warps (its barriers are named
    barriers over those warps)."""
    extent = int(attr.node.value) if hasattr(attr.node, "value") else int(attr.node)
    found = ThreadRange(int(attr.value), extent)
    warp = caps.warp_size or 1
    if found.begin % warp or found.extent % warp or found.end > block_threads:
        raise TileLangCompileError(
            f"tile ops under a branch on the thread index run on {found.describe()}, which is not a whole "
            f"number of warps of {warp} threads within the block's {block_threads}; branch at a multiple "
            f"of {warp} threads", source_of(attr))
    return found


def range_barrier_ids(body, caps, target, block_threads: int) -> dict[ThreadRange, int]:
    """A barrier id for every thread range in `body`, from 1, in order of first appearance
    (id 0 is the block-wide barrier's)."""
    ids: dict[ThreadRange, int] = {}
    ranges: list = []
    walk(body, lambda a: ranges.append(a) if is_thread_groups(a) else None, (tir.AttrStmt,))
    for attr in ranges:
        found = thread_range(attr, caps, target, block_threads)
        if found not in ids:
            ids[found] = len(ids) + 1
    return ids


def group_barrier(found: ThreadRange, barrier_id: int) -> tir.Stmt:
    """A barrier among the threads of `found` only."""
    return tir.Evaluate(builtins.sync_group(barrier_id, found.extent))


def ranges_of(body, types: tuple, caps, target, block_threads: int) -> dict[int, ThreadRange]:
    """Handle -> the innermost thread range, for every node of `types` inside a `T.ws` scope
    of `body` (nodes outside any are absent: they run on the whole block)."""
    found: dict[int, ThreadRange] = {}

    def on_range(attr):
        if not is_thread_groups(attr):
            return
        here = thread_range(attr, caps, target, block_threads)
        # the walk is post-order: scopes nested inside this one were recorded first and win
        walk(attr.body, lambda n: found.setdefault(n.__chandle__(), here), types)

    walk(body, on_range, (tir.AttrStmt,))
    return found
