"""Functions of several launches (`with T.Kernel` one after another) sharing `T.alloc_global`
workspaces, compiled to one kernel object and run on the CPU backend: a split/combine flash
decoding checked element by element against NumPy in float64, symbolic workspace shapes,
the eager style, the profiler, the disk cache and export/load."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime import KernelCallError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from multi_launch_programs import SHAPE, decode_inputs, decode_reference, split_decode, symbolic_workspace  # noqa: E402


def assert_matches(out, ref, tol=1e-5):
    out = np.asarray(out)
    assert out.shape == ref.shape and np.isfinite(out).all(), "an element was never written (still NaN)"
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


@pytest.fixture(scope="module")
def decode_kernel():
    return tilelang.compile(split_decode(**SHAPE), target="cpu")


def test_split_and_combine_share_their_workspaces(decode_kernel):
    meta = decode_kernel.meta
    assert [m.entry for m in meta.launches] == ["decode_launch0", "decode_launch1"]
    assert [m.grid for m in meta.launches] == [(2, 2, 4), (8, 2, 1)]
    assert [(w.name, w.shape) for w in meta.workspaces] == [("glse", (2, 8, 4)), ("Output_partial", (2, 8, 4, 16))]
    assert [p.name for p in decode_kernel.params] == ["Q", "K", "V", "Output"]
    source = decode_kernel.get_kernel_source()
    assert "decode_launch0(" in source and "decode_launch1(" in source
    for seed in range(3):  # the second call and later go through the guard
        q, k, v = decode_inputs(seed)
        out = np.full((SHAPE["batch"], SHAPE["heads"], SHAPE["dim"]), np.nan, dtype=np.float32)
        assert decode_kernel(q, k, v, out) is None
        assert_matches(out, decode_reference(q, k, v))
    assert decode_kernel._guard is not None


def test_outputs_of_out_idx_and_torch_tensors():
    torch = pytest.importorskip("torch")
    kernel = tilelang.compile(split_decode(**SHAPE), out_idx=[3], target="cpu")
    q, k, v = decode_inputs(7)
    ref = decode_reference(q, k, v)
    assert_matches(kernel(q, k, v), ref)
    for _ in range(2):
        out = kernel(*(torch.from_numpy(x) for x in (q, k, v)))
        assert isinstance(out, torch.Tensor)
        assert_matches(out.numpy(), ref)


def test_profiler_runs_every_launch():
    kernel = tilelang.compile(split_decode(**SHAPE), out_idx=[3], target="cpu")
    profiler = kernel.get_profiler()

    def reference(q, k, v):
        import torch

        return torch.from_numpy(decode_reference(q.numpy(), k.numpy(), v.numpy()).astype(np.float32))

    pytest.importorskip("torch")
    profiler.assert_allclose(reference, atol=1e-4, rtol=1e-4)
    assert profiler.do_bench(warmup=1, rep=2) > 0


def test_export_and_load_round_trip(decode_kernel, tmp_path):
    decode_kernel.export(tmp_path / "decode")
    names = sorted(p.name for p in (tmp_path / "decode").iterdir())
    assert names == ["decode_launch0.bin", "decode_launch1.bin", "kernel.json", "kernel.src"]
    meta = json.loads((tmp_path / "decode" / "kernel.json").read_text())
    assert [m["entry"] for m in meta["launches"]] == ["decode_launch0", "decode_launch1"]
    loaded = tilelang.load(tmp_path / "decode")
    assert loaded.meta == decode_kernel.meta
    q, k, v = decode_inputs(3)
    out = np.full((SHAPE["batch"], SHAPE["heads"], SHAPE["dim"]), np.nan, dtype=np.float32)
    loaded(q, k, v, out)
    assert_matches(out, decode_reference(q, k, v))


def test_disk_cache_hit_runs(tmp_path, monkeypatch):
    from tilelang_core.jit import api

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(api, "_MEMO", {})
    first = tilelang.compile(symbolic_workspace(), out_idx=[1], target="cpu")
    monkeypatch.setattr(api, "_MEMO", {})
    second = tilelang.compile(symbolic_workspace(), out_idx=[1], target="cpu")
    assert not first.cache_hit and second.cache_hit
    assert second.meta == first.meta and second.binary == first.binary and len(second.binary) == 2
    a = np.random.default_rng(4).standard_normal((11, 4)).astype(np.float32)
    np.testing.assert_allclose(second(a), (a[:, 0] + a[:, 3]) * 10.0 + np.arange(11) // 8, rtol=1e-6)


@pytest.mark.parametrize("n", [5, 16, 29])
def test_symbolic_workspace_shapes(n):
    kernel = tilelang.compile(symbolic_workspace(), out_idx=[1], target="cpu")
    assert [w.shape for w in kernel.meta.workspaces] == [("n",), ("(n + 7) // 8 * 8",)]
    a = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
    for _ in range(2):  # the second call through the guard, which sizes the workspaces too
        out = kernel(a)
        np.testing.assert_allclose(out, (a[:, 0] + a[:, 3]) * 10.0 + np.arange(n) // 8, rtol=1e-6)
    assert "ws1 = allocate(x0, (W1_0(values), ), 'float32')" in kernel._guard.source


def test_workspaces_need_a_tensor_argument_to_allocate_like():
    @T.prim_func
    def main(B: T.Tensor((8,), "float32")):
        ws = T.alloc_global((8,), "float32")
        with T.Kernel(1, threads=8) as bx:
            for i in T.serial(8):
                ws[i] = T.float32(i)
        with T.Kernel(1, threads=8) as bx:
            for i in T.serial(8):
                B[i] = ws[7 - i]

    kernel = tilelang.compile(main, out_idx=[0], target="cpu")
    with pytest.raises(KernelCallError, match="tensor input"):
        kernel()


# -- the eager style ---------------------------------------------------------------------------


@tilelang.jit
def scale_then_sum(A, tmp, block: int = 8):
    """Two launches of different grids; the second reads what the first wrote to `tmp`."""
    N, M = T.const("N, M")
    A: T.Tensor((N, M), T.float32)
    tmp: T.Tensor((N, M), T.float32)
    B = T.empty((M,), T.float32)

    with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
        for i in T.serial(block):
            if bx * block + i < N:
                tmp[bx * block + i, by] = A[bx * block + i, by] * 2.0

    with T.Kernel(M, threads=16) as bx:
        acc = T.alloc_var(T.float32, init=0.0)
        for i in T.serial(N):
            acc += tmp[i, bx]
        B[bx] = acc

    return B


@tilelang.jit
def sum_through_workspace(A, block: int = 8):
    """The eager style with a workspace: `T.alloc_global` before the first launch."""
    N, M = T.const("N, M")
    A: T.Tensor((N, M), T.float32)
    B = T.empty((M,), T.float32)
    partial = T.alloc_global((N, M), T.float32)

    with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
        for i in T.serial(block):
            if bx * block + i < N:
                partial[bx * block + i, by] = A[bx * block + i, by] * 2.0

    with T.Kernel(M, threads=16) as bx:
        acc = T.alloc_var(T.float32, init=0.0)
        for i in T.serial(N):
            acc += partial[i, bx]
        B[bx] = acc

    return B


def test_eager_function_of_two_launches():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((19, 6)).astype(np.float32)
    tmp = np.full_like(a, np.nan)
    out = scale_then_sum(a, tmp)
    np.testing.assert_allclose(tmp, a * 2.0, rtol=1e-6)
    np.testing.assert_allclose(out, (a.astype(np.float64) * 2.0).sum(0), rtol=1e-5)
    kernel = scale_then_sum.compile(N=19, M=6)
    assert len(kernel.meta.launches) == 2 and kernel.meta.out_idx == (2,)


def test_eager_function_with_a_workspace():
    a = np.random.default_rng(2).standard_normal((21, 5)).astype(np.float32)
    np.testing.assert_allclose(sum_through_workspace(a), (a.astype(np.float64) * 2.0).sum(0), rtol=1e-5)
    kernel = sum_through_workspace.compile(N=21, M=5)
    assert [w.name for w in kernel.meta.workspaces] == ["partial"]
    assert [p.name for p in kernel.params] == ["A", "B"]


def test_a_body_without_t_kernel_with_a_workspace_runs_as_one_block():
    """TileLang's CPU style (no `with T.Kernel`) with a workspace: one launch of that body."""

    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        ws = T.alloc_global((8,), "float32")
        for i in T.serial(8):
            ws[i] = A[i] * 3.0
        for i in T.serial(8):
            B[i] = ws[7 - i]

    kernel = tilelang.compile(main, out_idx=[1], target="cpu")
    a = np.arange(8, dtype=np.float32) + 1.0
    assert len(kernel.meta.launches) == 1
    np.testing.assert_array_equal(kernel(a), a[::-1] * 3.0)
