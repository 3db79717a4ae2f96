"""`tilelang.carver.template.MatmulTemplate` and `tilelang.carver.roller` (the CUDA backend's
`carver_template`, `carver_roller`): the hints fit the device and rank by the roofline, and
the equivalent function is the GEMM."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tilelang_core import language as T
from tilelang_cuda.carver_roller import NoRasterization, Rasterization2DRow
from tilelang_cuda.carver_template import MatmulTemplate

H100 = SimpleNamespace(sm_count=132, smem_cap=232448)  # what CUDA("cuda") reads from the device


def test_hints_fit_the_device_and_come_cheapest_first():
    template = MatmulTemplate(M=8192, N=8192, K=8192, in_dtype=T.float16, out_dtype=T.float16,
                              accum_dtype=T.float32).with_arch(H100)
    hints = template.recommend_hints(topk=20)
    assert len(hints) == 20
    assert [h.estimate for h in hints] == sorted(h.estimate for h in hints)
    for h in hints:
        (bm, bn), (wm, wn), (bk,) = h.block, h.warp, h.rstep
        assert bm % wm == 0 and bn % wn == 0 and wm % 16 == 0 and wn % 8 == 0
        assert (bm + bn) * bk * 2 * h.pipeline_stage <= H100.smem_cap
        assert h.threads == 32 * (bm // wm) * (bn // wn) <= 256
        assert h.use_async == (h.pipeline_stage > 1)
        assert isinstance(h.rasterization_plan, Rasterization2DRow)  # 4096 tiles > 132 SMs: panels
    assert hints[0].block == [128, 128] and hints[0].threads == 128  # ties with 256 x 128: fewer threads


def test_a_skinny_gemm_gets_a_small_m_tile_and_no_rasterization():
    hints = MatmulTemplate(M=1, N=1024, K=1024).with_arch(H100).recommend_hints(topk=3)
    assert hints[0].block[0] == 16  # one row: a taller tile would only compute padding
    assert isinstance(hints[0].rasterization_plan, NoRasterization)


def test_equivalent_function_and_errors():
    func = MatmulTemplate(M=64, N=32, K=16, in_dtype="float16", out_dtype="float16",
                          accum_dtype="float32").equivalent_function()
    assert [p.name for p in func.params] == ["A", "B", "D"]
    with pytest.raises(ValueError, match="call .with_arch"):
        MatmulTemplate(M=64, N=32, K=16).recommend_hints()
    with pytest.raises(ValueError, match="lacks sm_count"):
        MatmulTemplate(M=64, N=32, K=16).with_arch(object()).recommend_hints()
    with pytest.raises(ValueError, match="K must be a positive int"):
        MatmulTemplate(M=64, N=32, K=0)
