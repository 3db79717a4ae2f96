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

    def allocate(self, like, shape, dtype):
        out = original(self, like, shape, dtype)
        if hasattr(out, "fill_"):
            out.fill_(float("nan") if out.is_floating_point() else -77)
        elif np.issubdtype(out.dtype, np.floating):
            out.fill(np.nan)
        else:
            out.fill(-77)
        return out

    CPURuntime.allocate = allocate
    yield
    CPURuntime.allocate = original
