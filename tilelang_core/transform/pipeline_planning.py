"""plan_pipeline: what `T.Pipelined(n, num_stages=k)` becomes on this target.

Before: serial loops annotated with `num_stages` (and optional order/stage lists).
After: the portable meaning, a plain serial loop whose iterations run in order; the stage count
is kept in `ctx.facts["pipelines"]` for backends that overlap copies with compute (they insert
their own pass at this point, e.g. multi-stage cp.async on GPUs). Results never depend on it.
"""
from __future__ import annotations

from tvm import tirx as tir

from .irutil import map_stmts

__all__ = ["plan_pipeline"]

_KEYS = ("num_stages", "tl_pipeline_order", "tl_pipeline_stage", "software_pipeline_stage",
         "software_pipeline_order")


def plan_pipeline(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    found = ctx.facts.setdefault("pipelines", [])

    def on_for(loop: tir.For):
        if "num_stages" not in loop.annotations:
            return loop
        found.append((loop.loop_var.name, int(loop.annotations["num_stages"])))
        keep = {k: v for k, v in loop.annotations.items() if k not in _KEYS}
        return tir.For(loop.loop_var, loop.min, loop.extent, tir.ForKind.SERIAL, loop.body,
                       annotations=keep or None, step=loop.step, span=loop.span)

    return func.with_body(map_stmts(func.body, (tir.For,), on_for))
