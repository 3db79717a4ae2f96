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


def test_gemm_clear_accum_known_at_run_time():
    """TileLang's FlashMLA example writes `T.gemm(..., clear_accum=(j == 0))` in a loop: C is
    cleared on the iterations where the condition holds."""
    import numpy as np

    import tilelang_core as tilelang

    @T.prim_func
    def main(A: T.Tensor((64, 128), "float32"), B: T.Tensor((128, 32), "float32"), C: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float32")
            B_s = T.alloc_shared((32, 32), "float32")
            C_l = T.alloc_fragment((64, 32), "float32")
            T.fill(C_l, 1000.0)  # garbage the first clear must remove
            for k in T.serial(4):
                T.copy(A[0, k * 32], A_s)
                T.copy(B[k * 32, 0], B_s)
                T.gemm(A_s, B_s, C_l, clear_accum=(k == 0))
            T.copy(C_l, C)

    rng = np.random.default_rng(4)
    a, b = rng.random((64, 128), dtype=np.float32), rng.random((128, 32), dtype=np.float32)
    c = np.full((64, 32), np.nan, np.float32)
    tilelang.compile(main, target="cpu")(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4)


def test_parallel_takes_tilelangs_prefer_async_hint():
    """TileLang's minference example writes `T.Parallel(n, prefer_async=True, annotations={...})`:
    hints that leave the loop's meaning alone."""
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64, prefer_async=True,
                                annotations={"parallel_async_without_async_commit_wait": True}):
                B[i] = A[i]

    import numpy as np

    import tilelang_core as tilelang

    a, b = np.arange(64, dtype=np.float32), np.full(64, np.nan, np.float32)
    tilelang.compile(main, target="cpu")(a, b)
    np.testing.assert_array_equal(b, a)


def test_parallel_annotations_must_be_a_dict():
    import pytest

    import tilelang_core as tilelang

    with pytest.raises(Exception, match="annotations must be a dict"):
        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64) as bx:
                for i in T.Parallel(64, annotations=["async"]):
                    A[i] = 0.0

        tilelang.compile(main, target="cpu")
