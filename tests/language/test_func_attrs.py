"""Function attributes set from inside `with T.Kernel(...)` (TileLang's programs call
`T.disable_warp_group_reg_alloc()` and `T.annotate_pass_configs(...)` after their allocations)."""
from __future__ import annotations

import pytest

from tilelang_core import language as T


def test_attributes_set_inside_the_kernel_reach_the_function():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((128,), "float32")
            T.annotate_pass_configs({"tl.disable_tma_lower": True})
            T.annotate_restrict_buffers(A)
            for i in T.Parallel(128):
                S[i] = A[i]
            for i in T.Parallel(128):
                A[i] = S[127 - i]

    assert dict(main.attrs["tilelang.pass_configs"]) == {"tl.disable_tma_lower": 1}
    assert list(main.attrs["tl.non_restrict_params"]) == ["A"]
    assert "__tilelang_func_attr__" not in main.script()  # the markers are gone from the body


def test_outside_a_kernel_it_is_an_error():
    from tilelang_core.ir import set_func_attr

    with pytest.raises(RuntimeError, match="inside a kernel body"):
        set_func_attr("tl.example", 1)
