"""The CI run of the conformance suite: one test per (target, case) — cpu at run level, cuda
(sm_80, sm_90a) and hip (gfx90a, gfx942) at compile level, metal (apple-m2) at codegen
level. A case a backend expects to fail
is XFAIL through its `tilelang_conformance_expectations` and passes here; an unexpected pass
(XPASS) fails, so the expectation gets removed."""
from __future__ import annotations

import pytest

from tilelang_conformance.result import PASS, XFAIL

from .targets import evaluate_for_ci, params


@pytest.mark.parametrize("spec,level,name", params())
def test_case(spec, level, name, conformance_seed):
    result = evaluate_for_ci(spec, level, name, conformance_seed)
    assert result.outcome in (PASS, XFAIL)
    assert result.level is not None
