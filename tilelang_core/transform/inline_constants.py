"""inline_constants: scalars that only ever hold one constant are replaced by it.

TVMScript turns every name a kernel assigns into a scalar: `rows, cols = s.shape` in a
`T.macro` (or in the kernel) becomes a one-element "local" buffer, `rows: T.int32 = 64`,
and the macro's `T.Parallel(rows, cols)` runs over a load of it. Layout inference needs
constant extents to keep fragments in registers, so without this pass a macro that takes
fragments pushed them into shared memory while the same code written inline kept them in
registers.

Before: a scalar may be declared and stored once with an expression that simplifies to a
constant (an int or a float, possibly through earlier such scalars): a one-element "local"
or "local.var" buffer with that single store, read only by loads, never handed to a call by
address nor to a tile op or atomic as an element (`T.atomic_add(acc[0], x)` writes it); or a
`Bind` / `LetStmt` variable.
The same for an integer vector stored once from names and constants only (`idx =
T.Ramp(tid * 2, 1, 2)`, TileLang's packed x2 tests): `C[idx]` becomes the vector access
`C[T.Ramp(tid * 2, 1, 2)]`, which a target can print, where a vector index held in a local
cannot address memory.
After: those scalars, their stores and bindings are gone and every read is the constant.
Scalars stored twice (`x = x + 1`), or stored anything else (a thread index, a load, a
parameter), stay.

Then `fold_region_extents`: a tile op's region extent written over names the kernel assigns
once (`T.copy(KV[b, kv_start:kv_end, h, :], KV_shared)` with `kv_start = s * base + k * 64`,
`kv_end = s * base + (k + 1) * 64`, TileLang's MLA decode) becomes the constant it always is
(64), so the copy's two sides agree. Only an extent that simplifies to a constant changes.
"""
from __future__ import annotations

import tvm_ffi
from tvm import ir as _ir
from tvm import tirx as tir

from .irutil import analyzer, is_scalar_buffer, map_stmts, seq, substitute, walk

__all__ = ["inline_constants", "fold_region_extents"]

_BY_ADDRESS = ("tirx.address_of", "tirx.tvm_access_ptr", "tirx.buffer_data")


def _key(node) -> int:
    return node.__chandle__()


def _constant(value, known_vars: dict, known_buffers: dict):
    """`value` with the constants found so far put in, when that simplifies to an int or float."""
    if not isinstance(value.ty, _ir.PrimType):  # a pointer is never a constant here
        return None
    value = substitute(value, known_vars)
    if known_buffers:
        value = tvm_ffi.structural_map(value, ((_ir.TensorLoad, lambda ld: known_buffers.get(_key(ld.source), ld)),))
    value = analyzer().simplify(value)
    if isinstance(value, (tir.IntImm, tir.FloatImm)):
        return value
    return value if _is_index_vector(value) else None


def _is_index_vector(value) -> bool:
    """An integer vector built from names and constants only (`idx = T.Ramp(tid * 2, 1, 2)`):
    a vector of indices in a register cannot address memory on any target, inlined it is a
    vector access; it reads no buffer, so it holds the same lanes wherever it is read."""
    dtype = value.ty.dtype
    if dtype.lanes <= 1 or dtype.type_code not in (0, 1):  # int / uint
        return False
    loads = []
    walk(value, loads.append, (_ir.TensorLoad,))
    return not loads


