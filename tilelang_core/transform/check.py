"""check: semantic checks that need the target, reported at the user's source line.

Before: tile IR straight from the parser.
After: unchanged IR, or a `TileLangCompileError` / `CapabilityError` naming the line, what
was seen and what to do: a dtype the target lacks, too many threads per block, explicit
thread indices mixed with tile ops on a block-serial target, a `T.alloc_local` value that one
`T.Parallel` iteration would read from another on a block-serial target, and the value checks of
`check_values` (launch parameters, nested kernels, indices out of static bounds, lossy
tile-op conversions and plain stores). One rewrite: on a block-serial target a kernel written without
`with T.Kernel(...)` (TileLang accepts that for CPU targets) runs as one block of one thread,
so its body is wrapped in that launch frame.
"""
from __future__ import annotations

from tvm import tirx as tir

from ..ir import SCOPE_BARRIER, TileOp, is_tile_op, source_of
from .check_values import (check_constant_bounds, check_launch_parameters, check_lossy_stores,
                           check_lossy_tile_ops, check_shapes)
from .errors import CapabilityError, TileLangCompileError
from .irutil import walk
from .kernel_info import launch_info
from .loop_nesting import check_loop_nesting
from .thread_allreduce import is_thread_allreduce
from .threads import uses_var

__all__ = ["check"]




