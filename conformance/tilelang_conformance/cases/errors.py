"""Bad input must fail early with a clear message: at `@T.prim_func` (shapes that cannot
match, unknown names), in the compile path (what the target lacks), or at the call
(arguments that do not match the kernel's contract)."""
from __future__ import annotations

from tilelang_core import language as T

from ..case import Arg, NotApplicable, Raises, Spec, case
from .elementwise import axpy_kernel

# a parse-time error surfaces as the parser's diagnostic, the language's own error as its cause
_PARSE = ("ValueError", "KernelSyntaxError")

_CANDIDATE_DTYPES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float64",
                     "int64", "bfloat16", "float16", "int8")


def gemm_k_mismatch():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((16, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C)

    return main


@case("errors.gemm_k_mismatch", feature="errors")
def error_gemm():
    """T.gemm with A's K (32) unlike B's K (16) fails at parse time naming both."""
    return Spec(gemm_k_mismatch, raises=Raises(_PARSE, r"K of A is 32.*K of B is 16", "parse", True))


def copy_mismatch():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((32, 32), "float32")
            T.copy(A[0:16, 0:32], S)
            T.copy(S, B[0:32, 0:32])

    return main


@case("errors.copy_extent_mismatch", feature="errors")
def error_copy():
    """T.copy of a 16x32 region into a 32x32 tile fails at parse time with both shapes."""
    return Spec(copy_mismatch, raises=Raises(_PARSE, r"T\.copy.*\(16, 32\).*\(32, 32\)", "parse", True))


def reduce_mismatch():
    @T.prim_func
    def main(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((8, 64), "float32")
            y = T.alloc_fragment((16,), "float32")
            T.copy(X, x)
            T.reduce_sum(x, y, dim=1)
            T.copy(y, Y)

    return main


@case("errors.reduce_shape", feature="errors")
def error_reduce():
    """Reducing an 8x64 tile over dim 1 into 16 elements fails at parse time."""
    return Spec(reduce_mismatch, raises=Raises(_PARSE, r"reduc.*dim 1.*\(8,?\).*\(16,?\)", "parse", True))


def unknown_name():
    @T.prim_func
    def main(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((8, 64), "float32")
            y = T.alloc_fragment((8,), "float32")
            T.copy(X, x)
            T.reduce_summ(x, y, dim=1)
            T.copy(y, Y)

    return main


@case("errors.unknown_name", feature="errors")
def error_unknown():
    """A misspelled T.reduce_summ names itself and suggests T.reduce_sum."""
    return Spec(unknown_name, raises=Raises(("AttributeError", "KernelSyntaxError"),
                                            r"reduce_summ.*did you mean.*T\.reduce_sum\b", "parse", True))


def atomic_block_return_prev():
    @T.prim_func
    def main(Y: T.Tensor((8,), "float32"), P: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            P[0] = T.atomic_add(Y[0:8], 1.0, return_prev=True)

    return main


@case("errors.atomic_block_return_prev", feature="errors")
def error_atomic():
    """T.atomic_add(..., return_prev=True) into a block (not a point) fails at parse time: a
    block has no single previous value."""
    return Spec(atomic_block_return_prev, raises=Raises(("ValueError", "KernelSyntaxError"),
                                                        r"atomic_add.*point destination", "parse", True))


def _undeclared_dtype(target) -> str:
    for dtype in _CANDIDATE_DTYPES:
        if not target.capabilities.has(dtype):
            return dtype
    raise NotApplicable(f"{target} declares every dtype this check could use ({', '.join(_CANDIDATE_DTYPES)})")


@case("errors.undeclared_dtype", feature="errors")
def error_dtype(target):
    """A kernel on a dtype the target does not declare fails to compile, naming the dtype
    (before any toolchain sees the code)."""
    dtype = _undeclared_dtype(target)
    return Spec(axpy_kernel(256, dtype),
                raises=Raises(("Exception",), rf"(?=.*\b{dtype}\b)(?=.*(not support|does not|lacks|unsupported))", "compile", True))


def threads_kernel(threads: int):
    @T.prim_func
    def main(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            for i in T.Parallel(64):
                Y[i] = X[i]

    return main


@case("errors.too_many_threads", feature="errors")
def error_threads(target):
    """threads= twice the target's max_threads_per_block fails to compile, naming the count
    and the capability."""
    limit = target.capabilities.max_threads_per_block
    return Spec(threads_kernel(2 * limit),
                raises=Raises(("Exception",), rf"(?=.*\b{2 * limit}\b)(?=.*max_threads_per_block)", "compile", True))


def shared_kernel(n: int):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((n,), "float32")
            T.copy(X, S)
            T.copy(S, Y)

    return main


@case("errors.shared_memory_exceeded", feature="errors")
def error_shared(target):
    """A shared tile larger than the target's opt-in shared memory fails to compile, naming
    the capability."""
    n = target.capabilities.shared_memory_optin // 4 + 1024
    return Spec(shared_kernel(n), raises=Raises(("Exception",), r"(?=.*shared memory)(?=.*shared_memory_optin)", "compile", True))


def _call_spec(bad_call, pattern: str) -> Spec:
    n = 300
    args = [Arg("A", (n,), "float32"), Arg("B", (n,), "float32"), Arg("C", (n,), "float32", "out")]
    return Spec(axpy_kernel(n, "float32"), args, raises=Raises(("KernelCallError", "TypeError"), pattern, "call"),
                bad_call=bad_call)


@case("errors.call_dtype", feature="errors", min_level="run")
def error_call_dtype():
    """Calling with a float64 array where float32 is declared names the argument and dtypes."""
    return _call_spec(lambda args: [args[0].astype("float64"), *args[1:]], r"'A'.*float32.*float64")


@case("errors.call_shape", feature="errors", min_level="run")
def error_call_shape():
    """Calling with a (301,) array where (300,) is declared names the argument and shapes."""
    import numpy as np

    return _call_spec(lambda args: [np.concatenate([args[0], args[0][:1]]), *args[1:]], r"'A'.*shape.*300.*301")


@case("errors.call_arity", feature="errors", min_level="run")
def error_call_arity():
    """Calling with two arguments where three are declared says how many it takes."""
    return _call_spec(lambda args: args[:2], r"takes 3 argument.*got 2")
