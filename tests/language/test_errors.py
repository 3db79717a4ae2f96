"""Errors name what failed and the user's line, as readable text (never a C++ trace)."""
import subprocess
import sys
import textwrap

import pytest
from tvm.error import DiagnosticError

from tilelang_core import language as T
from tilelang_core.language import KernelSyntaxError


def _line_of(func, text):
    import inspect

    lines, start = inspect.getsourcelines(func)
    hits = [start + n for n, line in enumerate(lines) if text in line]
    assert len(hits) == 1
    return hits[0]


def test_unknown_name_names_the_attribute_and_the_line():
    def build():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, threads=128) as bx:
                S = T.alloc_shared((64, 64), "float16")
                T.copyy(A, S)

    with pytest.raises(KernelSyntaxError) as info:
        build()
    message = str(info.value)
    assert "T.copyy" in message and "did you mean T.copy?" in message
    assert f"{__file__}:{_line_of(build, 'T.copyy')}" in message
    assert "T.copyy(A, S)" in message  # the offending line is shown
    assert isinstance(info.value, DiagnosticError)


def test_unknown_name_outside_a_kernel():
    with pytest.raises(AttributeError, match="T.not_a_thing is not part of the tilelang_core language"):
        T.not_a_thing  # noqa: B018


def test_gemm_with_mismatched_k():
    def build():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, threads=128) as bx:
                a = T.alloc_shared((64, 32), "float16")
                b = T.alloc_shared((64, 64), "float16")
                c = T.alloc_fragment((64, 64), "float32")
                T.gemm(a, b, c)

    with pytest.raises(KernelSyntaxError) as info:
        build()
    message = str(info.value)
    assert "T.gemm: K of A is 32 but K of B is 64" in message
    assert "a (64, 32)" in message and "b (64, 64)" in message
    assert f"{__file__}:{_line_of(build, 'T.gemm(a, b, c)')}" in message


def test_gemm_transpose_fixes_k():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((32, 64), "float16")
            b = T.alloc_shared((64, 32), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(a, b, c, transpose_A=True, transpose_B=True)

    assert "T.tl.gemm" in main.script()


def test_gemm_with_wrong_output_shape():
    with pytest.raises(KernelSyntaxError, match=r"A @ B is \(64, 64\) but C is \(32, 64\)"):
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, threads=128) as bx:
                a = T.alloc_shared((64, 32), "float16")
                b = T.alloc_shared((32, 64), "float16")
                c = T.alloc_fragment((32, 64), "float32")
                T.gemm(a, b, c)


def test_copy_with_mismatched_explicit_regions():
    def build():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, threads=128) as bx:
                a = T.alloc_shared((64, 32), "float16")
                T.copy(A[0:64, 0:64], a)

    with pytest.raises(KernelSyntaxError) as info:
        build()
    message = str(info.value)
    assert "T.copy: source A (64, 64) and destination a (64, 32) differ in shape" in message
    assert f"{__file__}:{_line_of(build, 'T.copy(A[0:64, 0:64], a)')}" in message


def test_copy_ignores_unit_dims():
    @T.prim_func
    def main(A: T.Tensor((4, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64,), "float16")
            T.copy(A[1:2, 0:64], a)

    assert "T.tl.copy" in main.script()


def test_copy_between_two_points_is_an_error():
    with pytest.raises(KernelSyntaxError, match="both single points"):
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, threads=128) as bx:
                T.copy(A[0, 0], B[0, 0])


def test_reduce_into_the_wrong_shape():
    with pytest.raises(KernelSyntaxError, match=r"reducing x \(64, 32\) over dim 1 gives \(64,\)"):
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, threads=128) as bx:
                x = T.alloc_fragment((64, 32), "float")
                r = T.alloc_fragment((32,), "float")
                T.reduce_max(x, r, dim=1)


def test_block_atomic_has_no_previous_value():
    with pytest.raises(KernelSyntaxError, match="needs a point destination and a scalar value"):
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=128) as bx:
                B[0, 0] = T.atomic_add(A, 1.0, return_prev=True)


def test_uncaught_error_prints_its_message(tmp_path):
    """TVM's excepthook reduces an uncaught DiagnosticError to a bare note; ours prints."""
    script = textwrap.dedent(
        """
        from tilelang_core import language as T

        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1) as bx:
                T.fil(A, 0)
        """
    )
    kernel = tmp_path / "kernel.py"
    kernel.write_text(script)
    result = subprocess.run([sys.executable, str(kernel)], capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "KernelSyntaxError" in result.stderr
    assert "T.fil is not part of the tilelang_core language" in result.stderr
    assert "did you mean T.fill" in result.stderr
    assert f"{kernel}:7:" in result.stderr


def test_kernel_without_source_says_why(tmp_path):
    script = textwrap.dedent(
        """
        from tilelang_core import language as T

        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1) as bx:
                T.fill(A, 0)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "cannot read the source of main" in result.stderr
