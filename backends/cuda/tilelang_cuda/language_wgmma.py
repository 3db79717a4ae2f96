"""TileLang's names for hand-written wgmma code (sm_90a), offered as `T.<name>` by the plugin:

- descriptors: `T.alloc_wgmma_desc()` / `T.alloc_descriptor("wgmma")` (one uint64 in
  registers), `T.initialize_wgmma_descriptor(desc, start_address, layout_type, lbo, sbo)`
  (PTX ISA "Matrix Descriptor Format": start address, leading and stride byte offsets >> 4,
  swizzle mode `layout_type` 0 none, 1 128B, 2 64B, 3 32B), `T.increase_descriptor_offset(desc,
  offset)` (`offset` bytes further, as `offset >> 4` in the address field);
- `T.ptx_wgmma_ss(dtype, "m64n{N}k{K}", a_is_k_major, b_is_k_major, a_type, b_type, c_type,
  A_desc, A_offset, B_desc, B_offset, C_data, C_offset, scale_out, scale_in_a, scale_in_b)`:
  one `wgmma.mma_async` with both operands in shared memory (descriptor + offset, in 16-byte
  units) into the accumulator registers at `C_data` + `C_offset`; `scale_out` 0 overwrites;
- `T.ptx_wgmma_rs(...)`: the same with A from this thread's registers (`A_buf` + `A_offset`);
- `T.warpgroup_fence_operand(acc, offset, num_regs)`: keeps the compiler from moving accesses
  of those accumulator registers across the point (between a wgmma and its wait).

Each prints a helper of `tl_cuda_wgmma.h`; forms that header lacks are refused by name.
"""
from __future__ import annotations

import re
from typing import Any

from tvm import ir, tirx
from tvm.tirx import is_buffer_var

from tilelang_core import language as T

__all__ = ["WGMMA_LANGUAGE_NAMES"]

_OPERANDS = {"fp16": "f16", "f16": "f16", "float16": "f16", "bf16": "bf16", "bfloat16": "bf16", "tf32": "tf32",
             "float32": "tf32", "e4m3": "e4m3", "fp8_e4m3": "e4m3", "float8_e4m3": "e4m3", "float8_e4m3fn": "e4m3",
             "e5m2": "e5m2", "fp8_e5m2": "e5m2", "float8_e5m2": "e5m2", "s8": "s8", "int8": "s8"}
_ACCUMULATORS = {"fp32": "f32", "f32": "f32", "float32": "f32", "s32": "s32", "int32": "s32"}
_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32}


def _text(value: Any) -> str:
    return str(value.value) if isinstance(value, ir.StringImm) else str(value)


def _flag(value: Any, name: str, what: str) -> bool:
    value = bool(value.value) if isinstance(value, tirx.IntImm) else value
    if not isinstance(value, bool) and value not in (0, 1):
        raise ValueError(f"T.{name}: {what} must be a constant bool, got {value!r}")
    return bool(value)


def _descriptor_load(descriptor: Any, name: str) -> ir.TensorLoad:
    if is_buffer_var(descriptor):
        descriptor = descriptor[0]
    if not (isinstance(descriptor, ir.TensorLoad) and str(descriptor.source.dtype) == "uint64"):
        raise TypeError(f"T.{name}: expects a descriptor of T.alloc_wgmma_desc(), got {descriptor}")
    return descriptor


def alloc_descriptor(kind: str = "wgmma", dtype: Any = "uint64") -> Any:
    """One 64-bit matrix descriptor in registers (kind "wgmma"; tcgen05 kinds are Blackwell's)."""
    if kind != "wgmma":
        raise ValueError(f"T.alloc_descriptor: kind {kind!r} is Blackwell's (tcgen05), which no target here declares; "
                         f"use 'wgmma'")
    if str(T.to_dtype(dtype)) != "uint64":
        raise ValueError(f"T.alloc_descriptor: a wgmma descriptor is uint64, got {dtype}")
    return T.alloc_local((1,), "uint64")


def alloc_wgmma_desc(dtype: Any = "uint64") -> Any:
    """`T.alloc_descriptor("wgmma")`."""
    return alloc_descriptor("wgmma", dtype)


def initialize_wgmma_descriptor(descriptor: Any, start_address: Any, layout_type_: Any = 0,
                                leading_byte_offset: Any = 0, stride_byte_offset: Any = 0) -> None:
    """Write the descriptor of the shared tile at `start_address` (a pointer, or an element)."""
    load = _descriptor_load(descriptor, "initialize_wgmma_descriptor")
    if not isinstance(start_address, ir.Call):
        start_address = T.access_ptr(start_address, "r", extent=1)
    layout = int(layout_type_.value) if isinstance(layout_type_, tirx.IntImm) else layout_type_
    if layout not in (0, 1, 2, 3):
        raise ValueError(f"T.initialize_wgmma_descriptor: layout_type_ must be 0 (none), 1 (128B), 2 (64B) or 3 "
                         f"(32B swizzle), got {layout_type_!r}")
    value = tirx.call_extern("uint64", "tl::wgmma_desc", start_address,
                             tirx.const(int(leading_byte_offset), "uint32"), tirx.const(int(stride_byte_offset), "uint32"),
                             tirx.const(layout, "uint32"))
    from tvm.tirx.script.builder import ir as _builder

    _builder.buffer_store(load.source, value, list(load.indices))


