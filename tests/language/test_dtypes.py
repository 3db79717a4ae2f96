"""Dtypes: strings that are also callable constructors."""
import numpy as np
import pytest
import tvm
from tvm import tirx

from tilelang_core import language as T

from .helpers import allocations


def test_dtype_objects_are_strings():
    assert T.float16 == "float16" and isinstance(T.float16, str)
    assert T.bfloat16 == "bfloat16" and T.float8_e4m3fn == "float8_e4m3fn"
    assert T.float8_e5m2 == "float8_e5m2" and T.bool == "bool" and T.uint8 == "uint8"
    for name in ("float32", "float64", "int8", "int16", "int32", "int64"):
        assert getattr(T, name) == name


def test_dtype_objects_make_constants_and_casts():
    one = T.float32(1.0)
    assert isinstance(one, tirx.FloatImm) and str(one.ty) == "float32" and float(one.value) == 1.0
    assert str(T.int8(3).ty) == "int8" and int(T.int8(3)) == 3
    x = tirx.Var("x", "int32")
    assert isinstance(T.float16(x), tirx.Cast) and str(T.float16(x).ty) == "float16"


def test_to_dtype_spellings():
    assert T.to_dtype("float") == "float32"
    assert T.to_dtype("half") == "float16"
    assert T.to_dtype(np.float16) == "float16"
    assert T.to_dtype(np.dtype("int8")) == "int8"
    with pytest.raises(TypeError, match="unknown dtype 'floaty'"):
        T.to_dtype("floaty")


def test_dtype_objects_in_tensors_and_allocations():
    @T.prim_func
    def main(A: T.Tensor((16, 16), T.bfloat16), B: T.Buffer((16,), "float")):
        with T.Kernel(1) as bx:
            S = T.alloc_shared((16, 16), T.bfloat16)
            F = T.alloc_fragment((16,), T.float32)
            T.copy(A, S)
            T.copy(F, B)

    a, b = main.params
    assert str(a.dtype) == "bfloat16" and str(b.dtype) == "float32"
    allocs = allocations(main)
    assert str(allocs["S"].dtype) == "bfloat16" and str(allocs["F"].dtype) == "float32"
    tvm.ir.assert_structural_equal(main, tvm.script.from_source(main.script()))


def test_scalar_params():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), n: T.int32, alpha: T.float32):
        with T.Kernel(1) as bx:
            for i in T.serial(n):
                A[i] = A[i] * alpha

    assert [str(p.ty) for p in main.params[1:]] == ["int32", "float32"]
    assert [p.name for p in main.params] == ["A", "n", "alpha"]


def test_short_spellings_are_canonical_and_sub_byte_ints_have_names():
    from tilelang_core import language as T

    assert T.dtype("uint") == T.uint == "uint32" and T.dtype("int") == T.int32
    assert T.dtype("float") == "float32" and T.dtype("float16") == T.float16
    assert T.int4 == "int4" and T.uint4 == "uint4" and T.uint2 == "uint2"
