"""finalize: symbolic dimensions become explicit scalar parameters.

Before: parameters are the user's tensors; a symbolic dimension (`T.symbolic("m")`) appears
only inside their shapes.
After: each symbolic variable is appended to the parameters as an int32 scalar, in order of
first appearance, and `ctx.facts["symbols"]` maps its name to the (parameter index, dim)
it is read from at call time. Code generators then see every free variable as a parameter.
"""
from __future__ import annotations

from tvm import tirx as tir

__all__ = ["finalize", "symbolic_dims"]


def symbolic_dims(func: tir.PrimFunc) -> dict[str, tuple[tir.Var, int, int]]:
    """name -> (var, parameter index, dim) for every variable dimension of a tensor param."""
    found: dict[str, tuple[tir.Var, int, int]] = {}
    for p_index, param in enumerate(func.params):
        if not tir.is_buffer_var(param):
            continue
        for dim, extent in enumerate(param.shape):
            if isinstance(extent, tir.Var) and extent.name not in found:
                found[extent.name] = (extent, p_index, dim)
    return found


def finalize(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    dims = symbolic_dims(func)
    ctx.facts["symbols"] = {name: (p, d) for name, (_, p, d) in dims.items()}
    if not dims:
        return func
    params = list(func.params) + [var for var, _, _ in dims.values()]
    return tir.PrimFunc(params, func.body, func.ret_type, func.attrs, func.span)