def increase_descriptor_offset(descriptor: Any, offset: Any) -> None:
    """Move the descriptor's start address `offset` bytes further."""
    load = _descriptor_load(descriptor, "increase_descriptor_offset")
    offset = tirx.const(offset, "uint64") if isinstance(offset, int) else tirx.Cast("uint64", offset)
    from tvm.tirx.script.builder import ir as _builder

    _builder.buffer_store(load.source, load + tirx.shift_right(offset, tirx.const(4, "uint64")), list(load.indices))


def _register_pointer(data: Any, offset: Any, access: str, name: str) -> ir.Expr:
    if isinstance(data, ir.Call) and str(getattr(data.op, "name", "")) == "tirx.buffer_data":
        data = data.args[0]
    if is_buffer_var(data):
        flat = T.Tensor((1 << 20,), str(data.dtype), data=data.data, scope=str(data.scope())) if len(data.shape) != 1 else data
        return T.access_ptr(flat[offset], access, extent=1)
    if isinstance(data, ir.TensorLoad):
        return T.access_ptr(data, access, extent=1)
    raise TypeError(f"T.{name}: expects an accumulator buffer (or its .data / an element), got {data}")


def ptx_wgmma_ss(dtype: Any, wgmma_prefix: Any, a_is_k_major: Any, b_is_k_major: Any, a_dtype_abbrv: Any,
                 b_dtype_abbrv: Any, accum_dtype_abbrv: Any, A_desc: Any, A_offset: Any, B_desc: Any,  # noqa: N803
                 B_offset: Any, C_data: Any, C_offset: Any, scale_out: Any, scale_in_a: Any = True,  # noqa: N803
                 scale_in_b: Any = True) -> ir.Call:
    """One wgmma.mma_async, both operands from shared memory (see the module)."""
    name = "ptx_wgmma_ss"
    shape = re.fullmatch(r"m64n(\d+)k(\d+)", _text(wgmma_prefix))
    a, b = _OPERANDS.get(_text(a_dtype_abbrv)), _OPERANDS.get(_text(b_dtype_abbrv))
    acc = _ACCUMULATORS.get(_text(accum_dtype_abbrv))
    if shape is None or a is None or a != b or acc is None or _K[a] != int(shape.group(2)):
        raise ValueError(f"T.{name}: {_text(wgmma_prefix)} {_text(a_dtype_abbrv)} x {_text(b_dtype_abbrv)} -> "
                         f"{_text(accum_dtype_abbrv)} is not a wgmma form this backend prints (m64nNk16 f16/bf16, "
                         f"m64nNk8 tf32, m64nNk32 e4m3/e5m2/s8, one operand type)")
    n = int(shape.group(1))
    if not (8 <= n <= 256 and n % 8 == 0) or (a == "s8" and n > 224):
        raise ValueError(f"T.{name}: N={n} must be a multiple of 8 from 8 to 256 (224 for s8)")
    if not (_flag(scale_in_a, name, "scale_in_a") and _flag(scale_in_b, name, "scale_in_b")):
        raise ValueError(f"T.{name}: negated operands (scale_in_a/scale_in_b False) are not supported; negate an input")
    ta, tb = not _flag(a_is_k_major, name, "a_is_k_major"), not _flag(b_is_k_major, name, "b_is_k_major")
    template = ""
    if a in ("f16", "bf16"):
        template = f"<{int(ta)}, {int(tb)}>"
    elif ta or tb:
        raise ValueError(f"T.{name}: {a} operands must both be K-major")
    helper = f"tl::wgmma_m64n{n}k{_K[a]}_{acc}_{a}{template}"
    desc_a = _descriptor_load(A_desc, name) + tirx.Cast("uint64", A_offset if isinstance(A_offset, ir.Expr) else tirx.const(A_offset, "int64"))
    desc_b = _descriptor_load(B_desc, name) + tirx.Cast("uint64", B_offset if isinstance(B_offset, ir.Expr) else tirx.const(B_offset, "int64"))
    scale = scale_out if isinstance(scale_out, ir.Expr) else tirx.const(int(bool(scale_out)), "int32")
    return tirx.call_extern("handle", helper, _register_pointer(C_data, C_offset, "rw", name), desc_a, desc_b,
                            tirx.Cast("int32", scale))


