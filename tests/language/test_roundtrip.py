"""print(func) is readable TVMScript that parses back structurally equal."""
import pytest
import tvm

from . import programs


@pytest.mark.parametrize("name", sorted(programs.ALL_PROGRAMS))
def test_printed_kernel_parses_back_equal(name):
    func = programs.ALL_PROGRAMS[name]()
    text = func.script()
    assert "T.tl." in text or name in ("elementwise_add", "scalar_vars", "loop_kinds")
    reparsed = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(func, reparsed)
    # and the reparsed text is stable
    assert reparsed.script() == text


def test_printed_gemm_reads_like_the_kernel():
    text = str(programs.matmul(1024, 1024, 1024, 128, 128, 32))
    for expected in (
        'bx = T.launch_thread("blockIdx.x", 8)',
        'tx = T.launch_thread("threadIdx.x", 128)',
        'A_shared = T.alloc_buffer((128, 32), "float16", scope="shared.dyn")',
        'scope="local.fragment"',
        'T.tl.use_swizzle(10, "row")',
        'annotations={"num_stages": 3}',
        "T.tl.copy(T.tl.region(A[by * 128, ko * 32], 1, 128, 32), T.tl.region(A_shared[0, 0], 2, 128, 32))",
        "T.tl.gemm(T.tl.region(A_shared[0, 0], 1, 128, 32), T.tl.region(B_shared[0, 0], 1, 32, 128), "
        "T.tl.region(C_local[0, 0], 3, 128, 128), 0, 0, 0, 0, 128, 128, 32)",
        "for i in T.parallel(128):",
    ):
        assert expected in text, expected
