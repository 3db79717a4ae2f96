"""Fixtures of the operator tests: outputs poisoned on allocation (NaN for floats, a sentinel
for integers), so an element a kernel never writes fails its comparison."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session", autouse=True)
def poisoned_outputs():
    """The CPU runtime's `allocate` fills what it returns; patched before any operator kernel
    of this session is built (a kernel binds `allocate` when it is first called)."""
    from tilelang_cpu.runtime import CPURuntime

    original = CPURuntime.allocate

    # the patch outlives this package's tests in a worker process: every dtype must take it
    def sentinel(info) -> int:
        return -77 if info.min < 0 else info.max - 50

    def allocate(self, like, shape, dtype):
        out = original(self, like, shape, dtype)
        if hasattr(out, "fill_"):
            import torch

            if out.is_floating_point():
                out.fill_(float("nan"))
            elif out.dtype != torch.bool:
                out.fill_(sentinel(torch.iinfo(out.dtype)))
        elif np.issubdtype(out.dtype, np.floating):
            out.fill(np.nan)
        elif np.issubdtype(out.dtype, np.integer):
            out.fill(sentinel(np.iinfo(out.dtype)))
        return out

    CPURuntime.allocate = allocate
    yield
    CPURuntime.allocate = original
