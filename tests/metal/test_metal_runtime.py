"""The Metal runtime off a Mac: it says why it cannot run, exports still work, and the launch
path it takes on a Mac (torch.mps) is checked against a stand-in for torch.mps that records
what the kernel is called with: the tensors themselves (`Runtime.takes_tensors`), scalars as
Python numbers, `threads` = grid x threadgroup, `group_size` = threadgroup."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_metal import runtime as metal_runtime
from tilelang_metal.detect import detect


def scale(N=256, block=128):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), alpha: T.float32, n: T.int32):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = alpha * X[bx * block + i]
    return main


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the behaviour off macOS")
def test_off_macos_detection_and_call_say_why(tmp_path):
    for det in detect():
        assert not det.device and not det.toolchain and "macOS" in det.reason
    kernel = tilelang.compile(scale(), out_idx=[1], target="metal/apple-m2", cache=False)
    assert "kernel" in kernel.get_kernel_source()
    with pytest.raises(metal_runtime.MetalRuntimeUnavailable, match="macOS"):
        kernel(np.ones(256, np.float32), 2.0, 256)
    kernel.export(tmp_path / "k")  # compile here, run on a Mac
    assert (tmp_path / "k").is_dir()
    assert "[[kernel" in tilelang.load(tmp_path / "k").get_kernel_source()


def test_scalar_transport_and_dispatch_size():
    assert metal_runtime.scalar_bytes("int32", -3) == (-3).to_bytes(8, "little", signed=True)
    assert metal_runtime.scalar_bytes("float16", 1.5) == np.float32(1.5).tobytes()
    assert metal_runtime.dispatch_size((4, 2, 1), (128, 1, 1)) == ([512, 2, 1], [128, 1, 1])


def test_launch_through_torch_mps_passes_tensors(monkeypatch):
    torch = pytest.importorskip("torch")
    calls = []

    class Library:
        def __init__(self, source):
            self.source = source

        def __getattr__(self, entry):
            def function(*args, threads, group_size):
                calls.append((entry, args, threads, group_size))
            return function

    fake = types.SimpleNamespace(
        mps=types.SimpleNamespace(compile_shader=Library, synchronize=lambda: None),
        empty=torch.empty, from_numpy=torch.from_numpy, float32=torch.float32)
    monkeypatch.setattr(metal_runtime, "_torch_mps", lambda: fake)
    monkeypatch.setattr(metal_runtime, "metal_launcher_problem", lambda: None)
    kernel = tilelang.compile(scale(), out_idx=[1], target="metal/apple-m2", cache=False)
    x = torch.ones(256, dtype=torch.float32)
    for _ in range(2):  # the second call would take the guard of a pointer-passing runtime
        y = kernel(x, 2.0, 200)
    assert len(calls) == 2
    entry, args, threads, group = calls[-1]
    assert entry == "main_kernel" and args[0] is x and args[1] is y
    assert args[2:] == (2.0, 200) and isinstance(args[3], int)
    assert (threads, group) == ([256, 1, 1], [128, 1, 1])
    assert tuple(y.shape) == (256,) and y.dtype == torch.float32