def _constant_scalars(body: tir.Stmt) -> tuple[dict, dict]:
    """(var -> constant, scalar buffer key -> constant), in program order."""
    stores: dict[int, list] = {}
    by_address: set[int] = set()
    order: list = []

    def collect(node):
        if isinstance(node, tir.BufferStore) and is_scalar_buffer(node.buffer):
            stores.setdefault(_key(node.buffer), []).append(node)
            order.append(node)
        elif isinstance(node, (tir.Bind, tir.LetStmt)):
            order.append(node)
        elif isinstance(node, _ir.Call) and isinstance(node.op, _ir.Op) and node.op.name in _BY_ADDRESS:
            def note(ld):
                by_address.add(_key(ld.source if isinstance(ld, _ir.TensorLoad) else ld))

            walk(node, note, (_ir.TensorLoad, tir.Buffer))
        elif isinstance(node, _ir.Call) and isinstance(node.op, _ir.Op) and node.op.name.startswith("tl."):
            # an element handed to a tile op or an atomic (`T.atomic_add(acc[0], x)`) is
            # where it writes, not a value it reads
            for arg in node.args[:1] if node.op.name == "tl.region" else node.args:  # not a region's extents
                if isinstance(arg, _ir.TensorLoad):
                    by_address.add(_key(arg.source))

    walk(body, collect, (tir.BufferStore, tir.Bind, tir.LetStmt, _ir.Call))
    known_vars: dict = {}
    known_buffers: dict = {}
    for node in order:  # post-order: a store's value is visited before the store itself
        if isinstance(node, tir.BufferStore):
            key = _key(node.buffer)
            if len(stores[key]) != 1 or key in by_address:
                continue
        value = _constant(node.value, known_vars, known_buffers)
        if value is None:
            continue
        if isinstance(node, tir.BufferStore):
            known_buffers[_key(node.buffer)] = value
        else:
            known_vars[node.var] = value
    return known_vars, known_buffers


def inline_constants(func: tir.PrimFunc, ctx=None) -> tir.PrimFunc:
    return fold_region_extents(_inline_constants(func))


def fold_region_extents(func: tir.PrimFunc) -> tir.PrimFunc:
    """Tile-op region extents over once-assigned names, folded where they are constant."""
    from ..ir import is_region_call, is_tile_op
    from ..ir.region import Region

    stores: dict[int, list] = {}
    binds: dict = {}

    def collect(node):
        if isinstance(node, tir.BufferStore) and is_scalar_buffer(node.buffer):
            stores.setdefault(_key(node.buffer), []).append(node.value)
        elif isinstance(node, tir.Bind):
            binds[node.var] = node.value

    walk(func.body, collect, (tir.BufferStore, tir.Bind))
    once = {k: v[0] for k, v in stores.items() if len(v) == 1}
    if not once and not binds:
        return func

    def fold(extent):
        if isinstance(extent, tir.IntImm):
            return extent
        value = extent
        for _ in range(4):  # names assigned from other names
            value = substitute(value, binds)
            value = tvm_ffi.structural_map(value, ((_ir.TensorLoad, lambda ld: once.get(_key(ld.source), ld)),))
        value = analyzer().simplify(value)
        return value if isinstance(value, tir.IntImm) else extent

    def on_eval(stmt: tir.Evaluate):
        if not is_tile_op(stmt):
            return stmt
        call = stmt.value
        args, changed = [], False
        for arg in call.args:
            if is_region_call(arg):
                region = Region.from_call(arg)
                extents = tuple(fold(e) for e in region.extents)
                if any(not a.same_as(b) for a, b in zip(extents, region.extents)):
                    arg, changed = Region(region.buffer, region.mins, extents, region.access).to_call(), True
            args.append(arg)
        if not changed:
            return stmt
        return tir.Evaluate(_ir.Call(call.op, args, span=call.span, ret_ty=call.ty), span=stmt.span)

    return func.with_body(map_stmts(func.body, (tir.Evaluate,), on_eval))


def _inline_constants(func: tir.PrimFunc) -> tir.PrimFunc:
    known_vars, known_buffers = _constant_scalars(func.body)
    if not known_vars and not known_buffers:
        return func
    var_keys = {_key(v) for v in known_vars}

    def gone(stmt) -> bool:
        if isinstance(stmt, tir.Bind):
            return _key(stmt.var) in var_keys
        if isinstance(stmt, (tir.BufferStore, tir.AllocBuffer)):
            return _key(stmt.buffer) in known_buffers
        return False

    def on_stmt(stmt):
        if isinstance(stmt, tir.LetStmt):
            return stmt.body if _key(stmt.var) in var_keys else stmt
        if isinstance(stmt, tir.SeqStmt):
            return seq(s for s in stmt.seq if not gone(s))
        return tir.Evaluate(tir.const(0, "int32")) if gone(stmt) else stmt

    body = map_stmts(func.body, (tir.SeqStmt, tir.LetStmt, tir.Bind, tir.BufferStore, tir.AllocBuffer), on_stmt)
    body = substitute(body, known_vars)
    body = tvm_ffi.structural_map(body, ((_ir.TensorLoad, lambda ld: known_buffers.get(_key(ld.source), ld)),))
    return func.with_body(body)
