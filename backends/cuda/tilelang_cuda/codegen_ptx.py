"""Printer rules of the CUDA dialect for TVM's warp-level PTX builtins, which TileLang's
`T.ptx_mma` / `T.ptx_ldmatrix` build (`tilelang_cuda.language`) and TVM's own
`T.ptx_legacy.mma` / `T.ptx_legacy.ldmatrix` spell directly:

    tirx.ptx_legacy.ldmatrix(trans, num, ".b16", dst, dst_offset, src, src_offset)
      -> tl::ldmatrix_x<num>[_trans](reinterpret_cast<uint32_t*>(dst + dst_offset), src + src_offset);
    tirx.ptx_legacy.mma(shape, "row", "col", A, B, C, a, a_offset, b, b_offset, c, c_offset, saturate)
      -> tl::mma_<shape>_<A>_<C>(reinterpret_cast<C*>(c + c_offset),
                                 reinterpret_cast<const uint32_t*>(a + a_offset),
                                 reinterpret_cast<const uint32_t*>(b + b_offset),
                                 reinterpret_cast<const C*>(c + c_offset));

Offsets count elements of the pointer's buffer, as in TVM's CUDA codegen; the helpers are
those of `tl_cuda_mma.h` (which the file then includes). A form the header lacks is a
`CodegenError` naming it and the supported ones.
"""
from __future__ import annotations

from tvm import ir, tirx

from tilelang_core.codegen import CodegenError
from tilelang_core.codegen import PREC_ADD, PREC_ATOM

from .language import mma_instruction

__all__ = ["PTX_OPS", "ptx_call_handlers"]

LDMATRIX_OP = "tirx.ptx_legacy.ldmatrix"
MMA_OP = "tirx.ptx_legacy.mma"
PTX_OPS = (LDMATRIX_OP, MMA_OP)


def _pointer(codegen, ptr, offset) -> str:
    """`ptr + offset` in C, without `+ 0`."""
    if isinstance(offset, tirx.IntImm) and offset.value == 0:
        return codegen.expr(ptr)
    return f"{codegen._paren(ptr, PREC_ADD)} + {codegen._paren(offset, PREC_ADD, right=True)}"


def _constant(value, what: str, call) -> int:
    if not isinstance(value, tirx.IntImm):
        raise CodegenError(f"{call.op.name}: {what} must be a constant, got {value}")
    return int(value.value)


def _ldmatrix(codegen, e) -> tuple[str, int]:
    if len(e.args) != 7:
        raise CodegenError(f"{LDMATRIX_OP} takes (trans, num, dtype, dst, dst_offset, src, src_offset), "
                           f"got {len(e.args)} arguments")
    trans, num, dtype, dst, dst_offset, src, src_offset = e.args
    count = _constant(num, "num", e)
    if count not in (1, 2, 4):
        raise CodegenError(f"ldmatrix of {count} matrices; PTX loads 1, 2 or 4 (.x1/.x2/.x4)")
    kind = str(dtype.value) if isinstance(dtype, ir.StringImm) else str(dtype)
    if kind.lstrip(".") != "b16":
        raise CodegenError(f"ldmatrix of {kind!r} elements; this backend prints the .b16 form only "
                           f"(which also moves 8-bit data in pairs)")
    suffix = "_trans" if _constant(trans, "trans", e) else ""
    regs = f"reinterpret_cast<uint32_t*>({_pointer(codegen, dst, dst_offset)})"
    return f"tl::ldmatrix_x{count}{suffix}({regs}, {_pointer(codegen, src, src_offset)})", PREC_ATOM


def _mma(codegen, e) -> tuple[str, int]:
    if len(e.args) not in (13, 14):
        raise CodegenError(f"{MMA_OP} takes (shape, A_layout, B_layout, A_dtype, B_dtype, C_dtype, a, a_offset, "
                           f"b, b_offset, c, c_offset, saturate[, operator]), got {len(e.args)} arguments")
    shape, a_layout, b_layout, a_dtype, b_dtype, c_dtype, a, a_off, b, b_off, c, c_off, saturate = e.args[:13]
    if len(e.args) == 14:
        raise CodegenError(f"{MMA_OP} with operator {e.args[13]}: only plain multiply-add is supported")
    try:
        helper, c_type = mma_instruction(shape, a_layout, b_layout, a_dtype, b_dtype, c_dtype, saturate)
    except ValueError as exc:
        raise CodegenError(str(exc)) from None
    acc = _pointer(codegen, c, c_off)
    text = (f"{helper}(reinterpret_cast<{c_type}*>({acc}), "
            f"reinterpret_cast<const uint32_t*>({_pointer(codegen, a, a_off)}), "
            f"reinterpret_cast<const uint32_t*>({_pointer(codegen, b, b_off)}), "
            f"reinterpret_cast<const {c_type}*>({acc}))")
    return text, PREC_ATOM


def ptx_call_handlers(codegen) -> dict:
    """Op name -> handler(call) -> (text, precedence), for `CUDACodegen.call_handlers`."""
    return {LDMATRIX_OP: lambda e: _ldmatrix(codegen, e), MMA_OP: lambda e: _mma(codegen, e)}
