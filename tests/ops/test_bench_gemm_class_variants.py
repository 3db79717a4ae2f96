"""bench/gemm_class_variants.py without a GPU: the export writes each chosen variant, conv2d's
launches alone where asked, and a manifest the run reads; `table` is what each operator runs
on sm_90a (batched_gemm and grouped_gemm as persistent blocks, `before` not); the run checks
and times what was exported (on the CPU backend, at small problems)."""
from __future__ import annotations

import pytest

pytest.importorskip("tilelang_cuda")


@pytest.fixture(scope="module")
def bench(load_bench):
    return load_bench("gemm_class_variants")


def test_export_writes_the_variants_and_the_manifest(bench, tmp_path):
    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config
    from tilelang_core.plugin import get_plugin_manager

    names = ["bmm.table", "bmm.before", "grouped.table", "grouped.before"]
    entries = bench.export(tmp_path, "cuda/sm_90a", names)
    manifest = bench.variants.read_manifest(tmp_path)
    assert [e["name"] for e in manifest["variants"]] == names == [e["name"] for e in entries]
    by = {e["name"]: e for e in entries}
    target = get_plugin_manager().parse_target("cuda/sm_90a")
    config, _ = resolve_config(ops.get("batched_gemm"), target, bench.PROBLEMS["batched_gemm"])
    assert by["bmm.table"]["config"] == {k: v for k, v in config.items() if k != "kernel"}
    # the table's rows run persistent blocks; the configs before did not
    assert by["bmm.table"]["persistent"] and by["bmm.table"]["tma_store"] and not by["bmm.before"]["persistent"]
    assert by["grouped.table"]["persistent"] and not by["grouped.before"]["persistent"]
    sizes = bench.PROBLEMS["grouped_gemm"]["sizes"]
    exact, padded = by["grouped.table"]["table"], by["grouped.before"]["table"]
    assert len(exact) == sum(-(-s // 128) for s in sizes) and all(first < end for _, first, end in exact)
    assert len(padded) == -(-sum(sizes) // 128) + len(sizes) and padded[:len(exact)] == exact
    assert sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file()) < 2 << 20


def test_run_checks_and_times_the_exports_on_the_cpu(bench, monkeypatch, tmp_path, capsys):
    """Export for the CPU at small ragged problems, then the run as on the GPU (its CUDA event
    timer is the wall clock there): every variant checked against torch, timed (conv2d's
    launches alone too), tabled; a variant that computes something else is reported as a
    mismatch (exit status 1)."""
    pytest.importorskip("torch")
    monkeypatch.setattr(bench, "DEVICE", "cpu")
    monkeypatch.setattr(bench, "PROBLEMS", {
        "batched_gemm": {**bench.PROBLEMS["batched_gemm"], "batch": 2, "M": 40, "N": 24, "K": 33},
        "grouped_gemm": {"sizes": [5, 0, 70, 9], "N": 64, "K": 40, "dtype": "float16"},  # whole column tiles
        "conv2d": {**bench.PROBLEMS["conv2d"], "N": 2, "C": 5, "H": 7, "W": 6, "O": 6}})
    # the CPU's own grouped row cuts a padded table: the exact one (the GPU rows') added here
    exact = {"grouped.exact": ("grouped_gemm", {"tile_table": "exact"})}
    monkeypatch.setattr(bench, "VARIANTS", {**bench.VARIANTS, **exact})
    names = ["bmm.table", "grouped.table", "grouped.exact", "grouped.before", "grouped.shared_s3", "conv.table"]
    bench.export(tmp_path, "cpu", names)
    assert bench.run(tmp_path, 1) == 0
    out = capsys.readouterr().out
    assert all(f"| {name} |" in out for name in names) and "MISMATCH" not in out, out
    assert "layout launch alone" in out and "gemm launch alone" in out, out
    tables = {e["name"]: e["table"] for e in bench.variants.read_manifest(tmp_path)["variants"]
              if e["op"] == "grouped_gemm"}
    assert len(tables["grouped.exact"]) == 5 < len(tables["grouped.table"]) == 7  # 32-row tiles of 5, 0, 70, 9
    # a negative control: the grouped tile table no longer the split the inputs are cut by
    manifest = bench.variants.read_manifest(tmp_path)
    grouped = next(e for e in manifest["variants"] if e["name"] == "grouped.table")
    grouped["table"] = [[(g + 1) % 4, first, end] for g, first, end in grouped["table"]]
    bench.variants.write_manifest(tmp_path, manifest)
    assert bench.run(tmp_path, 1) == 1
    assert "MISMATCH" in capsys.readouterr().out
