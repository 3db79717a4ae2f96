"""Dtype names TileLang's examples use: `T.dtype(torch_dtype)` (block_causal_attention),
`dtype.bits`, `tilelang.language.dtypes._TORCH_DTYPE_TO_STR` (gemm_sp), and pointer tables
`T.Tensor([n], T.ptr)` read back by `T.make_tensor` (grouped_gemm_fwd_ptr)."""
from __future__ import annotations

import pytest

from tilelang_core import language as T
from tilelang_core.language import dtypes


def test_dtype_of_a_torch_or_numpy_dtype_is_its_name():
    torch = pytest.importorskip("torch")
    import numpy as np

    assert T.dtype(torch.float16) == T.float16 and repr(T.dtype(torch.float16)) == "T.float16"
    assert T.dtype(torch.bfloat16) == "bfloat16"
    assert T.dtype(np.int8) == "int8"
    assert T.dtype("half") == "float16"  # the string spellings keep working
    with pytest.raises(TypeError, match="unknown dtype"):
        T.dtype(object())


def test_bits_and_lanes():
    assert (T.float16.bits, T.int4.bits, T.float32.bits) == (16, 4, 32)
    assert (T.float16x2.lanes, T.float16.lanes) == (2, 1)


def test_torch_dtype_tables():
    torch = pytest.importorskip("torch")
    table = dtypes._TORCH_DTYPE_TO_STR
    assert table[torch.half] == table[torch.float16] == "float16"
    assert table[torch.int] == "int32" and table[torch.bool] == "bool"
    assert torch.complex64 not in table  # no counterpart here: left out, not mis-named
    assert dtypes._STR_TO_TORCH_DTYPE["bfloat16"] is torch.bfloat16
    assert dtypes.dtype is dtypes.DType
    with pytest.raises(AttributeError):
        dtypes._NOT_A_TABLE  # noqa: B018


def test_pointer_table_parameters_and_tensors_made_from_addresses():
    @T.prim_func
    def gather(ptrs: T.Tensor([3], T.ptr), out: T.Tensor([3, 4], "float16")):
        with T.Kernel(3, threads=4) as bx:
            src = T.make_tensor(ptrs[bx], (4,), "float16")
            for i in T.Parallel(4):
                out[bx, i] = src[i]

    assert str(gather.params[0].ty.dtype) == "int64"  # the runtime passes addresses as int64
    text = gather.script()
    # the address is read, reinterpreted as a pointer and the view declared over it
    assert "T.reinterpret(T.handle().ty, ptrs[bx])" in text
    assert 'T.decl_buffer((4,), "float16", data=' in text


def test_make_tensor_refuses_an_address_of_the_wrong_width():
    from tilelang_core.language.parser import KernelSyntaxError

    with pytest.raises(KernelSyntaxError, match="64-bit integer"):
        @T.prim_func
        def bad(ptrs: T.Tensor([3], "int32"), out: T.Tensor([4], "float16")):
            with T.Kernel(1, threads=4) as bx:
                src = T.make_tensor(ptrs[bx], (4,), "float16")
                for i in T.Parallel(4):
                    out[i] = src[i]
