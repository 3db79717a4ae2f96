"""T.macro: the body is pasted where the macro is called, and a final `return <expr>` is the
call's value (TileLang's macros); a `return` elsewhere is refused with its line."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.language.parser import KernelSyntaxError


@T.macro
def _plus_one(x):
    return x + 1


@T.macro
def _double_into(buf, i):
    buf[i] = buf[i] * 2


def test_a_macro_value_and_a_macro_statement():
    @T.prim_func
    def main(A: T.Tensor((32,), "int32"), n: T.int32):
        with T.Kernel(n, threads=32) as _:
            for i in T.Parallel(32):
                A[i] = _plus_one(A[i])
            for i in T.serial(32):
                _double_into(A, i)

    a = np.arange(32, dtype=np.int32)
    tilelang.compile(main, target="cpu")(a, 1)
    np.testing.assert_array_equal(a, (np.arange(32) + 1) * 2)


def test_a_return_before_the_end_is_refused():
    @T.macro
    def early(x):
        if x > 0:
            return x
        return x + 1

    with pytest.raises(KernelSyntaxError, match="`return` is allowed only as the last statement"):
        @T.prim_func
        def main(A: T.Tensor((4,), "int32")):
            for i in T.serial(4):
                A[i] = early(A[i])
