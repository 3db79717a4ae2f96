"""The SIMT kernels the operators pick on a GPU, run on the host emulation of a HIP device
(tests/hip/hip_emulator.py: the generated HIP source compiled for the host, a block's threads
as threads, wave shuffles emulated): the 16-byte vector kernels (elementwise, rows) and the
shuffle reductions compute the right numbers, not only compile. Outputs poisoned, every
element compared with the float64 reference.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import ops
from tilelang_core.ops.registry import resolve_config
from tilelang_core.plugin import get_plugin_manager

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hip"))
from hip_emulator import emulate, host_compiler  # noqa: E402

pytestmark = pytest.mark.slow


def _rows(rng, m, n, dtype="float16"):
    return rng.standard_normal((m, n)).astype(dtype)


def _case(name, rng):
    """(problem, inputs, reference outputs, tolerance) of one operator at a ragged size."""
    if name == "gelu":
        x = rng.standard_normal(1003).astype("float16")
        return {"N": 1003, "C": 1, "dtype": "float16"}, [x, x[:1].copy()], [ops.get("gelu").reference(x)], 2e-3
    if name == "bias_gelu":  # 64 channels: one 16-byte bias piece per piece of x
        x, b = rng.standard_normal((17, 64)).astype("float16"), rng.standard_normal(64).astype("float16")
        return ({"N": 17 * 64, "C": 64, "dtype": "float16"}, [x.reshape(-1), b],
                [ops.get("bias_gelu").reference(x, b).reshape(-1)], 2e-3)
    if name == "swiglu":
        g, u = rng.standard_normal(517).astype("float32"), rng.standard_normal(517).astype("float32")
        return {"N": 517, "dtype": "float32"}, [g, u], [ops.get("swiglu").reference(g, u)], 1e-5
    if name in ("softmax", "log_softmax"):
        x = _rows(rng, 5, 1000) * 2
        return ({"M": 5, "N": 1000, "dtype": "float16", "log": name == "log_softmax"}, [x],
                [ops.get(name).reference(x)], 4e-3)
    if name == "softmax.fallback":  # 997 is no whole number of 16-byte pieces: the register tile kernel
        x = _rows(rng, 3, 997, "float32")
        return {"M": 3, "N": 997, "dtype": "float32", "log": False}, [x], [ops.get("softmax").reference(x)], 1e-6
    if name in ("layer_norm", "add_rms_norm"):
        x, r, w, b = _rows(rng, 6, 2048), _rows(rng, 6, 2048), _rows(rng, 1, 2048)[0], _rows(rng, 1, 2048)[0]
        if name == "layer_norm":
            problem = {"M": 6, "N": 2048, "dtype": "float16", "kind": "layer", "eps": 1e-5, "residual": False}
            return problem, [x, x, w, b], [ops.get(name).reference(x, w, b), None], 1e-2
        problem = {"M": 6, "N": 2048, "dtype": "float16", "kind": "rms", "eps": 1e-6, "residual": True}
        return problem, [x, r, w, w], list(ops.get(name).reference(x, r, w, 1e-6)), 1e-2
    if name == "rope":  # (batch 2, seq 5, heads 3, dim 32) as rows of x
        x = rng.standard_normal((2, 5, 3, 32)).astype("float16")
        angle = rng.standard_normal((5, 16)).astype("float32")
        cos, sin = np.cos(angle), np.sin(angle)
        problem = {"rows": 30, "dim": 32, "seq": 5, "heads": 3, "dtype": "float16"}
        return problem, [x.reshape(30, 32), cos, sin], [ops.get("rope").reference(x, cos, sin).reshape(30, 32)], 2e-3
    if name == "cross_entropy":
        x = _rows(rng, 6, 1000) * 2
        labels = rng.integers(0, 1000, 6).astype("int64")
        labels[1] = -100
        problem = {"M": 6, "N": 1000, "dtype": "float16", "ignore_index": -100}
        return problem, [x, labels], [ops.get(name).reference(x, labels)], 2e-3
    if name == "quantize_per_token":  # q compared as numbers: int8 may round a tie the other way
        x = _rows(rng, 4, 512, "float32")
        q, scale = ops.get(name).reference(x, "int8")
        problem = {"M": 4, "N": 512, "dtype": "float32", "qdtype": "int8"}
        return problem, [x], [np.round(q / scale[:, None]), scale], 1.0 / 127
    if name == "sum":
        x = _rows(rng, 3, 5000, "float32")
        return {"M": 3, "N": 5000, "dtype": "float32", "kind": "sum"}, [x], [x.astype("f8").sum(-1)], 1e-4
    if name.startswith("cumsum"):  # two segments of 1024 threads x 16 bytes, the second one partial
        reverse = name.endswith("reverse")
        x = _rows(rng, 2, 8232, "float16")
        problem = {"M": 2, "N": 8232, "dtype": "float16", "reverse": reverse}
        return problem, [x], [ops.get("cumsum").reference(x, -1, reverse)], 2e-3
    if name.startswith("dequantize_gemv"):  # 16-byte weight pieces; 37 rows: the last block partial
        bits = 4 if name.endswith("int4") else 8
        x = _rows(rng, 2, 512)
        w = rng.integers(-127, 128, (37, 512)).astype("int8") if bits == 8 else \
            rng.integers(0, 256, (37, 256)).astype("uint8")
        scales = (rng.random((37, 4)) * 0.05).astype("float16")
        problem = {"M": 2, "N": 37, "K": 512, "dtype": "float16", "bits": bits, "group": 128, "scale_dtype": "float16"}
        return problem, [x, w, scales], [ops.get("dequantize_gemv").reference(x, w, scales, bits)], 2e-3
    if name.startswith("gemm.fma"):  # float32 at precision "highest" where T.gemm would take TF32
        ta = tb = name.endswith("TT")  # ragged in M, N and K: partial tiles on every side
        a, b, bias = _rows(rng, 70, 45, "float32"), _rows(rng, 45, 52, "float32"), _rows(rng, 1, 52, "float32")[0]
        problem = {"batch": 1, "M": 70, "N": 52, "K": 45, "dtype": "float32", "trans_a": ta, "trans_b": tb,
                   "bias": ta, "activation": "relu" if ta else "none", "fma": True}
        want = ops.get("gemm").reference(a, b, bias=bias if ta else None, activation=problem["activation"])
        a_in = np.ascontiguousarray(a.T) if ta else a
        b_in = np.ascontiguousarray(b.T) if tb else b
        return problem, [a_in[None], b_in[None], bias if ta else bias[:1]], [want[None]], 1e-5
    if name == "conv2d.fma":  # the FMA loops of the implicit GEMM
        x, w = _rows(rng, 2 * 3 * 9, 11, "float32").reshape(2, 3, 9, 11), _rows(rng, 5, 27, "float32")
        problem = {"N": 2, "C": 3, "H": 9, "W": 11, "O": 5, "KH": 3, "KW": 3, "stride": 2, "padding": 1,
                   "dtype": "float32", "fma": True}
        return problem, [x, w], [ops.get("conv2d").reference(x, w.reshape(5, 3, 3, 3), 2, 1)], 1e-5
    raise KeyError(name)


NAMES = ["gelu", "bias_gelu", "softmax", "add_rms_norm", "sum", "rope", "cross_entropy", "quantize_per_token",
         "gemm.fma", "gemm.fma.TT", "conv2d.fma", "cumsum", "cumsum.reverse", "dequantize_gemv.int8",
         "dequantize_gemv.int4"]


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    if host_compiler() is None:
        pytest.skip("no host C++20 compiler for the HIP emulation")
    if "hip" not in get_plugin_manager().registry.kinds:
        pytest.skip("the hip backend is not installed")
    return tmp_path_factory.mktemp("ops-emu")


@pytest.mark.parametrize("name", NAMES)
def test_simt_kernel_computes_the_reference(name, emu_dir):
    target = get_plugin_manager().parse_target("hip/gfx942")
    op = ops.get(name.split(".")[0])
    problem, inputs, expected, tol = _case(name, np.random.default_rng())
    config, _ = resolve_config(op, target, problem)
    func = op.kernels[config["kernel"]](problem, config)
    kernel = tilelang_core.compile(func, target=target)
    outputs = []
    for i in op.outputs:  # poisoned: NaN, or -77 for integers
        spec = kernel.meta.params[i]
        outputs.append(np.full(spec.shape, np.nan if spec.dtype.startswith("float") else -77, spec.dtype))
    assert emulate(kernel, emu_dir)(*inputs, *outputs) == 0
    if name in ("gelu", "swiglu", "softmax", "layer_norm", "add_rms_norm"):
        assert "(*(tl_bits32x4*)" in kernel.get_kernel_source() or "(*(tl_float32x4*)" in kernel.get_kernel_source()
    for got, want in zip(outputs, expected):
        if want is None:
            continue
        got = got.astype("float64")
        assert np.isfinite(got).all(), f"{name}: elements never written"
        np.testing.assert_allclose(got, want, atol=tol * max(1.0, float(np.abs(want).max())), rtol=tol)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_conv2d_layout_in_pieces_then_the_gemm(dtype, emu_dir):
    """Stride 1 with rows and channels in whole 16-byte pieces (W = C = 8, padding 2): the layout
    launch moves pieces (transposed in registers, zero pieces for the border), then the GEMM
    (float32: the FMA loops), each launch emulated in turn on the same arrays; the workspaces
    poisoned first."""
    from tilelang_core.transform.launches import split_launches

    target = get_plugin_manager().parse_target("hip/gfx942")
    op = ops.get("conv2d")
    n, c, h, w, o, k, pad = 2, 8, 5, 8, 6, 3, 2
    problem = {"N": n, "C": c, "H": h, "W": w, "O": o, "KH": k, "KW": k, "stride": 1, "padding": pad,
               "dtype": dtype, **({"fma": True} if dtype == "float32" else {})}
    config, _ = resolve_config(op, target, problem)
    plan = split_launches(op.kernels[config["kernel"]](problem, config))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wt = (rng.standard_normal((o, c, k, k)) * 0.3).astype(dtype)
    y = np.full((n, o, h + 2 * pad - k + 1, w + 2 * pad - k + 1), np.nan, dtype)
    spaces = [np.full([int(d) for d in b.shape], np.nan, np.dtype(str(b.dtype))) for b in plan.workspaces]
    layout, gemm = (tilelang_core.compile(part, target=target) for part in plan.launches)
    assert "x4*)(&Xp[" in layout.get_kernel_source(), layout.get_kernel_source()  # 16-byte stores of Xp
    for kernel in (layout, gemm):
        assert emulate(kernel, emu_dir)(x, wt, y, *spaces) == 0
    want = op.reference(x, wt, 1, pad)
    assert np.isfinite(y).all(), "outputs never written"
    tol = 1e-5 if dtype == "float32" else 1e-2
    assert np.abs(y.astype(np.float64) - want).max() <= tol * np.abs(want).max()
