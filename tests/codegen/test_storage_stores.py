"""`GPUCodegen.visit_store`: stores to storage-only dtypes (float16/bfloat16 kept in a wider
type) shared by the HIP and Metal dialects: a same-dtype copy moves the element as it is, a
value just cast to the stored dtype is rounded once (an int converted to float first), any
other value takes the base printer's conversion."""
from __future__ import annotations

import pytest

from tilelang_core import language as T
from tilelang_core.codegen import GPUCodegen
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager, hooks_for

# target -> (a copy, an int cast to half, a float32 value cast to half, a computed half)
EXPECTED = {
    "hip/gfx942": ("B[i] = A[i];", "C[i] = tl_from_float<half_t>((float)(N[i]));",
                   "D[i] = tl_from_float<half_t>(F[i] * 2.0f);",
                   "E[i] = tl_from_float<half_t>(tl_to_float(A[i]) + tl_to_float(A[i]));"),
    "metal/apple-m2": ("B[i] = A[i];", "C[i] = half(float(N[i]));", "D[i] = half(F[i] * 2.0f);",
                       "E[i] = half(float(A[i]) + float(A[i]));"),
}


def stores():
    @T.prim_func
    def main(A: T.Tensor((64,), "float16"), N: T.Tensor((64,), "int32"), F: T.Tensor((64,), "float32"),
             B: T.Tensor((64,), "float16"), C: T.Tensor((64,), "float16"), D: T.Tensor((64,), "float16"),
             E: T.Tensor((64,), "float16")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.serial(64):
                B[i] = A[i]
                C[i] = T.cast(N[i], "float16")
                D[i] = T.cast(F[i] * 2.0, "float16")
                E[i] = A[i] + A[i]

    return main


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_storage_only_stores(name):
    target = get_plugin_manager().parse_target(name)
    options = CompileOptions()
    source = hooks_for(target).codegen(lower(stores(), target, options), options).source
    for line in EXPECTED[name]:
        assert line in source, f"{line!r} not in\n{source}"


def test_hip_and_metal_share_the_store():
    from tilelang_hip.codegen import HIPCodegen
    from tilelang_metal.codegen import MetalCodegen

    for dialect in (HIPCodegen, MetalCodegen):
        assert issubclass(dialect, GPUCodegen) and "visit_store" not in vars(dialect)
