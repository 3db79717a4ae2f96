"""`T.use_swizzle(panel_size, order)` as block rasterization: the launch's blocks visit the
tile grid panel by panel, so blocks that run together share A rows and B columns in L2.

With `order="row"` the grid's rows (blockIdx.y) are cut into panels of `panel_size`; block
number b = bx + by * gx walks a panel column by column, `panel_size` rows at a time, and odd
panels walk their columns backwards (serpentine), as TileLang's `rasterization2DRow`.
`order="col"` is the transpose. The last panel may be narrower. The remap is a bijection of
the grid, so results never change, only the order in which tiles are computed.
"""
from __future__ import annotations

from tvm import tirx as tir

from tilelang_core.ir import collect_tile_ops, is_tile_op
from tilelang_core.transform import map_stmts, seq, substitute
from tilelang_core.transform import VAR_RANGES, launch_info

__all__ = ["rasterize", "rasterize_blocks"]


def rasterize(bx, by, gx, gy, panel: int, order: str = "row"):
    """(new bx, new by) for block (bx, by) of a gx x gy grid (ints or TIR expressions)."""
    if order == "col":
        by2, bx2 = rasterize(by, bx, gy, gx, panel, "row")
        return bx2, by2
    block = bx + by * gx
    grid = gx * gy
    size = panel * gx
    offset, index = block % size, block // size
    total = (grid + size - 1) // size
    last = (grid - index * size) // gx
    if isinstance(index, int) and isinstance(total, int):
        stride = panel if index + 1 < total else last
        col = gx - 1 - offset // stride if index % 2 else offset // stride
    else:
        stride = tir.Select(index + 1 < total, tir.const(panel, "int32"), last)
        col = tir.Select(index % 2 == 1, gx - 1 - offset // stride, offset // stride)
    return col, offset % stride + index * panel


def rasterize_blocks(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Apply the kernel's `T.use_swizzle` to its block indices and drop the op."""
    ops = [op for op in collect_tile_ops(func) if op.name == "use_swizzle"]
    if not ops:
        return func
    panel, order = ops[0].int_arg(0), ops[0].str_arg(1)
    body = map_stmts(func.body, (tir.Evaluate,),
                     lambda s: tir.Evaluate(tir.const(0, "int32")) if is_tile_op(s, "use_swizzle") else s)
    info = launch_info(func)
    if "blockIdx.x" not in info.vars or "blockIdx.y" not in info.vars or panel <= 0:
        return func.with_body(body)
    bx, by = info.vars["blockIdx.x"], info.vars["blockIdx.y"]
    new_bx, new_by = tir.Var(f"{bx.name}_r", "int32"), tir.Var(f"{by.name}_r", "int32")
    col, row = rasterize(bx, by, info.extents["blockIdx.x"], info.extents["blockIdx.y"], panel, order)
    ctx.facts.setdefault(VAR_RANGES, {}).update(
        {new_bx: info.extents["blockIdx.x"], new_by: info.extents["blockIdx.y"]})

    def on_attr(attr: tir.AttrStmt):
        inner = attr.body
        if attr.attr_key != "thread_extent" or (isinstance(inner, tir.AttrStmt) and inner.attr_key == "thread_extent"):
            return attr
        remapped = substitute(inner, {bx: new_bx, by: new_by})
        return tir.AttrStmt(attr.node, attr.attr_key, attr.value,
                            seq([tir.Bind(new_bx, col), tir.Bind(new_by, row), remapped]), span=attr.span)

    return func.with_body(map_stmts(body, (tir.AttrStmt,), on_attr, order="pre"))
