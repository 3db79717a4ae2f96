"""Function attributes a kernel body sets from anywhere in it.

TVMScript's `T.func_attr` works only at the top of a `@T.prim_func` body; TileLang's programs call
`T.disable_warp_group_reg_alloc()`, `T.annotate_pass_configs(...)` and the like inside
`with T.Kernel(...)`, after the allocations. `set_func_attr(key, value)` sets the attribute
directly where TVMScript allows it, and elsewhere leaves a marker statement (an extern call
named `MARKER` holding the key and the value as JSON) that `hoist_func_attrs`, run on every
parsed kernel, turns into the attribute. Values are JSON: ints, floats, strings, lists, dicts.
"""
from __future__ import annotations

import json
from typing import Any

import tvm_ffi
from tvm import ir, tirx

__all__ = ["set_func_attr", "hoist_func_attrs", "MARKER"]

MARKER = "__tilelang_func_attr__"


def set_func_attr(key: str, value: Any) -> None:
    """Set the kernel's function attribute `key` to `value`, from anywhere in its body."""
    from tvm.tirx.script.builder import ir as _builder

    try:
        _builder.func_attr({key: value})
    except Exception:  # noqa: BLE001 - not at the top of the body: a marker the parser hoists
        try:
            _builder.evaluate(tirx.call_extern("handle", MARKER, key, json.dumps(value)))
        except Exception as exc:  # noqa: BLE001 - outside any kernel
            raise RuntimeError(f"{key}: set inside a kernel body (@T.prim_func)") from exc


def _marker(stmt) -> tuple[str, Any] | None:
    value = getattr(stmt, "value", None)
    if not (isinstance(stmt, tirx.Evaluate) and isinstance(value, ir.Call) and len(value.args) == 3):
        return None
    name = value.args[0]
    if not (isinstance(name, ir.StringImm) and name.value == MARKER):
        return None
    return str(value.args[1].value), json.loads(str(value.args[2].value))


def hoist_func_attrs(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with each marker's attribute set and the marker removed (`func` when none)."""
    found: dict[str, Any] = {}

    def visit(stmt):
        marked = _marker(stmt)
        if marked is not None:
            found[marked[0]] = marked[1]

    tvm_ffi.structural_walk(func.body, ((tirx.Evaluate, visit),))
    if not found:
        return func

    def without(seq: tirx.SeqStmt):
        kept = [s for s in seq.seq if _marker(s) is None]
        if len(kept) == len(seq.seq):
            return seq
        return kept[0] if len(kept) == 1 else tirx.SeqStmt(kept) if kept else tirx.Evaluate(tirx.IntImm("int32", 0))

    body = tvm_ffi.structural_map(func.body, ((tirx.SeqStmt, without),))
    body = tvm_ffi.structural_map(body, ((tirx.Evaluate, lambda s: tirx.Evaluate(tirx.IntImm("int32", 0))
                                          if _marker(s) is not None else s),))
    for key, value in found.items():
        func = func.with_attr(key, value)
    return func.with_body(body)
