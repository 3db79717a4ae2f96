"""bench/decode_variants.py without a GPU: the export writes each chosen variant (both
launches), the split launch alone where asked, and a manifest the run reads; the table
variant is what `ops.attention_decode` runs on sm_90a, `before` the config it replaced; the
run checks and times what was exported (on the CPU backend, at a small problem)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("tilelang_cuda")


@pytest.fixture(scope="module")
def bench(load_bench):
    return load_bench("decode_variants")


def test_export_writes_the_variants_and_the_manifest(bench, tmp_path):
    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config
    from tilelang_core.plugin import get_plugin_manager

    entries = bench.export(tmp_path, "cuda/sm_90a", ["table", "before"])
    manifest = bench.variants.read_manifest(tmp_path)
    assert [e["name"] for e in manifest["variants"]] == ["table", "before"] == [e["name"] for e in entries]
    table, before = manifest["variants"]
    target = get_plugin_manager().parse_target("cuda/sm_90a")
    config, _ = resolve_config(ops.get("attention_decode"), target, bench.PROBLEM)
    assert table["config"] == {k: v for k, v in config.items() if k != "kernel"}
    assert table["threads"] == 32 and before["threads"] == 128 and before["shared_memory"] > 3 * table["shared_memory"]
    # the split grid: KV heads x splits x batch, and workspaces sized by the splits
    assert table["grid"] == [8, table["splits"], 16] and table["splits"] * table["chunk"] == 8192
    assert table["workspaces"] == [[[16, 32, table["splits"]], "float32"], [[16, 32, table["splits"], 128], "float32"]]
    for name in ("table", "before", "table.split", "before.split"):
        meta = json.loads((tmp_path / name / "kernel.json").read_text())
        assert len(meta.get("launches", ())) == (0 if name.endswith(".split") else 2), name
    assert sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file()) < 2 << 20


def test_run_checks_and_times_the_exports_on_the_cpu(bench, monkeypatch, tmp_path, capsys):
    """Export for the CPU at a small ragged problem, then the run as on the GPU (its CUDA event
    timer is the wall clock there): every variant checked against SDPA, timed, tabled;
    a variant that computes something else is reported as a mismatch (exit status 1)."""
    pytest.importorskip("torch")
    monkeypatch.setattr(bench, "DEVICE", "cpu")
    monkeypatch.setattr(bench, "PROBLEM", {**bench.PROBLEM, "batch": 2, "heads": 8, "kv_heads": 2, "seq_kv": 300,
                                           "dim": 32})
    bench.export(tmp_path, "cpu", ["table", "n64_s2"])
    assert bench.run(tmp_path, 1) == 0
    out = capsys.readouterr().out
    assert "| table |" in out and "| n64_s2 |" in out and "MISMATCH" not in out, out
    assert bench.run(tmp_path, 1, ["n64_s2"]) == 0  # --only at the run: those variants alone
    out = capsys.readouterr().out
    assert "| n64_s2 |" in out and "| table |" not in out, out
    # a negative control: the manifest's scale no longer the one the kernels were built with
    manifest = bench.variants.read_manifest(tmp_path)
    manifest["problem"]["scale"] *= 2
    bench.variants.write_manifest(tmp_path, manifest)
    assert bench.run(tmp_path, 1) == 1
    assert "MISMATCH" in capsys.readouterr().out