def ptx_wgmma_rs(dtype: Any, wgmma_prefix: Any, b_is_k_major: Any, a_dtype_abbrv: Any, b_dtype_abbrv: Any,
                 accum_dtype_abbrv: Any, A_buf: Any, A_offset: Any, B_desc: Any, B_offset: Any,  # noqa: N803
                 C_data: Any, C_offset: Any, scale_out: Any, scale_in_a: Any = True,  # noqa: N803
                 scale_in_b: Any = True) -> ir.Call:
    """One wgmma.mma_async with A from registers (`A_buf` + `A_offset` elements: this
    thread's A fragment, PTX ISA "Register fragments, wgmma .m64nNk16 A") and B from shared
    memory (descriptor + offset); f16/bf16 (k16) or tf32 (k8) into f32."""
    name = "ptx_wgmma_rs"
    shape = re.fullmatch(r"m64n(\d+)k(\d+)", _text(wgmma_prefix))
    a, b = _OPERANDS.get(_text(a_dtype_abbrv)), _OPERANDS.get(_text(b_dtype_abbrv))
    acc = _ACCUMULATORS.get(_text(accum_dtype_abbrv))
    if shape is None or a not in ("f16", "bf16", "tf32") or a != b or acc != "f32" or _K[a] != int(shape.group(2)):
        raise ValueError(f"T.{name}: {_text(wgmma_prefix)} {_text(a_dtype_abbrv)} x {_text(b_dtype_abbrv)} -> "
                         f"{_text(accum_dtype_abbrv)} is not a register-A wgmma form this backend prints "
                         f"(m64nNk16 f16/bf16 or m64nNk8 tf32 into fp32)")
    n = int(shape.group(1))
    if not (8 <= n <= 256 and n % 8 == 0):
        raise ValueError(f"T.{name}: N={n} must be a multiple of 8 from 8 to 256")
    if not (_flag(scale_in_a, name, "scale_in_a") and _flag(scale_in_b, name, "scale_in_b")):
        raise ValueError(f"T.{name}: negated operands (scale_in_a/scale_in_b False) are not supported; negate an input")
    tb = not _flag(b_is_k_major, name, "b_is_k_major")
    if a == "tf32" and tb:
        raise ValueError(f"T.{name}: tf32 B must be K-major")
    helper = f"tl::wgmma_m64n{n}k{_K[a]}_rs_f32_{a}" + ("" if a == "tf32" else f"<{int(tb)}>")
    a_pointer = _register_pointer(A_buf, A_offset, "r", name)
    if a != "tf32":
        a_pointer = tirx.call_extern("handle", "tl::as_words", a_pointer)
    desc_b = _descriptor_load(B_desc, name) + tirx.Cast("uint64", B_offset if isinstance(B_offset, ir.Expr) else tirx.const(B_offset, "int64"))
    scale = scale_out if isinstance(scale_out, ir.Expr) else tirx.const(int(bool(scale_out)), "int32")
    return tirx.call_extern("handle", helper, _register_pointer(C_data, C_offset, "rw", name), a_pointer, desc_b,
                            tirx.Cast("int32", scale))


def warpgroup_fence_operand(buffer_or_ptr: Any, offset: Any = 0, num_regs: Any = None, dtype: Any = None) -> ir.Call:
    """Pin `num_regs` accumulator registers (default: the whole buffer) at this point."""
    name = "warpgroup_fence_operand"
    buf = buffer_or_ptr.args[0] if isinstance(buffer_or_ptr, ir.Call) and str(getattr(buffer_or_ptr.op, "name", "")) \
        == "tirx.buffer_data" else buffer_or_ptr
    source = buf.source if isinstance(buf, ir.TensorLoad) else buf
    if not is_buffer_var(source):
        raise TypeError(f"T.{name}: expects an accumulator buffer, its .data or an element, got {buffer_or_ptr}")
    if str(source.dtype) not in ("float32", "int32", "uint32"):
        raise ValueError(f"T.{name}: fences float32, int32 or uint32 registers, {source.name} is {source.dtype}")
    if num_regs is None:
        if isinstance(buf, ir.TensorLoad):
            raise ValueError(f"T.{name}: give num_regs with an element")
        num_regs = 1
        for extent in source.shape:
            num_regs *= int(extent)
    count = int(num_regs.value) if isinstance(num_regs, tirx.IntImm) else num_regs
    if not isinstance(count, int) or count <= 0:
        raise ValueError(f"T.{name}: num_regs must be a positive constant, got {num_regs!r}")
    pointer = T.access_ptr(buf, "rw", extent=count) if isinstance(buf, ir.TensorLoad) else \
        _register_pointer(source, offset, "rw", name)
    return tirx.call_extern("handle", f"tl::wgmma_fence_operands<{count}>", pointer)


WGMMA_LANGUAGE_NAMES = {
    "alloc_descriptor": alloc_descriptor,
    "alloc_wgmma_desc": alloc_wgmma_desc,
    "initialize_wgmma_descriptor": initialize_wgmma_descriptor,
    "increase_descriptor_offset": increase_descriptor_offset,
    "ptx_wgmma_ss": ptx_wgmma_ss,
    "ptx_wgmma_rs": ptx_wgmma_rs,
    "warpgroup_fence_operand": warpgroup_fence_operand,
}
