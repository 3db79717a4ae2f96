"""The JIT: compile/jit, the disk cache, export/load, tensors of both array libraries, and
the errors a caller meets at call time."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime import KernelCallError

ROOT = Path(__file__).resolve().parents[2]


def scale_kernel(n, factor=2.0, block=32):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] * factor
    return main


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_disk_cache_hit_and_invalidation(cache_dir):
    code = textwrap.dedent("""
        import sys; sys.path.insert(0, {root!r})
        import tilelang_core as tilelang
        from tests.jit.test_jit import scale_kernel
        k = tilelang.compile(scale_kernel(100, {factor}), out_idx=[1], target="cpu")
        import numpy as np
        x = np.random.default_rng().uniform(-1, 1, 100).astype(np.float32)
        assert np.allclose(k(x), x * {factor})
        print(k.cache_hit)
    """)

    def run(factor):
        out = subprocess.run([sys.executable, "-c", code.format(root=str(ROOT), factor=factor)],
                             capture_output=True, text=True, env=dict(os.environ), check=True)
        return out.stdout.strip()

    assert run(2.0) == "False"
    assert run(2.0) == "True"   # a fresh process finds it on disk
    assert run(3.0) == "False"  # the source changed: a new entry
    assert len(list((cache_dir / "kernels").glob("*/*/kernel.json"))) == 2


def test_concurrent_compiles_from_several_processes(cache_dir):
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(ROOT)!r})
        import numpy as np, tilelang_core as tilelang
        from tests.jit.test_jit import scale_kernel
        k = tilelang.compile(scale_kernel(257, 5.0), out_idx=[1], target="cpu")
        x = np.random.default_rng().uniform(-1, 1, 257).astype(np.float32)
        assert np.allclose(k(x), x * 5.0)
        print("ok", k.cache_hit)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=dict(os.environ)) for _ in range(4)]
    results = [p.communicate(timeout=300) for p in procs]
    for (out, err), p in zip(results, procs):
        assert p.returncode == 0, err
        assert out.startswith("ok")
    assert sum("False" in out for out, _ in results) == 1  # exactly one process built it
    assert len(list((cache_dir / "kernels").glob("*/*/kernel.json"))) == 1


def test_in_process_memo_is_fast(cache_dir):
    import time

    func = scale_kernel(64)
    first = tilelang.compile(func, out_idx=[1], target="cpu")
    start = time.perf_counter()
    again = tilelang.compile(func, out_idx=[1], target="cpu")
    assert again is first
    assert time.perf_counter() - start < 0.05


def test_export_and_load_in_fresh_process_without_tvm(tmp_path, cache_dir):
    kernel = tilelang.compile(scale_kernel(50, 4.0), out_idx=[1], target="cpu")
    kernel.export(tmp_path / "k")
    code = textwrap.dedent(f"""
        import sys
        sys.modules["tvm"] = None  # the runtime half must not need the compiler
        sys.path.insert(0, {str(ROOT)!r})
        import numpy as np, tilelang_core
        k = tilelang_core.load({str(tmp_path / "k")!r})
        x = np.random.default_rng().uniform(-1, 1, 50).astype(np.float32)
        assert np.allclose(k(x), x * 4.0)
        print("loaded", "tvm" in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "loaded False"
    assert "main" in (tmp_path / "k" / "kernel.src").read_text()


def test_jit_decorator_specializes_per_arguments(cache_dir):
    @tilelang.jit(out_idx=[1], target="cpu")
    def scaled(n, factor):
        return scale_kernel(n, factor)

    k1 = scaled(40, 2.0)
    assert scaled(40, 2.0) is k1
    k2 = scaled(40, 3.0)
    assert k2 is not k1
    x = np.random.default_rng().uniform(-1, 1, 40).astype(np.float32)
    assert np.allclose(k1(x), 2 * x) and np.allclose(k2(x), 3 * x)
    assert "main" in k1.get_kernel_source()
    # TileLang's JITFunction.get_kernel_source(args): the source before any call
    assert scaled.get_kernel_source(40, 3.0) == k2.get_kernel_source()


def test_torch_tensors_zero_copy_and_outputs_in_torch(cache_dir):
    torch = pytest.importorskip("torch")
    kernel = tilelang.compile(scale_kernel(70, 2.0), target="cpu")
    x = torch.rand(70, dtype=torch.float32) - 0.5
    y = torch.full((70,), float("nan"))
    kernel(x, y)  # writes into the caller's tensor: no copy
    assert torch.allclose(y, x * 2)
    with_out = tilelang.compile(scale_kernel(70, 2.0), out_idx=[1], target="cpu")
    out = with_out(x)
    assert isinstance(out, torch.Tensor) and torch.allclose(out, x * 2)


def test_call_time_errors_name_the_parameter(cache_dir):
    kernel = tilelang.compile(scale_kernel(30), target="cpu")
    good = np.ones(30, np.float32)
    with pytest.raises(KernelCallError, match=r"'X'.*expected shape \(30,\), got \(31,\)"):
        kernel(np.ones(31, np.float32), good)
    with pytest.raises(KernelCallError, match=r"'X'.*expected dtype float32, got float64"):
        kernel(np.ones(30, np.float64), good)
    with pytest.raises(KernelCallError, match=r"'Y'.*expected rank 1"):
        kernel(good, np.ones((30, 1), np.float32))
    with pytest.raises(KernelCallError, match=r"'X'.*contiguous"):
        kernel(np.ones(60, np.float32)[::2], good)
    with pytest.raises(KernelCallError, match=r"takes 2 argument"):
        kernel(good)
    with pytest.raises(KernelCallError, match=r"'X'.*expected a tensor"):
        kernel([1.0] * 30, good)


def test_call_time_device_error(cache_dir):
    torch = pytest.importorskip("torch")
    kernel = tilelang.compile(scale_kernel(8), target="cpu")

    class FakeDevice:
        """A tensor that says it lives on a GPU (DLPack device type 2)."""

        def __init__(self, t):
            self.t = t

        def __getattr__(self, name):
            return getattr(self.t, name)

        def __dlpack_device__(self):
            return (2, 0)

    FakeDevice.__module__ = "torch.fake"
    with pytest.raises(KernelCallError, match=r"'X'.*DLPack device type 2"):
        kernel(FakeDevice(torch.ones(8)), torch.ones(8))


def test_profiler_do_bench(cache_dir):
    kernel = tilelang.compile(scale_kernel(4096), out_idx=[1], target="cpu")
    ms = kernel.get_profiler().do_bench(warmup=2, rep=5)
    assert 0 < ms < 1000


def test_unknown_pass_config_lists_valid_keys(cache_dir):
    from tilelang_core.jit.options import OptionsError

    with pytest.raises(OptionsError, match="valid keys"):
        tilelang.compile(scale_kernel(8), target="cpu", pass_configs={"tl.no_such_option": True})


def test_unknown_target_error():
    with pytest.raises(ValueError, match="Valid kinds"):
        tilelang.compile(scale_kernel(8), target="vulkan")


def test_two_symbolic_dims_keep_their_order_through_export(tmp_path, cache_dir):
    m, k = T.symbolic("m"), T.symbolic("k")  # not in alphabetical order of first use

    @T.prim_func
    def main(X: T.Tensor((m, k), "float32"), Y: T.Tensor((m, k), "float32")):
        with T.Kernel(T.ceildiv(m, 8), threads=32) as bx:
            for i, j in T.Parallel(8, 16):
                if bx * 8 + i < m and j < k:
                    Y[bx * 8 + i, j] = X[bx * 8 + i, j] + 1.0

    kernel = tilelang.compile(main, out_idx=[1], target="cpu")
    kernel.export(tmp_path / "k")
    loaded = tilelang.load(tmp_path / "k")
    x = np.random.default_rng().uniform(-1, 1, (20, 5)).astype(np.float32)
    np.testing.assert_allclose(loaded(x), x + 1, rtol=1e-6)
    np.testing.assert_allclose(kernel(x), x + 1, rtol=1e-6)


def test_misaligned_tensor_is_refused_when_the_kernel_needs_alignment(cache_dir):
    from tilelang_core.runtime import KernelMeta, ParamSpec
    from tilelang_core.runtime.kernel import Kernel

    kernel = tilelang.compile(scale_kernel(16), target="cpu")
    meta = KernelMeta(**{**kernel.meta.__dict__, "extra": {**kernel.meta.extra, "tensor_alignment": 16}})
    strict = Kernel(meta, kernel.binary, kernel.runtime)
    base = np.zeros(40, np.float32)
    x, y = base[1:17], np.zeros(16, np.float32)  # x starts 4 bytes past an aligned address
    if x.__array_interface__["data"][0] % 16 == 0:
        x = base[2:18]
    with pytest.raises(KernelCallError, match="16-byte"):
        strict(x, y)
    good = np.ones(16, np.float32)
    strict(good, y)
    assert np.allclose(y, 2.0)
    strict(good, y)  # the fast path of the second call checks alignment too
    with pytest.raises(KernelCallError, match="16-byte"):
        strict(x, y)


def test_jitkernel_constructed_from_a_program_compiles_it(cache_dir):
    """TileLang's `JITKernel(func, out_idx=..., target=...)` is `tilelang.compile` with the
    same keywords."""
    from tilelang_core.jit.api import JITKernel

    kernel = JITKernel(scale_kernel(64), out_idx=[1], target="cpu")
    assert isinstance(kernel, JITKernel) and str(kernel.target).startswith("cpu")
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_allclose(kernel(x), x * 2.0)
