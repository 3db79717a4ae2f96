"""Where in the user's kernel a statement came from.

TVMScript in apache-tvm 0.27 attaches a `tvm.ir.Span` (file, line, column) to every
statement it builds, and to the values of expression statements: the parser keeps the
current AST node's span active while the IR is built. So the tile IR carries source lines
without anything of ours; `source_of` reads them. A span is lost only where a pass rebuilds
a node without passing `span=` on — passes that report errors keep it (`For(..., span=old.span)`).
Code expanded from a `T.macro` carries a `SequentialSpan` (call site, then body); we report the
innermost span, the line that wrote the op.
"""
from __future__ import annotations

from tvm import ir

__all__ = ["format_source", "source_of"]


def _last_span(span: object) -> ir.Span | None:
    if span is None:
        return None
    if isinstance(span, ir.SequentialSpan):
        spans = [s for s in (_last_span(s) for s in span.spans) if s is not None]
        return spans[-1] if spans else None
    if isinstance(span, ir.Span) and span.source_name is not None and span.line > 0:
        return span
    return None


def source_of(node: object) -> tuple[str, int] | None:
    """`(file, line)` of the user's source that built `node` (a Stmt or Expr), or None.

    For an `Evaluate` without a span of its own, the span of its value is used.
    Text parsed back from `func.script()` reports the file as "<str>".
    """
    span = _last_span(getattr(node, "span", None))
    if span is None:
        value = getattr(node, "value", None)
        if isinstance(value, ir.Expr):
            span = _last_span(getattr(value, "span", None))
    if span is None:
        return None
    return str(span.source_name.name), int(span.line)


def format_source(node: object) -> str:
    """`file:line` of `node`, or "<unknown location>"; ready for an error message."""
    where = source_of(node)
    return f"{where[0]}:{where[1]}" if where else "<unknown location>"
