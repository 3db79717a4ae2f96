"""`T.print` and `T.device_assert`: the probes of the "printf" and "device_assert" features."""
from __future__ import annotations

from tilelang_core import language as T

from ..case import Arg, Raises, Spec, case

PRINT_MESSAGE = "conformance-print"
ASSERT_MESSAGE = "conformance-assert"
N = 8


def print_kernel(n: int):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((n,), "float32")
            T.copy(X, s)
            T.print(s, msg=PRINT_MESSAGE)
            T.copy(s, Y)

    return main


@case("debug.print", feature="debug", needs=("printf",), claims=("printf",))
def debug_print():
    """T.print of a shared tile: the run prints the message; the data passes through."""
    return Spec(print_kernel(N), [Arg("X", (N,), "float32"), Arg("Y", (N,), "float32", "out")],
                lambda X: {"Y": X}, stdout=PRINT_MESSAGE)


def assert_kernel(n: int, bound: float):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((n,), "float32")
            T.copy(X, s)
            T.device_assert(s[0] < bound, ASSERT_MESSAGE)
            for i in T.Parallel(n):
                Y[i] = s[i] + 1.0

    return main


@case("debug.assert.pass", feature="debug", needs=("device_assert",), claims=("device_assert",))
def assert_pass():
    """T.device_assert that holds: the kernel runs on and writes its output."""
    return Spec(assert_kernel(N, 2.0), [Arg("X", (N,), "float32"), Arg("Y", (N,), "float32", "out")],
                lambda X: {"Y": X + 1})


@case("debug.assert.fail", feature="debug", needs=("device_assert",), claims=("device_assert",),
      isolate=True, min_level="run")
def assert_fail():
    """T.device_assert that fails: the call raises an error that says an assertion failed."""
    return Spec(assert_kernel(N, 2.0),
                [Arg("X", (N,), "float32", low=3.0, high=4.0, signed=False), Arg("Y", (N,), "float32", "out")],
                raises=Raises(("Exception",), rf"{ASSERT_MESSAGE}|assert", "call"))
