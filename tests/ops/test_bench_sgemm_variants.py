"""bench/sgemm_variants.py without a GPU: the export compiles the chosen variants of the FMA
GEMM for sm_90a (the table's config, the one before it, a `__launch_bounds__` probe) and
writes a manifest the run reads; the run checks every element against float64 and times
(on the CPU, with stand-in kernels: the exported CUDA kernels need the GPU)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tilelang_cuda")


@pytest.fixture(scope="module")
def bench(load_bench):
    return load_bench("sgemm_variants")


def test_export_writes_the_variants_and_the_manifest(bench, tmp_path):
    from tilelang_core.plugin import get_plugin_manager

    entries = bench.export(tmp_path, "cuda/sm_90a", ["table", "before", "swizzle_lb2"], sizes=(4096,))
    manifest = bench.variants.read_manifest(tmp_path)
    assert [e["name"] for e in manifest["variants"]] == ["table_4096", "before_4096", "swizzle_lb2_4096"]
    assert manifest["variants"] == json.loads(json.dumps(entries))
    table, before, probe = manifest["variants"]
    target = get_plugin_manager().parse_target("cuda/sm_90a")
    config = bench.variant_config(target, bench.problem_of(4096), {})
    assert table["config"] == {k: v for k, v in config.items() if k.startswith("fma_") and k != "fma_warps"}
    assert before["config"]["fma_stages"] == 2 and not before["config"]["fma_skew"]
    assert probe["config"] == {**table["config"], "fma_skew": False, "fma_swizzle_a": True}
    assert table["threads"] == before["threads"] == 256 and table["grid"] == [32, 32, 1]
    assert probe["probe_blocks_per_sm"] == 2 and table["probe_blocks_per_sm"] == 0
    assert "__launch_bounds__(256, 2)" in (tmp_path / "swizzle_lb2_4096" / "kernel.src").read_text()
    if table["sass"]:  # cuobjdump found: the main loop is FMA with 16-byte shared reads only
        for entry in (table, before, probe):
            loop, k = entry["sass"]["loop"], entry["config"]["fma_block_K"]
            assert loop["FFMA"] == 64 * k and loop["LDS.128"] == 4 * k and loop["LDS other"] == 0, entry["name"]
            assert loop["FFMA"] >= 0.85 * loop["instructions"], entry["name"]
            assert entry["sass"]["local_memory_ops"] == 0
            assert entry["sass"]["registers"] <= 128, entry["name"]  # two blocks of 256 threads per SM
    assert sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file()) < 1 << 20


def test_run_checks_every_element_and_times_on_the_cpu(bench, monkeypatch, tmp_path, capsys):
    """The run as on the GPU at a small size, with kernels that stand in for the exports
    (the CUDA ones need the device), timed by the wall clock there: a float32 product
    passes, a TF32 one (operands truncated to 10 mantissa bits) and one that leaves an element
    unwritten are reported as mismatches (exit status 1)."""
    torch = pytest.importorskip("torch")

    def stand_in(kind):
        def kernel(a, b, bias, c):
            a2 = a[0].t() if manifest_entry["problem"]["trans_a"] else a[0]
            b2 = b[0].t() if manifest_entry["problem"]["trans_b"] else b[0]
            if kind == "tf32":
                a2 = (a2.contiguous().view(torch.int32) & -8192).view(torch.float32)
            c[0].copy_(a2 @ b2)
            if kind == "hole":
                c[0, 3, 5] = float("nan")
        return kernel

    monkeypatch.setattr(bench, "DEVICE", "cpu")
    kinds = {"float32": "float32", "kmajor": "float32", "kminor_b": "float32", "tf32": "tf32", "hole": "hole"}
    variants = []
    for name in kinds:
        problem = bench.problem_of(64, {"trans_a": name == "kmajor", "trans_b": name == "kminor_b"})
        variants.append({"name": name, "variant": name, "size": 64, "changes": {}, "problem": problem,
                         "probe_blocks_per_sm": 0, "config": {}, "threads": 256, "grid": [1, 1, 1],
                         "shared_memory": 0, "sass": {}})
    bench.variants.write_manifest(tmp_path, {"target": "cpu", "variants": variants})
    by_name = {v["name"]: v for v in variants}
    manifest_entry = None

    def load(path):
        nonlocal manifest_entry
        manifest_entry = by_name[Path(path).name]
        return stand_in(kinds[Path(path).name])

    monkeypatch.setattr(bench.variants, "load", load)
    assert bench.run(tmp_path, 1, ["float32", "kmajor", "kminor_b"]) == 0
    out = capsys.readouterr().out
    assert "| float32 | 64 |" in out and "| kmajor | 64 | - A as (K, M) |" in out and "MISMATCH" not in out, out
    assert "| kminor_b | 64 | - B as (N, K) |" in out
    assert "best at 64^3: float32 " in out  # A as (K, M) is another problem: not a candidate
    assert bench.run(tmp_path, 1, ["tf32"]) == 1
    assert bench.run(tmp_path, 1, ["hole"]) == 1
    out = capsys.readouterr().out
    assert out.count("MISMATCH") == 4, out  # each in the line and in the table