def check(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    caps = ctx.caps
    for param in func.params:
        if tir.is_buffer_var(param) and not caps.supports_dtype(param.dtype):
            raise CapabilityError(
                f"tensor {param.name} has dtype {param.dtype}, which {ctx.target} does not support "
                f"(its dtypes: {', '.join(caps.dtypes)})", source_of(func) or _kernel_line(func))

    def visit(node):
        # barrier words (T.alloc_barrier) are the target's own: the barrier ops say if it has them
        # a vector dtype (`idx = T.Ramp(...)` makes an int32x2 local) is lanes of its element
        # type; whether the dialect spells the vector type is codegen's question
        if isinstance(node, tir.AllocBuffer) and node.buffer.scope() != SCOPE_BARRIER \
                and not caps.supports_dtype(_element_dtype(node.buffer.dtype)):
            raise CapabilityError(
                f"buffer {node.buffer.name} has dtype {node.buffer.dtype}, which {ctx.target} does not "
                f"support (its dtypes: {', '.join(caps.dtypes)})", source_of(node))

    walk(func.body, visit, (tir.AllocBuffer,))

    _check_layout_annotations(func)
    check_launch_parameters(func)
    check_shapes(func)
    check_constant_bounds(func)
    check_lossy_tile_ops(func)
    check_lossy_stores(func)
    check_loop_nesting(func)
    info = launch_info(func)
    if not info.extents:
        if caps.execution_model != "block-serial":
            raise TileLangCompileError(
                f"the kernel has no `with T.Kernel(...)` launch frame; {ctx.target} runs only code inside one "
                f"(a body without it runs as one block on block-serial targets only)", source_of(func))
        func = _one_block(func)
        info = launch_info(func)
    threads = info.threads
    if threads > caps.max_threads_per_block:
        raise CapabilityError(
            f"T.Kernel asks for {threads} threads per block; {ctx.target} allows at most "
            f"{caps.max_threads_per_block} (capability max_threads_per_block); pass threads= of at most "
            f"{caps.max_threads_per_block} (the product, for a tuple) and give each thread more work",
            _kernel_line(func))
    if caps.execution_model == "block-serial":
        _check_explicit_threads(func, info)
        if threads != 1:
            _check_per_thread_locals(func, ctx.target)
    return func


def _element_dtype(dtype) -> str:
    """The scalar dtype of `dtype`'s lanes ("int32" for "int32x2")."""
    from tvm import DataType

    return str(DataType(str(dtype)).with_lanes(1))


def _one_block(func: tir.PrimFunc) -> tir.PrimFunc:
    """`func` with its body inside `T.Kernel(1, threads=1)`."""
    from tvm import ir

    body = func.body
    for tag, name in (("threadIdx.x", "tx"), ("blockIdx.x", "bx")):
        iv = tir.IterVar(ir.Range(0, 1), tir.Var(name, "int32"), tir.IterVar.ThreadIndex, tag)
        body = tir.AttrStmt(iv, "thread_extent", tir.IntImm("int32", 1), body, span=body.span)
    return func.with_body(body)


def _kernel_line(func: tir.PrimFunc):
    """The line of the `with T.Kernel(...)` statement (its first launch attribute)."""
    found = []

    def visit(node):
        if node.attr_key == "thread_extent" and not found:
            found.append(source_of(node))

    walk(func.body, visit, (tir.AttrStmt,))
    return (found[0] if found else None) or source_of(func)


def _check_explicit_threads(func: tir.PrimFunc, info) -> None:
    """Explicit thread indices are emulated by a loop over thread ids, which is only
    faithful when nothing in the body is block-wide (tile ops, T.Parallel, barriers)."""
    bodies = []

    def find(node):
        if node.attr_key == "thread_extent" and node.node.thread_tag.startswith("threadIdx"):
            bodies.append((node.node.var, node.body))

    walk(func.body, find, (tir.AttrStmt,))
    if not any(uses_var(body, var) for var, body in bodies):
        return
    block_wide = []

    def visit(node):
        if isinstance(node, tir.Evaluate) and is_tile_op(node):
            block_wide.append((f"T.{TileOp.from_stmt(node).name}", source_of(node)))
        elif isinstance(node, tir.For) and node.kind == tir.ForKind.PARALLEL:
            block_wide.append(("T.Parallel", source_of(node)))
        elif is_thread_allreduce(node):
            block_wide.append(("T.tvm_thread_allreduce", source_of(node)))

    walk(func.body, visit, (tir.Evaluate, tir.For))
    if block_wide:
        what, where = block_wide[0]
        raise CapabilityError(
            f"this kernel names thread indices explicitly and also uses {what}; on block-serial "
            f"targets (execution_model 'block-serial') explicit threads are emulated one after "
            f"another, which cannot mix with block-wide tile ops. Use tile ops and T.Parallel "
            f"only, or a SIMT target", where)


def _check_per_thread_locals(func: tir.PrimFunc, target) -> None:
    """On a block-serial target a `T.Parallel` nest runs its iterations one after another, so a
    `T.alloc_local` buffer allocated outside it (one per thread on a GPU) is one buffer that
    every iteration shares. A nest that reads an element of it that does not depend on the
    nest's variables before the iteration wrote it would read what another iteration left (a
    GPU thread reads its own): a silent wrong answer, refused here at the line of the read. Only
    buffers that some T.Parallel iteration writes count (block-uniform values are the same for
    every iteration)."""
    from tvm import ir as _ir

    allocated = set()
    walk(func.body, lambda a: allocated.add(a.buffer.__chandle__()) if a.buffer.scope() == "local" else None,
         (tir.AllocBuffer,))
    # the local buffers some T.Parallel iteration writes (values one thread would hold); those
    # written by block-uniform code only (`n = Lens[b]`) hold the same value for every iteration
    locals_: set = set()

    def note_writes(loop) -> None:
        if loop.kind == tir.ForKind.PARALLEL and not (isinstance(loop.extent, tir.IntImm) and int(loop.extent) == 1):
            walk(loop.body, lambda st: locals_.add(st.buffer.__chandle__())
                 if st.buffer.__chandle__() in allocated else None, (tir.BufferStore,))

    walk(func.body, note_writes, (tir.For,))
    if not locals_:
        return

    def loads(expr, out):
        walk(expr, out.append, (_ir.TensorLoad,))
        return out

    def check_nest(loop: tir.For) -> None:
        nest_vars, body = [], loop
        while isinstance(body, tir.For) and body.kind == tir.ForKind.PARALLEL:
            nest_vars.append(body.loop_var)
            body = body.body
        written: set = set()

        def per_iteration(indices) -> bool:
            return any(uses_var(i, v) for i in indices for v in nest_vars)

        def read(expr, stmt) -> None:
            for ld in loads(expr, []):
                key = ld.source.__chandle__()
                if key in locals_ and key not in written and not per_iteration(ld.indices):
                    raise CapabilityError(
                        f"T.alloc_local buffer {ld.source.name} is read in this T.Parallel before the iteration "
                        f"writes it; on a GPU each thread holds its own {ld.source.name}, but {target} is "
                        f"block-serial: the T.Parallel iterations run one after another and share one "
                        f"{ld.source.name}, so each would read what another left. Index it by the T.Parallel "
                        f"variable (an element per iteration), use T.alloc_fragment, or use a SIMT target",
                        source_of(stmt) or source_of(loop))

        def visit(stmt) -> None:
            if isinstance(stmt, tir.SeqStmt):
                for child in stmt.seq:
                    visit(child)
            elif isinstance(stmt, tir.BufferStore):
                read(stmt.value, stmt)
                for i in stmt.indices:
                    read(i, stmt)
                if stmt.buffer.__chandle__() in locals_:
                    written.add(stmt.buffer.__chandle__())
            elif isinstance(stmt, tir.For):
                read(stmt.min, stmt)
                read(stmt.extent, stmt)
                visit(stmt.body)
            elif isinstance(stmt, tir.IfThenElse):
                read(stmt.condition, stmt)
                visit(stmt.then_case)
                if stmt.else_case is not None:
                    visit(stmt.else_case)
            elif isinstance(stmt, tir.Bind):
                read(stmt.value, stmt)
            elif isinstance(stmt, (tir.AttrStmt, tir.While)):
                read(getattr(stmt, "condition", getattr(stmt, "value", None)), stmt)
                visit(stmt.body)
            elif isinstance(stmt, tir.Evaluate):
                read(stmt.value, stmt)
            elif isinstance(stmt, (tir.AllocBuffer, tir.DeclBuffer)):
                pass

        visit(body)

    def find(stmt) -> None:
        if isinstance(stmt, tir.For) and stmt.kind == tir.ForKind.PARALLEL:
            if not (isinstance(stmt.extent, tir.IntImm) and int(stmt.extent) == 1):
                check_nest(stmt)
            return
        for child in _children_of(stmt):
            find(child)

    find(func.body)


def _children_of(stmt) -> list:
    if isinstance(stmt, tir.SeqStmt):
        return list(stmt.seq)
    if isinstance(stmt, tir.IfThenElse):
        return [stmt.then_case] + ([stmt.else_case] if stmt.else_case is not None else [])
    body = getattr(stmt, "body", None)
    return [body] if isinstance(body, tir.Stmt) else []


def _check_layout_annotations(func: tir.PrimFunc) -> None:
    """A buffer annotated with two different layouts cannot honour both."""
    import tvm_ffi

    from ..ir.constants import ATTR_LAYOUT

    seen: dict[int, tuple[object, object]] = {}

    def visit(node):
        if node.attr_key != ATTR_LAYOUT:
            return
        buf = node.value
        key = buf.__chandle__()
        if key in seen:
            layout, first = seen[key]
            if not tvm_ffi.structural_equal(layout, node.node):
                where = source_of(first)
                raise TileLangCompileError(
                    f"buffer {buf.name} is annotated with two different layouts"
                    + (f" (first at line {where[1]})" if where else "")
                    + "; a buffer has one layout for the whole kernel: keep one T.annotate_layout",
                    source_of(node))
        else:
            seen[key] = (node.node, node)

    walk(func.body, visit, (tir.AttrStmt,))
