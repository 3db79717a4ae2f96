"""Walkers over parsed kernels, shared by the language tests."""
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import TileOp, collect_tile_ops


def stmts_of(func, kind):
    """Every statement of type `kind` in `func`, in program order."""
    found = []
    tvm_ffi.structural_walk(func.body, [(kind, found.append)], order="pre")
    return found


def tile_ops(func, name=None) -> list[TileOp]:
    """The tile ops of `func` (only those called `name`, if given)."""
    return [op for op in collect_tile_ops(func) if name is None or op.name == name]


def thread_extents(func):
    """(thread tag, var name, extent) of each launch_thread, outermost first."""
    return [
        (s.node.thread_tag, s.node.var.name, s.value)
        for s in stmts_of(func, tirx.AttrStmt)
        if s.attr_key == "thread_extent"
    ]


def ints(exprs):
    return [int(e) for e in exprs]


def allocations(func):
    """{buffer name: buffer} of every AllocBuffer."""
    return {s.buffer.name: s.buffer for s in stmts_of(func, tirx.AllocBuffer)}


def vars_in(expr):
    """Every Var that occurs in `expr`."""
    found = []
    tvm_ffi.structural_walk(expr, [(tirx.Var, found.append)])
    return found
