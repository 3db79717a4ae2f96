"""Every operator against its NumPy reference (float64) on the CPU backend: fresh random inputs
at ragged sizes (no size a multiple of a tile), outputs poisoned before the run, every element
compared. NumPy arrays in, and torch tensors for a selection; bad arguments give errors that
name the argument and the fix."""
from __future__ import annotations

import secrets

import numpy as np
import pytest

from tilelang_core import ops
from tilelang_core.ops import OpError

from .cases import CASES, compare

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_matches_reference(name):
    seed = secrets.randbits(32)
    call, reference, tolerance = CASES[name](np.random.default_rng(seed), lambda a: a)
    compare(f"{name} (seed {seed})", call(), reference(), tolerance)


def test_every_operator_has_a_case_and_the_issue_list_is_covered():
    covered = {name.split(".")[0] for name in CASES}
    assert covered == set(ops.operators()), set(ops.operators()) ^ covered
    assert len(ops.operators()) >= 20


@pytest.mark.parametrize("name", ["softmax.float32", "gemm.float32", "rms_norm.float32", "topk",
                                  "flash_attention.gqa", "cross_entropy.mean"])
def test_torch_tensors_in_torch_tensors_out(name):
    torch = pytest.importorskip("torch")
    seed = secrets.randbits(32)
    call, reference, tolerance = CASES[name](np.random.default_rng(seed), torch.from_numpy)
    got = call()
    for g in got if isinstance(got, tuple) else (got,):
        assert isinstance(g, torch.Tensor) and g.device.type == "cpu"
    compare(f"{name} (torch, seed {seed})", got, reference(), tolerance)


def test_bfloat16_torch():
    torch = pytest.importorskip("torch")
    x = torch.randn(5, 77, dtype=torch.bfloat16)
    y = ops.silu(x)
    assert y.dtype == torch.bfloat16 and y.shape == x.shape
    compare("silu bf16", y, ops.get("silu").reference(x.float().numpy()), (2e-2, 2e-2))


def test_top_level_names():
    import tilelang_core as tl

    assert tl.softmax is ops.softmax and tl.flash_attention is ops.flash_attention and tl.max is ops.max
    assert "gemm" in tl.__all__ and "sum" not in tl.__all__  # star imports keep Python's sum


def test_offset_view_is_copied_for_the_vector_kernels():
    torch = pytest.importorskip("torch")
    base = torch.randn(1001)
    x = base[1:]  # 4 bytes past a 16-byte boundary
    compare("gelu offset view", ops.gelu(x), ops.get("gelu").reference(x.numpy()), (2e-5, 2e-5))


