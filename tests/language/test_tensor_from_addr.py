"""T.make_tensor_from_addr: a tensor over a device address held in a 64-bit integer (here an
element of a table of pointers), run on the CPU against NumPy and printed for CUDA."""
import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


def gather_rows():
    """Row r of Out is 2 * (the 8 floats at address Table[r])."""

    @T.prim_func
    def main(Table: T.Tensor((3,), "int64"), Out: T.Tensor((3, 8), "float32")):
        with T.Kernel(3, threads=8) as bx:
            row = T.make_tensor_from_addr(Table[bx], (8,), "float32")
            for i in T.Parallel(8):
                Out[bx, i] = row[i] * 2.0

    return main


def test_rows_behind_a_table_of_addresses_are_read_on_cpu():
    rows = [np.arange(8, dtype=np.float32) + 10 * r for r in range(3)]
    table = np.array([rows[2].ctypes.data, rows[0].ctypes.data, rows[1].ctypes.data], np.int64)
    out = np.zeros((3, 8), np.float32)
    tilelang.compile(gather_rows(), target="cpu")(table, out)
    np.testing.assert_array_equal(out, 2 * np.stack([rows[2], rows[0], rows[1]]))


def test_cuda_source_casts_the_address_to_the_tensors_pointer():
    pytest.importorskip("tilelang_cuda")
    source = tilelang.compile(gather_rows(), target="cuda/sm_80", cache=False).get_kernel_source()
    assert "float* row = (float*)(__builtin_bit_cast(void*, Table[" in source


def test_a_32_bit_address_is_refused():
    with pytest.raises(Exception, match="addr must be a 64-bit integer"):
        @T.prim_func
        def main(Table: T.Tensor((3,), "int32"), Out: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8):
                row = T.make_tensor_from_addr(Table[0], (8,), "float32")
                for i in T.Parallel(8):
                    Out[i] = row[i]
