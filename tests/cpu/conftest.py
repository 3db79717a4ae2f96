"""Fixtures of the CPU backend's tests: render -> compile -> load, with the host compiler."""
from __future__ import annotations

import numpy as np
import pytest


class Built:
    """A hand-lowered PrimFunc taken through the CPU backend: source, library, kernel."""

    def __init__(self, func, arch=None):
        from tilelang_core.runtime import KernelMeta, ParamSpec
        from tilelang_cpu.codegen import CPUCodegen
        from tilelang_cpu.compile import compile_source
        from tilelang_cpu.runtime import CPURuntime

        self.kernel_source = CPUCodegen().render(func)
        self.source = self.kernel_source.source
        self.binary = compile_source(self.source, arch, name=self.kernel_source.entry)
        params = tuple(ParamSpec(**p) for p in self.kernel_source.extra["params"])
        self.meta = KernelMeta(target="cpu", entry=self.kernel_source.entry, params=params,
                               grid=self.kernel_source.grid)
        self.runtime = CPURuntime()
        self.kernel = self.runtime.load(self.binary, self.meta)

    def __call__(self, *args):
        """Call with NumPy arrays (passed by pointer) and Python numbers (scalars)."""
        raw = [a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
        self.kernel.launch(raw, None, None, 0)


@pytest.fixture(scope="session")
def host_compiler():
    from tilelang_cpu.compile import find_compiler

    cc = find_compiler()
    if cc is None:
        pytest.skip("no C compiler on this machine (install gcc or clang, or set TILELANG_CC)")
    return cc


@pytest.fixture
def build(host_compiler):
    return Built


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def poisoned():
    """poisoned(shape, dtype): an output filled with NaN (a sentinel for ints), so elements the
    kernel never writes show up in the comparison."""

    def make(shape, dtype="float32"):
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            return np.full(shape, np.nan, dtype)
        return np.full(shape, np.iinfo(dtype).min + 7, dtype)

    return make
