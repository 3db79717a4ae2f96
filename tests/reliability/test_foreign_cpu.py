"""A CPU kernel compiled for an arch this host cannot run is refused at load with the reason,
instead of dying with SIGILL."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime.kernel import Kernel
from tilelang_cpu import target as cpu_target
from tilelang_cpu.runtime import ForeignCPUError


def axpy(n=256):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = X[i] * 3.0 + 1.0
    return main


@pytest.mark.skipif("avx512f" in cpu_target.host_features() or cpu_target.arch_family(cpu_target.host_arch()) != "x86-64",
                    reason="needs an x86-64 host without AVX-512")
def test_avx512_kernel_on_a_host_without_it_is_refused(cache_dir):
    kernel = tilelang.compile(axpy(), out_idx=[1], target="cpu/x86-64-avx512")  # the host compiler builds it
    with pytest.raises(ForeignCPUError, match=r"cpu/x86-64-avx512.*avx512f.*lacks.*SIGILL.*target='cpu'"):
        kernel(np.ones(256, dtype=np.float32))


def test_kernel_of_another_instruction_set_is_refused(cache_dir):
    kernel = tilelang.compile(axpy(), out_idx=[1], target="cpu")
    other = "aarch64" if cpu_target.arch_family(cpu_target.host_arch()) == "x86-64" else "x86-64"
    meta = dataclasses.replace(kernel.meta, target=f"cpu/{other}")
    foreign = Kernel(meta, kernel.binary, kernel.runtime, kernel.source)
    with pytest.raises(ForeignCPUError, match=rf"compiled for cpu/{other}, an instruction set this host .* cannot execute"):
        foreign(np.ones(256, dtype=np.float32))


def test_lower_level_of_the_same_family_runs(cache_dir):
    if cpu_target.arch_family(cpu_target.host_arch()) != "x86-64":
        pytest.skip("x86-64 levels only")
    kernel = tilelang.compile(axpy(), out_idx=[1], target="cpu/x86-64")
    x = np.arange(256, dtype=np.float32)
    np.testing.assert_allclose(kernel(x), x * 3 + 1)
