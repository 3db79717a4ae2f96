"""verify_buffer_init: on-chip buffers read before anything writes them are reported on stderr
(TileLang's VerifyBufferInit), as a TVM pass and in the core's pipeline."""
from __future__ import annotations

import tvm

from tilelang_core import language as T
from tilelang_core.transform.buffer_init import MESSAGE, VerifyBufferInit, uninitialized_reads


@T.prim_func
def _accumulate(A: T.Tensor((16, 16), "float32"), C: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, threads=64) as _:
        a = T.alloc_shared((16, 16), "float32")
        c = T.alloc_fragment((16, 16), "float32")
        T.copy(A, a)
        T.gemm(a, a, c)
        T.copy(c, C)


@T.prim_func
def _orders(A: T.Tensor((16,), "float32"), C: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=64) as _:
        s = T.alloc_shared((16,), "float32")  # read first, written by a later statement: fine
        f = T.alloc_fragment((16,), "float32")  # written only after its read: reported
        x = T.alloc_local((1,), "float32")  # carried forward from nothing: reported
        for i in T.Parallel(16):
            C[i] = s[i] + f[i]
        T.copy(A, s)
        T.clear(f)
        for i in T.serial(16):
            x[0] = T.max(x[0], A[i])
        C[0] = x[0]


@T.prim_func
def _initialized(A: T.Tensor((16, 16), "float32"), C: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, threads=64) as _:
        a = T.alloc_shared((16, 16), "float32")
        c = T.alloc_fragment((16, 16), "float32")
        T.copy(A, a)
        for k in T.serial(2):
            T.gemm(a, a, c, clear_accum=(k == 0))
        T.copy(c, C)


def test_reads_before_writes_by_scope():
    reads = uninitialized_reads(_orders)
    assert [(r.buffer, r.gemm_accumulator) for r in reads] == [("f", False), ("x", False)]
    (acc,) = uninitialized_reads(_accumulate)
    assert acc.buffer == "c" and acc.gemm_accumulator and acc.reader == "T.gemm"
    assert uninitialized_reads(_initialized) == []


def test_pass_reports_once_and_honours_the_config(capfd):
    VerifyBufferInit()(tvm.IRModule.from_expr(_orders))
    err = capfd.readouterr().err
    assert err.count(MESSAGE) == 1 and "2 buffer(s)" in err and "clear_accum=True" not in err
    VerifyBufferInit()(tvm.IRModule.from_expr(_accumulate))
    assert "clear_accum=True" in capfd.readouterr().err


def test_pipeline_step_is_silenced_by_the_option(capfd):
    from tilelang_core.jit.options import CompileOptions
    from tilelang_core.transform.buffer_init import verify_buffer_init

    class Ctx:
        options = CompileOptions.from_pass_configs({"tl.disable_buffer_init_check": True})

    verify_buffer_init(_accumulate, Ctx())
    assert MESSAGE not in capfd.readouterr().err
    verify_buffer_init(_accumulate, None)
    assert MESSAGE in capfd.readouterr().err
