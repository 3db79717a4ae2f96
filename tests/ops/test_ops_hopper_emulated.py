"""The sm_90a kernels of grouped_gemm and conv2d (stride 1), lowered as for the H100 (TMA
loads on mbarriers, a warp-specialized loading warpgroup, wgmma), run small on the TMA +
wgmma emulator of tests/cuda: the right numbers, not only code that compiles. Outputs and
workspaces poisoned with NaN, every element compared with the float64 reference."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import ops
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.ops.gemm import _tile_table
from tilelang_core.ops.registry import resolve_config
from tilelang_core.plugin import get_plugin_manager
from tilelang_core.transform.launches import split_launches

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cuda"))
import tir_emulator  # noqa: E402
from tma_emulator import run_kernel  # noqa: E402

pytestmark = pytest.mark.slow


def _target():
    manager = get_plugin_manager()
    if "cuda" not in manager.registry.kinds:
        pytest.skip("the cuda backend is not installed")
    return manager.parse_target("cuda/sm_90a")


def _run(func, target, arrays) -> list[str]:
    """Lower each launch of `func` for `target` and emulate it on `arrays` (in place); the
    scripts of the lowered launches."""
    plan = split_launches(func)
    scripts = []
    for part in (plan.launches if plan is not None else (func,)):
        lowered = lower(part, target, CompileOptions())
        scripts.append(lowered.script())
        maps = lowered.attrs is not None and "cuda.tensor_maps" in lowered.attrs
        (run_kernel if maps else tir_emulator.run_kernel)(lowered, *arrays)
    return scripts


def _on_hopper_units(script: str) -> None:
    assert "tl::tma_load" in script and "wgmma_m64n" in script and "setmaxnreg" in script, script


@pytest.mark.parametrize("changes", [{}, {"tile_table": "padded"}, {"epilogue": "shared", "stages": 3}],
                         ids=["table", "padded", "staged"])
def test_grouped_gemm_tiles_start_at_the_table_rows(changes):
    """Groups of 0, 130 (two tiles) and 70 rows: TMA reads A from each tile's first row (rows
    of the next group come along and are dropped by the row guard). The table's exact tile
    table, the padded one (its padding tiles write nothing) and the epilogue staged through
    shared memory (16-byte row stores under the row guard)."""
    target = _target()
    op = ops.get("grouped_gemm")
    sizes, N, K = [0, 130, 70], 64, 128
    total, groups = sum(sizes), len(sizes)
    config = {**resolve_config(op, target, {})[0], **changes}
    bM = config["block_M"]
    exact = config["tile_table"] == "exact"
    tiles = sum(-(-s // bM) for s in sizes) if exact else -(-total // bM) + groups
    table = _tile_table(sizes, bM, tiles, np.zeros(1))
    problem = {"rows": total, "groups": groups, "N": N, "K": K, "dtype": "float16", "tiles": tiles, "tile_rows": bM}
    rng = np.random.default_rng(11)
    a = rng.standard_normal((total, K)).astype(np.float16)
    b = rng.standard_normal((groups, K, N)).astype(np.float16)
    c = np.full((total, N), np.nan, np.float16)
    (script,) = _run(op.kernels[config["kernel"]](problem, config), target, [a, b, table, c])
    _on_hopper_units(script)
    if "epilogue" in changes:
        assert "T.Ramp" in script or "Ramp(" in script, script
    want = op.reference(a, b, sizes)
    assert np.isfinite(c).all(), "rows never written"
    assert np.abs(c.astype(np.float64) - want).max() <= 1e-2 * np.abs(want).max()


@pytest.mark.parametrize("shape", [(2, 19, 9, 10, 24, 3, 2, 1), (2, 16, 6, 16, 24, 3, 3, 2)], ids=["tile", "pieces"])
def test_conv2d_stride1_runs_as_a_shifted_gemm(shape):
    """The layout pass (image and weight), then the TMA + wgmma GEMM, one after the other on
    the same arrays. 19 channels (a K tile of 32, zero-padded), a 3 x 2 kernel, padding 1 (the
    layout pass through a shared tile); 16 channels and 16 columns, padding 2 (16-byte pieces,
    transposed in registers, zero pieces for the border)."""
    target = _target()
    op = ops.get("conv2d")
    n, c, h, w, o, kh, kw, pad = shape  # "tile": 264 padded pixels, a 256-row tile and a ragged one
    problem = {"N": n, "C": c, "H": h, "W": w, "O": o, "KH": kh, "KW": kw, "stride": 1, "padding": pad,
               "dtype": "float16"}
    config, _ = resolve_config(op, target, problem)
    func = op.kernels[config["kernel"]](problem, config)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((n, c, h, w)).astype(np.float16)
    wt = (rng.standard_normal((o, c, kh, kw)) * 0.3).astype(np.float16)
    y = np.full((n, o, h + 2 * pad - kh + 1, w + 2 * pad - kw + 1), np.nan, np.float16)
    workspaces = [np.full([int(d) for d in b.shape], np.nan, np.dtype(str(b.dtype)))
                  for b in split_launches(func).workspaces]
    scripts = _run(func, target, [x, wt, y, *workspaces])
    assert len(scripts) == 2
    _on_hopper_units(scripts[1])
    assert ("T.Ramp" in scripts[0]) == (c % 8 == w % 8 == 0), scripts[0]
    want = op.reference(x, wt, 1, pad)
    assert np.isfinite(y).all(), "outputs never written"
    assert np.abs(y.astype(np.float64) - want).max() <= 1e-2 * np.abs(want).max()


def test_batched_gemm_stores_its_tile_through_tma():
    """The batched table row is the gemm's (4 stages, C from the accumulators, which sm_90a
    stages through shared memory in chunks): TMA stores per tile, the ragged last row tile
    clipped at the tensor's edge, each batch in its own place."""
    target = _target()
    op = ops.get("batched_gemm")
    problem = {"batch": 2, "M": 130, "N": 64, "K": 128, "dtype": "float16", "trans_a": False, "trans_b": False,
               "bias": False, "activation": "none"}
    config, _ = resolve_config(op, target, problem)
    assert (config["stages"], config["epilogue"]) == (4, "registers")
    rng = np.random.default_rng(13)
    a = rng.standard_normal((2, 130, 128)).astype(np.float16)
    b = rng.standard_normal((2, 128, 64)).astype(np.float16)
    c = np.full((2, 130, 64), np.nan, np.float16)
    (script,) = _run(op.kernels[config["kernel"]](problem, config), target, [a, b, b.reshape(-1)[:1].copy(), c])
    _on_hopper_units(script)
    assert "tl::tma_store" in script, script
    want = a.astype(np.float64) @ b
    assert np.isfinite(c).all(), "elements never written"
    assert np.abs(c.astype(np.float64) - want).max() <= 1e-2 * np.abs(want).max()
