"""`tvm.tirx.stmt_functor`: TVM's IR visitors, which apache-tvm 0.27 dropped for
`tvm_ffi.structural_walk`/`structural_map`, over those two.

- `post_order_visit(node, fvisit)`: `fvisit(n)` on every statement and expression below
  `node`, children first.
- `ir_transform(node, preorder, postorder, only_enable=None)`: rewrite, children first, every
  statement or expression (of the type keys in `only_enable`, e.g. `"tirx.For"`, when given)
  with `postorder(n)`, which returns the replacement or None to keep `n`. A `preorder` callback
  (rewrite before the children, stopping the descent) has no counterpart in the structural map
  of 0.27 and is refused with a clear error rather than applied in another order.
- `substitute(node, vmap)`: variables replaced by expressions (a dict keyed by `Var`).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ...transform.irutil import map_stmts, substitute as _substitute, walk

__all__ = ["post_order_visit", "ir_transform", "substitute"]


def _ir_types() -> tuple[type, ...]:
    from tvm import ir, tirx

    return (tirx.Stmt, ir.Expr)


def post_order_visit(node: Any, fvisit: Callable[[Any], None]) -> None:
    """Call `fvisit` on every statement and expression of `node`, children before parents."""
    walk(node, fvisit, _ir_types())


def _type_key(value: Any) -> str:
    return type(value).__tvm_ffi_type_info__.type_key if hasattr(type(value), "__tvm_ffi_type_info__") else ""


def ir_transform(node: Any, preorder: Callable | None, postorder: Callable | None,
                 only_enable: Iterable[str] | None = None) -> Any:
    """`node` with every (enabled) statement or expression rewritten by `postorder`."""
    if preorder is not None:
        raise NotImplementedError(
            "ir_transform: a preorder callback is not supported on apache-tvm 0.27 (its structural map "
            "rewrites children first); pass preorder=None and do the rewrite in postorder")
    if postorder is None:
        return node
    # TileLang's type keys say "tir.For"; apache-tvm 0.27's say "tirx.For"
    enabled = None if only_enable is None else {k.replace("tir.", "tirx.", 1) for k in only_enable} | set(only_enable)

    def rewrite(value: Any) -> Any:
        if enabled is not None and _type_key(value) not in enabled:
            return value
        result = postorder(value)
        return value if result is None else result

    return map_stmts(node, _ir_types(), rewrite)


def substitute(node: Any, vmap: Any) -> Any:
    """`node` with each variable of `vmap` (a dict `Var -> expression`) replaced."""
    return _substitute(node, dict(vmap))
