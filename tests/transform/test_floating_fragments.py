"""Fragments read or written outside `T.Parallel` ("floating", in TileLang's word): a serial
loop filling `frag[0, i]`, a `(1,)` accumulator cleared by a scalar `T.fill`. Every thread
holds a copy (`replicated_fragment`) and runs that code on it; the fragment stays in
registers. Before the fix such a fragment went to shared memory, and a `(1, N)` tile reduced
into one lost its declaration ("buffer 'x' is used but not declared").

Evidence: the CPU runs each kernel against NumPy; the HIP host emulation (threads of a block
as host threads) runs the SIMT code; cuda/sm_90a and hip/gfx942 compile with the fragments in
registers (no shared buffer for them)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.layout import replicated_fragment

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hip"))
from hip_emulator import emulate, host_compiler  # noqa: E402

COMPILE_TARGETS = ("cuda/sm_90a", "hip/gfx942")


def serial_fill(rows: int, n: int, threads: int = 128):
    """frag (1, n) filled in a serial loop, then read by a T.Parallel."""

    @T.prim_func
    def main(A: T.Tensor((rows, n), "float32"), B: T.Tensor((rows, n), "float32")):
        with T.Kernel(rows, threads=threads) as bx:
            frag = T.alloc_fragment((1, n), "float32")
            for i in T.serial(n):
                frag[0, i] = A[bx, i] * 2.0
            for i in T.Parallel(n):
                B[bx, i] = frag[0, i] + 1.0

    return main


def chunked_row_sum(rows: int, n: int, bn: int, threads: int = 256):
    """One row per block, summed in chunks of bn through a (1, bn) fragment into (1,)."""

    @T.prim_func
    def main(X: T.Tensor((rows, n), "float32"), Y: T.Tensor((rows,), "float32")):
        with T.Kernel(rows, threads=threads) as bx:
            x = T.alloc_fragment((1, bn), "float32")
            acc = T.alloc_fragment((1,), "float32")
            T.fill(acc, 0.0)
            for k in T.serial(T.ceildiv(n, bn)):
                T.copy(X[bx, k * bn], x)
                T.reduce_sum(x, acc, dim=1, clear=False)
            for i in T.Parallel(1):
                Y[bx + i] = acc[i]

    return main


def reduce_serial_fill(rows: int, n: int):
    """A floating (1, n) fragment reduced into floating (1,) fragments: every thread holds
    the whole row, so the sum must not add the copies of other threads in."""

    @T.prim_func
    def main(A: T.Tensor((rows, n), "float32"), Y: T.Tensor((rows, 2), "float32")):
        with T.Kernel(rows, threads=64) as bx:
            frag = T.alloc_fragment((1, n), "float32")
            total = T.alloc_fragment((1,), "float32")
            top = T.alloc_fragment((1,), "float32")
            for i in T.serial(n):
                frag[0, i] = A[bx, i]
            T.reduce_sum(frag, total, dim=1)
            T.reduce_max(frag, top, dim=1)
            Y[bx, 0] = total[0]
            Y[bx, 1] = top[0]

    return main


def _report(kernel) -> dict:
    return {e["fragment"]: e for e in json.loads(kernel.meta.extra["layout_report"])}


def _inputs(rows, n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, n)).astype(np.float32)


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    if host_compiler() is None:
        pytest.skip("no host C++20 compiler for the HIP emulation")
    return tmp_path_factory.mktemp("floating-emu")


def test_replicated_fragment_holds_everything_everywhere():
    f = replicated_fragment((2, 3), 4)
    assert f.fully_replicated and f.replicate == 4 and f.slots == 6
    assert f.holders(1, 2) == (0, 1, 2, 3) and f.slot_of(1, 2) == 5
    assert not replicated_fragment((2, 3), 1).replicate > 1


@pytest.mark.parametrize("target", COMPILE_TARGETS)
def test_serial_fill_stays_in_registers(target):
    kernel = tilelang.compile(serial_fill(4, 64), target=target)
    report = _report(kernel)["frag"]
    assert report["placement"] == "registers" and report["layout"] == "replicated", report
    source = kernel.get_kernel_source()
    assert "frag_reg[64]" in source
    assert "__shared__" not in source and "tl_dyn_smem" not in source


@pytest.mark.parametrize("target", COMPILE_TARGETS)
def test_one_row_reduction_compiles(target):
    kernel = tilelang.compile(chunked_row_sum(4, 4096, 2048), target=target)
    report = _report(kernel)
    assert report["x"]["placement"] == "registers" and report["acc"]["placement"] == "registers", report
    assert "acc_reg" in kernel.get_kernel_source()


def test_serial_fill_runs_on_cpu():
    a = _inputs(4, 64, 0)
    b = np.full_like(a, np.nan)
    tilelang.compile(serial_fill(4, 64), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


@pytest.mark.parametrize("n", [4096, 3000])  # whole chunks and a ragged tail
def test_one_row_reduction_runs_on_cpu(n):
    x = _inputs(3, n, 1)
    y = np.full(3, np.nan, np.float32)
    tilelang.compile(chunked_row_sum(3, n, 2048), target="cpu")(x, y)
    np.testing.assert_allclose(y, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)


def test_floating_fragments_run_on_simt(emu_dir):
    a = _inputs(3, 64, 2)
    b = np.full_like(a, np.nan)
    emulate(tilelang.compile(serial_fill(3, 64, threads=64), target="hip/gfx942"), emu_dir)(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)
    x = _inputs(2, 1000, 3)
    y = np.full(2, np.nan, np.float32)
    emulate(tilelang.compile(chunked_row_sum(2, 1000, 256, threads=128), target="hip/gfx942"), emu_dir)(x, y)
    np.testing.assert_allclose(y, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)


def test_large_floating_fragment_goes_to_shared_with_reason():
    kernel = tilelang.compile(serial_fill(2, 512), target="hip/gfx942")
    report = _report(kernel)["frag"]
    assert report["placement"] == "shared"
    assert "outside T.Parallel" in report["reason"] and "512" in report["reason"]


def test_reduction_of_a_replicated_fragment_counts_each_element_once(emu_dir):
    a = _inputs(3, 64, 4)
    expect = np.stack([a.astype(np.float64).sum(1), a.max(1)], axis=1)
    kernel = tilelang.compile(reduce_serial_fill(3, 64), target="hip/gfx942")
    assert {e["placement"] for e in _report(kernel).values()} == {"registers"}
    for run in (emulate(kernel, emu_dir), tilelang.compile(reduce_serial_fill(3, 64), target="cpu")):
        y = np.full((3, 2), np.nan, np.float32)
        run(a, y)
        np.testing.assert_allclose(y, expect, rtol=1e-5, atol=1e-5)
