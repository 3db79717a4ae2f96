"""`T.Ref` macro parameters: an assignment stores to the caller's variable; anything but a
variable is refused, naming the argument."""
import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


@T.macro
def set_to(x: T.Ref, value):
    x = value


@T.macro
def add_into(total: T.Ref, A, i):
    total = total + A[i]


def test_assignments_to_a_ref_parameter_store_to_the_callers_variable():
    @T.prim_func
    def main(A: T.Tensor((8,), "int32"), B: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=1):
            x = T.alloc_var(T.int32)
            set_to(x, 5)
            total = T.alloc_var(T.int32)
            set_to(total, 0)
            for i in T.serial(8):
                add_into(total, A, i)
            B[0] = x
            B[1] = total

    assert "x[0] = 5" in main.script()
    a = np.arange(8, dtype=np.int32)
    b = np.zeros(2, np.int32)
    tilelang.compile(main, target="cpu")(a, b)
    np.testing.assert_array_equal(b, [5, 28])


def test_an_element_or_a_value_is_refused_naming_the_argument():
    with pytest.raises(Exception, match=r"`x: T.Ref` is passed by reference .* got an element of a buffer"):
        @T.prim_func
        def element(A: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=1):
                set_to(A[3], 1)

    with pytest.raises(Exception, match=r"`x: T.Ref` is passed by reference .* got int 3"):
        @T.prim_func
        def value(A: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=1):
                set_to(3, 1)
