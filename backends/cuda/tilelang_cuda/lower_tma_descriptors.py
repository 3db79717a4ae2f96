"""number_tensor_maps: the descriptors of `T.create_tma_descriptor` become kernel parameters.

Before: `T.tma_load` calls (`tl::tma_load`) whose first argument is a descriptor call
(`language_tma.DESCRIPTOR_CALL`: the map's spec and the tensor parameter's data), and maybe
descriptors evaluated alone (TileLang's hoisted form). After: each distinct descriptor is one
entry of `TENSOR_MAPS_ATTR` (joining those `lower_tma` and `lower_tma_stores` recorded: the
codegen appends one `__grid_constant__` parameter per entry and the runtime encodes it per
call), each load names its map by number, and sits in a user-synchronized region (its tile is
published by the mbarrier the kernel waits on, so the core adds no barrier for it). A
descriptor alone is dropped once recorded. Runs after the core's and the backend's own TMA
planning (`lower_tma_stores`) and before `lower_tile_ops`.

A target without the "tma" copy engine refuses a `T.tma_load`, naming the capability.
"""
from __future__ import annotations

import json

import tvm
from tvm import ir as _ir
from tvm import tirx as tir

from tilelang_core.ir import source_of
from tilelang_core.transform import CapabilityError, TileLangCompileError, map_stmts, user_sync, walk

from .language_tma import DESCRIPTOR_CALL
from .lower_tma import TENSOR_MAPS_ATTR, tensor_maps_of, tma_dims

__all__ = ["number_tensor_maps"]


def _extern_name(call) -> str:
    if isinstance(call, _ir.Call) and getattr(call.op, "name", "") == "tirx.call_extern" \
            and isinstance(call.args[0], _ir.StringImm):
        return str(call.args[0].value)
    return ""


def _has_descriptors(body) -> bool:
    found = []
    walk(body, lambda c: found.append(1) if _extern_name(c) == DESCRIPTOR_CALL else None, (_ir.Call,))
    return bool(found)


def number_tensor_maps(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Number the hand-made TMA descriptors of `func` (see the module)."""
    if not _has_descriptors(func.body):
        return func
    params = {p.__chandle__(): i for i, p in enumerate(func.params) if tir.is_buffer_var(p)}
    maps = tensor_maps_of(func)

    def number(descriptor, stmt) -> int:
        spec = json.loads(str(descriptor.args[1].value))
        data = descriptor.args[2]
        buffer = data.args[0] if isinstance(data, _ir.Call) and data.op.name == "tirx.buffer_data" else None
        if buffer is None or buffer.__chandle__() not in params:
            raise TileLangCompileError("T.create_tma_descriptor: global_addr must be the data of one of the kernel's "
                                  "tensor parameters", source_of(stmt))
        dims = tma_dims(buffer, tvm.runtime.DataType(str(buffer.dtype)).bits // 8)
        if dims is None:
            raise TileLangCompileError(f"T.create_tma_descriptor: {buffer.name} is not a tensor TMA can describe "
                                  f"(contiguous, 2 to 5 dims, every row a multiple of 16 bytes)", source_of(stmt))
        entry = {"param": params[buffer.__chandle__()], "dtype": spec["dtype"], "shape": list(dims),
                 "box": spec["box"], "swizzle": spec["swizzle"]}
        if spec["l2_promotion"] != 3:  # L2_256B: what the runtime gives T.copy's maps
            entry["l2_promotion"] = spec["l2_promotion"]
        if spec["oob_fill"]:
            entry["oob_fill"] = spec["oob_fill"]
        if entry not in maps:
            maps.append(entry)
        return maps.index(entry)

    def on_evaluate(stmt: tir.Evaluate):
        call = stmt.value
        name = _extern_name(call)
        if name == DESCRIPTOR_CALL:  # TileLang's hoisted form: only recorded
            number(call, stmt)
            return tir.Evaluate(tir.const(0, "int32"))
        if name != "tl::tma_load" or _extern_name(call.args[1]) != DESCRIPTOR_CALL:
            return stmt
        if "tma" not in ctx.caps.copy_engines:
            raise CapabilityError(f"T.tma_load needs the TMA copy engine (capability 'tma'), which {ctx.target} "
                                  f"does not have; load the tile with T.copy", source_of(stmt))
        index = number(call.args[1], stmt)
        args = ["tl::tma_load", tir.const(index, "int32"), *call.args[2:]]
        return user_sync(tir.Evaluate(tir.call_extern("handle", *args), span=stmt.span))

    body = map_stmts(func.body, (tir.Evaluate,), on_evaluate)
    return func.with_body(body).with_attr(TENSOR_MAPS_ATTR, json.dumps(maps))
