"""Code the kernel calls but does not define: `T.import_source`, `T.access_ptr`, `T.dp4a`.

`T.import_source(code)` puts `code` (functions in the target's source language) into the
generated module, ahead of the kernel; the kernel calls them with `T.call_extern(name, *args,
dtype=...)`. In the IR the texts are the PrimFunc attribute `pragma_import_c`, each once (see
`tilelang_core.ir.imports`: the call leaves a marker that `@T.prim_func` hoists there).

`T.access_ptr(base, "r" | "w" | "rw", offset=, extent=)` is a pointer to an element of a
buffer for an extern call, in the IR
`tvm_access_ptr(type_annotation(dtype), address_of(buf[indices]), 0, extent, rw_mask)`: the
load keeps the buffer visible to the passes (a layout that moves the element moves the
pointer) and the mask tells barrier placement that a callee writes there.
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx
from tvm.tirx import is_buffer_var
from tvm.tirx.script.builder import ir as _builder

from tilelang_core.codegen import builtins
from tilelang_core.ir.imports import import_source_marker

__all__ = ["access_ptr", "dp4a", "import_source"]

_ACCESS_MASKS = {"r": 1, "w": 2, "rw": 3}


def import_source(source: str | None = None) -> None:
    """Put `source` (code in the target's language) into the generated module, ahead of the
    kernel; None imports nothing (TileLang's programs pass None when they need no helper)."""
    if source is None:
        return None
    if not isinstance(source, str):
        raise TypeError(f"T.import_source: source must be a str of code in the target's language "
                        f"(or None), got {type(source).__name__}")
    marker = import_source_marker(source)
    with _builder.attr(marker.node, marker.attr_key, marker.value):
        _builder.evaluate(marker.body.value)
    return None


# --- pointers ----------------------------------------------------------------------------------


def _access_mask(access_type: Any) -> int:
    if isinstance(access_type, str) and access_type in _ACCESS_MASKS:
        return _ACCESS_MASKS[access_type]
    if isinstance(access_type, int) and not isinstance(access_type, bool) and 1 <= access_type <= 3:
        return access_type
    raise ValueError(f"T.access_ptr: access_type must be 'r', 'w', 'rw' (or the mask 1, 2, 3), "
                     f"got {access_type!r}")


def _as_int_expr(value: Any, what: str) -> ir.Expr:
    if isinstance(value, bool) or not isinstance(value, (int, ir.Expr)):
        raise TypeError(f"T.access_ptr: {what} must be an int or an integer expression, "
                        f"got {type(value).__name__} {value!r}")
    return tirx.IntImm("int32", value) if isinstance(value, int) else value


def _base(base: Any) -> tuple[ir.Var, list, list | None, bool]:
    """(buffer, element indices, region extents or None, whether `base` was a point)."""
    if isinstance(base, _builder.scalar_wrapper):  # a T.alloc_var scalar: its one element
        base = base.scalar
    if is_buffer_var(base):
        return base, [tirx.IntImm("int32", 0) for _ in base.shape], list(base.shape), False
    if isinstance(base, ir.TensorRegion):
        return base.source, [r.min for r in base.region], [r.extent for r in base.region], False
    if isinstance(base, ir.TensorLoad) and is_buffer_var(base.source):
        for index in base.indices:
            if isinstance(index, tirx.Ramp):
                raise ValueError(f"T.access_ptr: {base} indexes a vector of elements; point at its "
                                 f"first element instead")
        return base.source, list(base.indices), None, True
    raise TypeError(f"T.access_ptr: base must be a buffer, a region like A[0:16] or an element "
                    f"like A[i, j], got {type(base).__name__} {base}")


def access_ptr(base: Any, access_type: str | int = "r", *extents: Any, offset: Any = 0,
               extent: Any = None, ignore_last_ndim: int = 0) -> ir.Call:
    """A pointer to `base` for an extern call, with the access the callee makes there.

    `base`: a buffer (its first element), a region (its first element) or an element `A[i, j]`.
    `access_type`: "r", "w" or "rw" (or the mask 1, 2, 3). `offset`: elements past `base`
    (1-D buffers only). `extent` (or per-axis `*extents`, multiplied): how many elements the
    callee touches; default one element for an element base, the region or buffer otherwise.
    `ignore_last_ndim`: the last that many indices are taken as 0.
    """
    mask = _access_mask(access_type)
    buf, indices, region_extents, is_point = _base(base)
    if len(extents) == 1 and isinstance(extents[0], (list, tuple)):
        extents = tuple(extents[0])
    ndim = len(indices)
    ignore_last_ndim = int(ignore_last_ndim)
    if not 0 <= ignore_last_ndim <= ndim:
        raise ValueError(f"T.access_ptr: ignore_last_ndim={ignore_last_ndim} for the {ndim}-D buffer "
                         f"{buf.name}; give 0 to {ndim}")
    if ignore_last_ndim:
        indices = indices[:ndim - ignore_last_ndim] + [tirx.IntImm("int32", 0)] * ignore_last_ndim
    offset = _as_int_expr(offset, "offset")
    if not (isinstance(offset, tirx.IntImm) and int(offset.value) == 0):
        if ndim != 1:
            raise ValueError(f"T.access_ptr: offset= needs a 1-D buffer, {buf.name} has {ndim} dims; "
                             f"index the element instead (T.access_ptr({buf.name}[i, j + off], ...))")
        indices = [indices[0] + offset]
    if extent is not None:
        total = _as_int_expr(extent, "extent")
    elif extents:
        if len(extents) > ndim:
            raise ValueError(f"T.access_ptr: {len(extents)} extents for the {ndim}-D buffer {buf.name}")
        total = tirx.IntImm("int32", 1)
        for e in extents:
            total = total * _as_int_expr(e, "an extent")
    elif is_point:
        total = tirx.IntImm("int32", 1)
    else:
        total = tirx.IntImm("int32", 1)
        for e in region_extents:
            total = total * e
    address = tirx.address_of(tirx.BufferLoad(buf, indices))
    dtype = str(buf.dtype)
    return tirx.tvm_access_ptr(tirx.type_annotation(dtype), address, 0, total, mask)


# --- dp4a ------------------------------------------------------------------------------------


def dp4a(A: Any, B: Any, C: Any) -> ir.Call:
    """`C[c] += A[a]*B[b] + A[a+1]*B[b+1] + A[a+2]*B[b+2] + A[a+3]*B[b+3]` over int8 `A`, `B`
    and an int32 `C` (TileLang's `T.dp4a`); each argument is an element (or a buffer: its
    first element). One instruction where the target has a 4-way byte dot product."""
    pointers = []
    for name, arg, want, access in (("A", A, "int8", "r"), ("B", B, "int8", "r"), ("C", C, "int32", "rw")):
        buf = _base(arg)[0] if not isinstance(arg, _builder.scalar_wrapper) else arg.scalar.source
        if str(buf.dtype) != want:
            raise ValueError(f"T.dp4a: {name} must be {want}, got {buf.name} of {buf.dtype}"
                             + ("; dp4a multiplies signed bytes into an int32 sum" if want == "int8" else
                                "; the accumulator is int32"))
        pointers.append(access_ptr(arg, access, extent=4 if want == "int8" else 1))
    return builtins.dp4a(*pointers)

