"""Reads of on-chip buffers that nothing wrote first: TileLang's `VerifyBufferInit`.

Before and after: the tile IR of a kernel, unchanged; the pass only reports. A buffer the kernel
allocates (shared memory, fragments, locals, `T.alloc_var`) holds garbage until something
writes it; a read before that is almost always a missing `T.clear`, `T.fill`, `T.copy` or
`clear_accum=True`. The report is one warning per kernel on stderr, as TileLang's compiler
logs it: "Buffer read before initialization", the number of buffers, then one numbered entry
each; a gemm accumulator's entry names `clear_accum`. It never stops the compile.

What counts (TileLang's rules):
- a statement reads before it writes: a store reads its right-hand side (so
  `x[0] = T.if_then_else(c, i, x[0])` reads `x`), a tile-op region with access mask 3 (a gemm
  accumulating into C) reads it; a gemm or reduction whose `clear` argument is the literal 1
  only writes its destination;
- per-thread storage (`local*`): in source order; a write anywhere before the read (also under
  an `if`, e.g. the `clear_accum=(k == 0)` idiom) counts, a write after it does not (a loop
  body is read once, so a loop-carried read before its write is reported);
- shared memory: order says nothing (a warp-specialized producer may come after its consumer
  in the body), so a read is fine when some *other* statement writes the buffer anywhere;
- a buffer handed to an opaque call (`T.call_extern`, `T.address_of`) counts as written there;
- parameters and global buffers are the caller's, never reported; barrier words are not
  tracked.

`tl.disable_buffer_init_check` (pass config) turns it off.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from tvm import ir, tirx

from ..ir.constants import ACCESS_READ, ACCESS_WRITE, SCOPE_BARRIER
from ..ir.region import Region, is_region_call
from ..ir.tileop import tile_op_call
from .irutil import walk

__all__ = ["MESSAGE", "UninitializedRead", "VerifyBufferInit", "report", "uninitialized_reads", "verify_buffer_init"]

MESSAGE = "Buffer read before initialization"
# tile op -> index of its literal `clear` argument (1: the destination is only written)
_CLEAR_ARG = {"gemm": 6, "reduce": 4}
# tile ops that name a buffer without touching its contents
_NO_ACCESS = {"reducer_info"}


@dataclass(frozen=True)
class UninitializedRead:
    """The first read of `buffer` (its name and scope) before anything wrote it; `reader`
    describes the statement; `gemm_accumulator` when a gemm accumulates into it."""

    buffer: str
    scope: str
    reader: str
    gemm_accumulator: bool


@dataclass
class _Node:
    reads: list
    writes: list
    reader: str
    gemm_reads: set


def _handle(var) -> int:
    return var.__chandle__()


def _loads(expr) -> list:
    found: list = []
    walk(expr, lambda load: found.append(load.source), (ir.TensorLoad,))
    return found


def _buffer_vars(expr) -> list:
    """Every buffer variable mentioned under `expr` (loads and bare buffer arguments)."""
    found: list = []
    walk(expr, lambda v: found.append(v) if tirx.is_buffer_var(v) else None, (ir.Var,))
    return found


def _node_of(stmt) -> _Node | None:
    """What one store or call statement reads (before writing) and writes."""
    if isinstance(stmt, tirx.BufferStore):
        reads = _loads(stmt.value) + [b for i in stmt.indices for b in _loads(i)]
        return _Node(reads, [stmt.buffer], f"a store into '{stmt.buffer.name}'", set())
    if not isinstance(stmt, tirx.Evaluate):
        return None
    call = tile_op_call(stmt)
    if call is None:
        # an opaque call may fill any buffer it is handed
        return _Node([], _buffer_vars(stmt.value), "an opaque call", set())
    name = call.op.name[3:]
    if name in _NO_ACCESS:
        return _Node([], [], f"T.{name}", set())
    clear_at = _CLEAR_ARG.get(name)
    clears = clear_at is not None and len(call.args) > clear_at and isinstance(call.args[clear_at], tirx.IntImm) \
        and int(call.args[clear_at].value) == 1
    reads, writes, gemm_reads = [], [], set()
    for arg in call.args:
        if not is_region_call(arg):
            reads += _loads(arg)
            continue
        region = Region.from_call(arg)
        access = region.access
        if clears and access & ACCESS_WRITE:
            access = ACCESS_WRITE
        reads += [b for e in (*region.mins, *region.extents) for b in _loads(e)]
        if access & ACCESS_READ:
            reads.append(region.buffer)
            if name == "gemm" and access & ACCESS_WRITE:
                gemm_reads.add(_handle(region.buffer))
        if access & ACCESS_WRITE:
            writes.append(region.buffer)
    return _Node(reads, writes, f"T.{name}", gemm_reads)


def _statements(stmt, out: list) -> None:
    """The store and call statements under `stmt`, in source order, with the conditions of
    `if`s as reading nodes of their own."""
    if isinstance(stmt, tirx.SeqStmt):
        for s in stmt.seq:
            _statements(s, out)
        return
    if isinstance(stmt, tirx.IfThenElse):
        out.append(_Node(_loads(stmt.condition), [], "an if condition", set()))
        _statements(stmt.then_case, out)
        if stmt.else_case is not None:
            _statements(stmt.else_case, out)
        return
    node = _node_of(stmt)
    if node is not None:
        out.append(node)
        return
    body = getattr(stmt, "body", None)
    if isinstance(body, tirx.Stmt):
        _statements(body, out)


def uninitialized_reads(func: tirx.PrimFunc) -> list[UninitializedRead]:
    """The buffers `func` allocates and reads before writing, each once, in order of first read."""
    tracked: dict[int, object] = {}

    def allocation(node: tirx.AllocBuffer) -> None:
        scope = node.buffer.scope()
        if scope.startswith("local") or (scope.startswith("shared") and scope != SCOPE_BARRIER):
            tracked[_handle(node.buffer)] = node.buffer

    walk(func.body, allocation, (tirx.AllocBuffer,))
    if not tracked:
        return []
    nodes: list[_Node] = []
    _statements(func.body, nodes)
    shared_writers: dict[int, set[int]] = {}
    for index, node in enumerate(nodes):
        for buffer in node.writes:
            shared_writers.setdefault(_handle(buffer), set()).add(index)
    written: set[int] = set()
    found: dict[int, UninitializedRead] = {}
    for index, node in enumerate(nodes):
        for buffer in node.reads:
            key = _handle(buffer)
            if key not in tracked or key in found:
                continue
            scope = tracked[key].scope()
            if scope.startswith("shared"):
                missing = not (shared_writers.get(key, set()) - {index})
            else:
                missing = key not in written
            if missing:
                found[key] = UninitializedRead(buffer.name, scope, node.reader, key in node.gemm_reads)
        written.update(_handle(b) for b in node.writes)
    return list(found.values())


def report(kernel: str, reads: list[UninitializedRead]) -> str:
    """The warning for `reads` in `kernel` (one message for all of them)."""
    lines = [f"{MESSAGE} in kernel '{kernel}': {len(reads)} buffer(s) read before anything writes them"]
    for number, read in enumerate(reads, 1):
        if read.gemm_accumulator:
            fix = (f"T.gemm accumulates into it: pass clear_accum=True, or T.clear({read.buffer}) before the "
                   f"first gemm")
        else:
            fix = f"write it first (T.clear, T.fill or T.copy into {read.buffer})"
        lines.append(f"  [{number}] '{read.buffer}' ({read.scope}), read by {read.reader}; {fix}")
    return "\n".join(lines)


def verify_buffer_init(func: tirx.PrimFunc, ctx=None) -> tirx.PrimFunc:
    """Pipeline step: write the report of `func`'s uninitialized reads to stderr (unless the
    compile options disable the check); returns `func` unchanged."""
    options = getattr(ctx, "options", None) if ctx is not None else None
    if getattr(options, "disable_buffer_init_check", False):
        return func
    reads = uninitialized_reads(func)
    if reads:
        name = func.attrs["global_symbol"] if func.attrs is not None and "global_symbol" in func.attrs else "main"
        print(f"[tilelang] warning: {report(str(name), reads)}", file=sys.stderr, flush=True)
    return func


def VerifyBufferInit():  # noqa: N802 - TileLang's pass name
    """`verify_buffer_init` as a TVM pass over every PrimFunc of a module; the entered
    `PassContext`'s `tl.disable_buffer_init_check` turns it off."""
    from .pass_context import ambient_configs

    def run(func, _mod, _ctx):
        if not ambient_configs().get("tl.disable_buffer_init_check", False):
            verify_buffer_init(func)
        return func

    return tirx.transform.prim_func_pass(run, opt_level=0, name="tl.VerifyBufferInit")