@pytest.mark.parametrize("call, message", [
    (lambda: ops.softmax(np.zeros((3, 4), "int32")), "argument 'x' has dtype int32"),
    (lambda: ops.gemm(np.zeros((3, 4), "float32"), np.zeros((5, 2), "float32")), "K = 4 and 5"),
    (lambda: ops.bias_gelu(np.zeros((3, 4), "float32"), np.zeros(5, "float32")), "bias has shape (5,)"),
    (lambda: ops.flash_attention(*(np.zeros((1, 3, 8, 16), "float16"),) * 1,
                                 np.zeros((1, 2, 8, 16), "float16"), np.zeros((1, 2, 8, 16), "float16")),
     "3 query heads cannot share 2"),
    (lambda: ops.topk(np.zeros((2, 4), "float32"), 5), "k=5 must be between 0 and"),
    (lambda: ops.attention_decode(np.zeros((1, 2, 16), "float16"), np.zeros((1, 2, 8, 16), "float16"),
                                  np.zeros((1, 2, 8, 16), "float16"), num_splits=0), "num_splits=0"),
    (lambda: ops.flash_attention_varlen(*(np.zeros((20, 2, 16), "float16"),) * 3, np.array([0, 3, 20], "int32"),
                                        np.array([0, 3, 20], "int32"), 10), "max_seqlen_q=10, but the longest"),
    (lambda: ops.quantize_per_token(np.zeros((2, 4), "float32"), "float8_e4m3fn"), "has no float8_e4m3fn"),
    (lambda: ops.cross_entropy(np.zeros((2, 4), "float32"), np.zeros(2, "int64"), reduction="avg"),
     "reduction 'avg'"),
    (lambda: ops.grouped_gemm(np.zeros((5, 4), "float32"), np.zeros((2, 4, 3), "float32"), [2, 2]),
     "summing to a's rows (5)"),
    (lambda: ops.sum(np.zeros((2, 4), "float32"), axis=2), "axis 2 is out of range"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(OpError) as info:
        call()
    assert message in str(info.value)


def test_config_table_follows_capabilities():
    from tilelang_core.ops.registry import resolve_config
    from tilelang_core.plugin import get_plugin_manager

    manager = get_plugin_manager()
    gemm = ops.get("gemm")
    cpu = manager.parse_target("cpu")
    config, source = resolve_config(gemm, cpu, gemm.example)
    assert source == "table[block-serial]" and config["threads"] == 1
    if "cuda" in manager.registry.kinds:
        hopper = manager.parse_target("cuda/sm_90a")
        ampere = manager.parse_target("cuda/sm_80")
        assert resolve_config(gemm, hopper, gemm.example)[1] == "table[wgmma]"
        assert resolve_config(gemm, ampere, gemm.example)[1] == "table[mma.sync]"
    if "hip" in manager.registry.kinds:  # warps become threads at the target's warp size
        config = resolve_config(ops.get("softmax"), manager.parse_target("hip/gfx942"), ops.get("softmax").example)[0]
        assert config["threads"] == 4 * 64


def test_cli_lists_every_operator_with_its_config(capsys):
    import json

    from tilelang_core.cli.main import main

    assert main(["ops", "--target", "cpu", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["ops"]
    assert {r["op"] for r in rows} == set(ops.operators())
    softmax = next(r for r in rows if r["op"] == "softmax")
    assert softmax["backend"] == "cpu" and softmax["source"] == "table[block-serial]"
    assert softmax["config"]["kernel"] == "rows" and softmax["config"]["block_M"] == 8
    assert main(["ops", "--target", "nonsense"]) == 2


def test_tune_keeps_the_best_config_for_later_calls(tmp_path, monkeypatch, capsys):
    import json

    from tilelang_core.cli.main import main
    from tilelang_core.ops import launch

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    launch._tuned_store.cache_clear()
    try:
        x = np.random.default_rng().standard_normal((9, 130)).astype("float32")
        from tilelang_core.ops.launch import capture
        from tilelang_core.ops.registry import resolve_config
        from tilelang_core.ops.tune import _candidates

        rec = capture(ops.softmax, x)
        table = resolve_config(ops.get("softmax"), rec.target, rec.problem)[0]
        candidates = _candidates(ops.get("softmax"), table, rec.target.capabilities, 2)
        assert candidates[0] == {} and candidates[1], "the table's config competes: a slower one is never kept"
        best = ops.tune("softmax", x, rep=2, warmup=1, max_candidates=2)
        assert best["block_M"] in (table["block_M"], candidates[1].get("block_M", table["block_M"]))
        assert (tmp_path / "ops" / "tuned.json").is_file()
        compare("softmax tuned", ops.softmax(x), ops.get("softmax").reference(x), (2e-6, 2e-6))
        row = [r for r in ops.explain() if r["op"] == "softmax" and r["problem"]["M"] == 9][0]
        assert row["source"].endswith("+tuned") and row["config"]["block_M"] == best["block_M"]
        capsys.readouterr()
        assert main(["ops", "--target", "cpu", "--json"]) == 0  # `tilelang ops` lists the tuned config
        listed = next(r for r in json.loads(capsys.readouterr().out)["ops"] if r["op"] == "softmax")["tuned"]
        assert [t["problem"]["M"] for t in listed] == [9] and listed[0]["config"]["block_M"] == best["block_M"]
    finally:
        launch._tuned_store.cache_clear()


# -- float32 precision ------------------------------------------------------------------------


def test_float32_precision_follows_torch_unless_given():
    torch = pytest.importorskip("torch")
    from tilelang_core.ops.gemm import float32_math, float32_precision
    from tilelang_core.plugin import get_plugin_manager

    t, n = torch.zeros(2), np.zeros(2, "float32")
    saved, saved_conv = torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32
    try:
        for level in ("high", "medium", "highest"):
            torch.set_float32_matmul_precision(level)
            assert float32_precision("gemm", None, [t]) == level
        torch.backends.cuda.matmul.allow_tf32 = True  # torch's older switch sets the same state
        assert float32_precision("gemm", None, [t]) == "high"
        assert float32_precision("gemm", None, [n]) == "highest"  # NumPy arrays: float32 math
        assert float32_precision("gemm", "highest", [t]) == "highest"  # the argument wins
        torch.backends.cudnn.allow_tf32 = False
        assert float32_precision("conv2d", None, [t], conv=True) == "highest"
        torch.backends.cudnn.allow_tf32 = True
        assert float32_precision("conv2d", None, [t], conv=True) == "high"
    finally:
        torch.set_float32_matmul_precision(saved)
        torch.backends.cudnn.allow_tf32 = saved_conv
    manager = get_plugin_manager()
    assert float32_math("high", manager.parse_target("cpu")) == "ieee"  # no TF32 units: float32 anyway
    if "cuda" in manager.registry.kinds:
        hopper = manager.parse_target("cuda/sm_90a")
        assert float32_math("high", hopper) == "tf32" and float32_math("highest", hopper) == "ieee"


def test_float32_bound_tells_tf32_from_float32():
    """The check's per-element bound (derived from K) passes a float32 product and fails one
    whose operands were rounded to TF32, so the GPU check cannot pass TF32 as "highest"."""
    from .cases import compare, float32_bound, tf32_round

    rng = np.random.default_rng()
    k = 300
    a, b = rng.standard_normal((40, k)).astype("float32"), rng.standard_normal((k, 30)).astype("float32")
    exact = a.astype("float64") @ b
    bound = float32_bound(k, np.abs(a).astype("float64") @ np.abs(b))
    compare("float32 product", a @ b, exact, bound)
    with pytest.raises(AssertionError, match="off the reference by more than their bound"):
        compare("tf32 product", tf32_round(a).astype("float64") @ tf32_round(b), exact, bound)
    assert tf32_round(np.float32(1 + 2 ** -11)) == np.float32(1 + 2 ** -10)  # a tie rounds away from zero
    assert tf32_round(np.float32(-(1 + 2 ** -12))) == np.float32(-1.0)


def test_tf32_bound_holds_for_either_rounding():
    """The TF32 check (reference on operands rounded to nearest) passes products of operands
    rounded to nearest (mma.sync) and truncated (wgmma) alike, and fails one element off by
    2^-7 of its magnitude."""
    from .cases import compare, float32_bound, tf32_round

    rng = np.random.default_rng()
    k = 300
    a, b = rng.standard_normal((40, k)).astype("float32"), rng.standard_normal((k, 30)).astype("float32")

    def truncate(x):
        return (x.view("uint32") & np.uint32(0xFFFFE000)).view("float32")

    ar, br = tf32_round(a).astype("float64"), tf32_round(b).astype("float64")
    magnitude = np.abs(ar) @ np.abs(br)
    bound = float32_bound(k, magnitude, tf32=True)
    compare("tf32 product (nearest)", (ar @ br).astype("float32"), ar @ br, bound)
    truncated = truncate(a).astype("float64") @ truncate(b)
    compare("tf32 product (truncated)", truncated.astype("float32"), ar @ br, bound)
    assert not (np.abs(truncated - ar @ br) <= float32_bound(k, magnitude)).all()  # the slack is needed
    wrong = truncated.copy()
    wrong[3, 4] += 2.0 ** -7 * magnitude[3, 4]
    with pytest.raises(AssertionError, match="off the reference by more than their bound"):
        compare("a wrong element", wrong, ar @ br, bound)


# -- the per-call fast path (ops/launch.py) ---------------------------------------------------


def test_repeated_calls_keep_every_check(tmp_path, monkeypatch):
    """A second call of the same shape takes the kept target and kernel; a call that differs
    in dtype, layout, alignment, shape or tuned config is still checked and built for."""
    torch = pytest.importorskip("torch")
    from tilelang_core.ops import launch
    from tilelang_core.plugin import get_plugin_manager

    rng = np.random.default_rng()
    x = rng.standard_normal((6, 80)).astype("float32")
    for _ in range(2):
        compare("gelu", ops.gelu(x), ops.get("gelu").reference(x), (2e-5, 2e-5))
    half = x.astype("float16")
    compare("gelu float16", ops.gelu(half), ops.get("gelu").reference(half), (1e-2, 1e-2))
    wide = rng.standard_normal((6, 160)).astype("float32")[:, ::2]  # same shape, not contiguous
    compare("gelu strided", ops.gelu(wide), ops.get("gelu").reference(wide), (2e-5, 2e-5))
    offset = torch.from_numpy(rng.standard_normal(481).astype("float32"))[1:].reshape(6, 80)  # 4 bytes off
    compare("gelu offset", ops.gelu(offset), ops.get("gelu").reference(offset.numpy()), (2e-5, 2e-5))
    with pytest.raises(OpError, match="argument 'x' has dtype int32"):
        ops.gelu(x.astype("int32"))
    q = rng.standard_normal((1, 2, 8, 16)).astype("float16")
    ops.flash_attention(q, q, q)
    with pytest.raises(OpError, match="2 query heads cannot share 3"):
        ops.flash_attention(q, q[:, :1].repeat(3, 1), q[:, :1].repeat(3, 1))
    # a tuned config stored after calls of its problem reaches the next call
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    launch._tuned_store.cache_clear()
    try:
        y = rng.standard_normal((5, 70)).astype("float32")
        ops.softmax(y)
        target = get_plugin_manager().parse_target("cpu")
        launch.store_tuned("softmax", target, {"M": 5, "N": 70, "dtype": "float32", "log": False}, {"block_M": 3})
        compare("softmax tuned", ops.softmax(y), ops.get("softmax").reference(y), (2e-6, 2e-6))
        row = [r for r in ops.explain() if r["op"] == "softmax" and r["problem"]["M"] == 5][0]
        assert row["source"].endswith("+tuned") and row["config"]["block_M"] == 3
    finally:
        launch._tuned_store.cache_clear()


def test_parsed_targets_are_kept_per_plugin_manager(fresh_manager):
    from tilelang_core.ops.launch import target_for
    from tilelang_core.plugin import reset_plugin_manager

    x = np.zeros(3, "float32")
    first = target_for([x], "cpu")
    assert target_for([x], "cpu") is first
    reset_plugin_manager()  # backends registered anew: the string is parsed again
    again = target_for([x], "cpu")
    assert again is not first and str(again) == str(first)
