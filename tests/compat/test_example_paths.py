"""The TileLang paths that the examples of TileLang a35008a42 import and that resolved to
nothing before (iket, plot_layout, the carver template, dequant_gemm_fine_grained,
gemm_sp, bitnet), checked in one fresh interpreter that runs the import aliasing."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

ALIASED = """
    import json
    from tilelang_core.compat import install
    install()
    import tilelang
    import tilelang.testing
    from tilelang import tvm as tvm
    out = {}
    # example_dequant_gemm_fine_grained: tvm.testing read as an attribute, never imported
    out["tvm_testing"] = callable(tvm.testing.requires_package("bitblas"))
    from tilelang.tools.cuda import iket
    out["iket"] = iket.mark.__module__
    from tilelang.carver.template import MatmulTemplate
    from tilelang.carver.arch import CUDA, CDNA
    from tilelang.carver.roller.rasterization import NoRasterization
    out["carver"] = [MatmulTemplate.__module__, NoRasterization.__module__]
    from tilelang.cuda.intrinsics.layout.utils import get_mma_micro_size
    from tilelang.cuda.intrinsics.layout.mma_layout import shared_16x16_to_mma_32x8_layout_sr_a
    from tilelang.cuda.intrinsics.sparse_layout import get_e_factor
    import tilelang.language as T
    out["mma"] = [get_mma_micro_size(T.float16), shared_16x16_to_mma_32x8_layout_sr_a(9, 3),
                  get_e_factor(T.float16, T.int16)]
    from tilelang.rocm.intrinsics.utils import get_mma_micro_size as rocm_micro
    from tilelang.rocm.intrinsics.mfma_layout import shared_16x16_to_local_64x4_layout_A
    out["mfma"] = [rocm_micro(T.int8), shared_16x16_to_local_64x4_layout_A(3, 9)]
    from tilelang.layout import make_full_bank_swizzled_layout, make_quarter_bank_swizzled_layout
    out["swizzle"] = type(make_full_bank_swizzled_layout(8, 64, 16)).__name__
    from tilelang.language.dtypes import _TORCH_DTYPE_TO_STR, dtype
    import torch
    out["torch_dtypes"] = [_TORCH_DTYPE_TO_STR[torch.half], str(dtype(torch.bfloat16))]
    try:
        from tilelang.cuda.intrinsics.macro.mma_macro_generator import INT4TensorCoreIntrinEmitter
    except ImportError as exc:
        out["int4"] = str(exc)
    print(json.dumps(out))
"""


def test_example_paths_resolve():
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(ALIASED)], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["tvm_testing"] is True
    assert out["iket"] == "tilelang_cuda.compat.tools.iket.frontend"
    assert out["carver"] == ["tilelang_cuda.carver_template", "tilelang_cuda.carver_roller.rasterization"]
    # micro tile of float16; A element (row 9, k 3) in lane 4 * 1 + 1, slot 2 * 1 + 1; 16 / 4 * 4
    assert out["mma"] == [[16, 16, 16], [5, 3], 16]
    assert out["mfma"] == [[16, 16, 32], [3 + 16 * 2, 1]]
    assert out["swizzle"] == "Layout"
    assert out["torch_dtypes"] == ["float16", "bfloat16"]
    assert "PR #2063" in out["int4"] and "fails under that TileLang too" in out["int4"]
