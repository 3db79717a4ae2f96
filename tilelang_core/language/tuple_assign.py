"""Tuple assignment to buffer elements: `a[0], a[1] = a[1], a[0]` in a kernel (TileLang's
sparse compressor swaps two indices this way).

Python evaluates the whole right side before it assigns, so the element values are read
first: each value that reads memory is bound to a fresh variable (`T.bind`), then the targets
are stored in order. Targets may mix buffer elements and names. TVMScript's own `=` handles
every other form (a single target, a tuple of names).
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx
from tvm.script.parser._core import dispatch, doc
from tvm.tirx.script.builder import ir as _builder

__all__: list[str] = []

_installed = False


def _needs_own_handling(node: Any) -> bool:
    if len(node.targets) != 1 or not isinstance(node.targets[0], (doc.Tuple, doc.List)):
        return False
    return any(isinstance(elt, doc.Subscript) for elt in node.targets[0].elts)


def _store(parser: Any, target: Any, value: Any) -> None:
    if isinstance(target.slice, doc.Tuple):
        indices = [parser.eval_expr(index) for index in target.slice.elts]
    else:
        indices = parser.eval_expr(target.slice)
        indices = list(indices) if isinstance(indices, (tuple, list)) else [indices]
    _builder.buffer_store(parser.eval_expr(target.value), value, indices)


def _visit_tuple_assign(parser: Any, node: Any, tvm_visit_assign: Any) -> None:
    targets = node.targets[0].elts
    values = parser.eval_expr(node.value)
    if not isinstance(values, (tuple, list)) or len(values) != len(targets):
        parser.report_error(node, f"cannot unpack {type(values).__name__} into {len(targets)} targets")
    # read every value before the first store, as Python does
    values = [_builder.bind(v) if isinstance(v, ir.Expr) and not isinstance(v, (tirx.IntImm, tirx.FloatImm))
              else v for v in values]
    for target, value in zip(targets, values):
        if isinstance(target, doc.Subscript):
            _store(parser, target, value)
        else:
            parser.eval_assign(target=target, source=value, bind_value=_bind_name)


def _bind_name(parser: Any, node: Any, var_name: str, value: Any) -> Any:
    from tvm.tirx.script.parser.parser import bind_assign_value

    return bind_assign_value(parser, node, var_name, value)


def install_tuple_assign_handler() -> None:
    """Teach the tirx parser's `=` tuples of buffer elements (idempotent)."""
    global _installed  # pylint: disable=global-statement
    if _installed:
        return
    tvm_visit_assign = dispatch.get(token="tirx", type_name="Assign")

    def visit_assign(parser: Any, node: Any) -> None:
        if not _needs_own_handling(node):
            return tvm_visit_assign(parser, node)
        return _visit_tuple_assign(parser, node, tvm_visit_assign)

    dispatch.register(token="tirx", type_name="Assign")(visit_assign)
    _installed = True
