"""Source text a kernel imports (`T.import_source`): where it lives in the IR.

A PrimFunc that imports code carries the attribute `pragma_import_c` (`ATTR_IMPORT_SOURCE`,
TVM's and TileLang's key; also the key of the marker below): a list of texts in the order of their first `T.import_source`,
each once. A C-family printer prints them ahead of the kernel. While the parser builds the
body, each `T.import_source(text)` leaves a marker where it stands,
`AttrStmt(0, "pragma_import_c", text)` around a no-op; `hoist_import_sources` (run by
`@T.prim_func` right after parsing) moves the markers into the attribute, so the passes never
see them and the text is part of the function's printed IR, hence of its cache key.
"""
from __future__ import annotations

import tvm_ffi
from tvm import ir, tirx

__all__ = ["ATTR_IMPORT_SOURCE", "hoist_import_sources", "import_sources", "import_source_marker"]

ATTR_IMPORT_SOURCE = "pragma_import_c"


def import_source_marker(text: str) -> tirx.AttrStmt:
    """The statement `T.import_source(text)` leaves in the body before hoisting."""
    zero = tirx.IntImm("int32", 0)
    return tirx.AttrStmt(zero, ATTR_IMPORT_SOURCE, ir.StringImm(text), tirx.Evaluate(zero))


def _is_marker(stmt) -> bool:
    return isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == ATTR_IMPORT_SOURCE


def _text(value) -> str:
    return str(value.value) if isinstance(value, ir.StringImm) else str(value)


def import_sources(func: tirx.PrimFunc) -> list[str]:
    """The texts `func` imports: its `pragma_import_c` attribute (a text or a list of them),
    then the markers still in its body, each text once, in order."""
    texts: list[str] = []
    attrs = func.attrs
    if attrs is not None and ATTR_IMPORT_SOURCE in attrs:
        value = attrs[ATTR_IMPORT_SOURCE]
        texts.extend([_text(value)] if isinstance(value, (str, ir.StringImm)) else [_text(v) for v in value])
    return list(dict.fromkeys(texts + _marker_texts(func.body)))


def _marker_texts(body) -> list[str]:
    """The texts of the markers in `body`, in source order."""
    texts: list[str] = []

    def visit(stmt):
        if _is_marker(stmt):
            texts.append(_text(stmt.value))

    tvm_ffi.structural_walk(body, ((tirx.AttrStmt, visit),), order="pre")
    return texts


def hoist_import_sources(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with every marker moved out of the body into the `pragma_import_c` attribute
    (`func` itself when it imports nothing)."""
    if not _marker_texts(func.body):
        return func
    texts = import_sources(func)

    def without_markers(stmt: tirx.SeqStmt):
        kept = [s for s in stmt.seq if not (_is_marker(s) and _is_noop(s.body))]
        if len(kept) == len(stmt.seq):
            return stmt
        return kept[0] if len(kept) == 1 else tirx.SeqStmt(kept) if kept else tirx.Evaluate(tirx.IntImm("int32", 0))

    body = tvm_ffi.structural_map(func.body, ((tirx.SeqStmt, without_markers),))
    # a marker that is the only statement of a body, or wraps a real one: its body stays
    body = tvm_ffi.structural_map(body, ((tirx.AttrStmt, lambda s: s.body if _is_marker(s) else s),))
    return func.with_body(body).with_attr(ATTR_IMPORT_SOURCE, texts)


def _is_noop(stmt) -> bool:
    return (isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.IntImm)
            and int(stmt.value.value) == 0)
