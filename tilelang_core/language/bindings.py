"""`T.thread_binding` inside `T.Kernel`: the kernel's own thread index under the user's name.

TileLang kernels write `kr = T.thread_binding(0, 32, thread="threadIdx.x")` (or
`for kr in T.thread_binding(...)`) inside `with T.Kernel(..., threads=32)`. TVMScript builds
a THREAD_BINDING loop over the rest of the body; TVM would merge it with the launch of the
same thread tag. `bind_thread_loops` (run by `@T.prim_func` right after parsing) does that
merge: each such loop is replaced by its body, its variable by the launched index (plus the
loop's start). After it, the body holds no THREAD_BINDING loop, so every pass sees one
variable per thread index.

`T.thread_binding` itself (TVMScript's, with a check) refuses, at its line, a tag the
enclosing kernel does not launch or an extent other than the launched one; `bind_thread_loops`
refuses the same for loops built some other way.
"""
from __future__ import annotations

import tvm_ffi
from typing import Any

from tvm import tirx
from tvm.tirx.script.builder import ir as _builder

from tilelang_core.ir.source import source_of

from .kernel import _kernel_stack

__all__ = ["thread_binding"]  # the T. name; `bind_thread_loops` is the parser's

_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")

_THREAD_BINDING = int(tirx.ForKind.THREAD_BINDING)


def _is_binding(loop) -> bool:
    return isinstance(loop, tirx.For) and int(loop.kind) == _THREAD_BINDING and loop.thread_binding is not None


def _where(node) -> str:
    where = source_of(node)
    return f" (at {where[0]}:{where[1]})" if where else ""


def thread_binding(start: Any, stop: Any = None, thread: str | None = None, *,
                   annotations: dict | None = None) -> Any:
    """`kr = T.thread_binding(0, 32, thread="threadIdx.x")` (or `for kr in ...`): inside
    `T.Kernel`, the kernel's own index of that thread tag, under the name `kr` (TVMScript's
    THREAD_BINDING loop, merged into the launch after parsing: see `bind_thread_loops`)."""
    frame = _builder.thread_binding(start, stop, thread, annotations=annotations)
    kernels = _kernel_stack()
    if kernels:
        tag = thread if thread is not None else stop
        launched = dict(zip(_TAGS, kernels[-1].threads))
        if tag not in launched:
            threads = ", ".join(f"{t} ({e})" for t, e in launched.items())
            raise ValueError(f"T.thread_binding: thread={tag!r} is not launched by the enclosing T.Kernel, "
                             f"which launches {threads}; bind one of those")
        loop_extent = (stop - start) if thread is not None and stop is not None else start
        if not _equal(tirx.convert(loop_extent), tirx.convert(launched[tag])):
            raise ValueError(f"T.thread_binding: {tag} runs over {loop_extent} values here but T.Kernel "
                             f"launches {launched[tag]} threads of it; give the launched extent (or use "
                             f"T.get_thread_binding())")
    return frame


def _equal(a, b) -> bool:
    if isinstance(a, tirx.IntImm) and isinstance(b, tirx.IntImm):
        return int(a.value) == int(b.value)
    from tvm import sym

    try:
        return bool(sym.Analyzer().can_prove(a == b))
    except Exception:  # noqa: BLE001 - an extent the analyzer cannot compare is not equal
        return False


def bind_thread_loops(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with every THREAD_BINDING loop merged into the launch of its thread tag."""
    loops: list = []
    tvm_ffi.structural_walk(func.body, ((tirx.For, lambda f: loops.append(f) if _is_binding(f) else None),))
    if not loops:
        return func
    launched: dict[str, list] = {}
    box: list = []

    def on_launch(attr):
        if box or attr.attr_key != "thread_extent":
            return attr
        iv = attr.node
        tag = str(iv.thread_tag)
        launched.setdefault(tag, []).append(attr.value)

        def on_loop(loop):
            if box or not _is_binding(loop) or str(loop.thread_binding.thread_tag) != tag:
                return loop
            if not _equal(loop.extent, attr.value):
                box.append(ValueError(
                    f"T.thread_binding over {loop.loop_var.name} has extent {loop.extent}, but the "
                    f"kernel launches {tag} with {attr.value} threads{_where(loop)}; give the launched "
                    f"extent (or use T.get_thread_binding())"))
                return loop
            zero = isinstance(loop.min, tirx.IntImm) and int(loop.min.value) == 0
            index = iv.var if zero else loop.min + iv.var
            by_handle = {loop.loop_var.__chandle__(): index}
            return tvm_ffi.structural_map(loop.body, ((tirx.Var, lambda v: by_handle.get(v.__chandle__(), v)),))

        body = tvm_ffi.structural_map(attr.body, ((tirx.For, on_loop),))
        return tirx.AttrStmt(attr.node, attr.attr_key, attr.value, body, span=attr.span)

    body = tvm_ffi.structural_map(func.body, ((tirx.AttrStmt, on_launch),))
    if box:
        raise box[0]
    left: list = []
    tvm_ffi.structural_walk(body, ((tirx.For, lambda f: left.append(f) if _is_binding(f) else None),))
    if left:
        loop = left[0]
        tag = str(loop.thread_binding.thread_tag)
        threads = ", ".join(f"{t} ({', '.join(str(e) for e in extents)})"
                            for t, extents in sorted(launched.items()) if t.startswith("threadIdx")) or "none"
        raise ValueError(
            f"T.thread_binding over {loop.loop_var.name} binds {tag}, which no enclosing T.Kernel "
            f"launches{_where(loop)}; the kernel's thread indices: {threads}. Use T.thread_binding "
            f"inside `with T.Kernel(..., threads=...)` with one of them")
    return func.with_body(body)
