"""T.has_let_value / T.get_let_value: the value `x: T.let = expr` bound, asked while parsing."""
import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


def test_a_let_binding_is_seen_and_its_value_used():
    seen = {}

    def note(name, value):
        seen[name] = value

    @T.prim_func
    def main(A: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=8) as bx:
            x: T.let = bx * 2 + 3
            y = bx + 1  # a mutable local scalar, not a binding
            z = T.bind(bx + 7)
            note("z", str(T.get_let_value(z)))
            note("x", T.has_let_value(x))
            note("y", T.has_let_value(y))
            for i in T.serial(8):
                note("i", T.has_let_value(i))
                A[i] = T.get_let_value(x) + i

    assert seen == {"x": True, "y": False, "i": False, "z": "bx + 7"}
    a = np.zeros(8, np.int32)
    tilelang.compile(main, target="cpu")(a)
    np.testing.assert_array_equal(a, np.arange(8) + 3)  # bx = 0: x's value, 3, plus i


def test_get_let_value_is_none_without_a_binding_and_outside_a_kernel():
    from tvm import tirx

    v = tirx.Var("v", "int32")
    assert T.get_let_value(v) is None and T.has_let_value(v) is False
    with pytest.raises(TypeError, match=r"T.get_let_value: expects a variable"):
        T.get_let_value(3)
