"""bench/gemm_tf32.py without a GPU: the export writes the gemm operator's float32 kernels
(swapped wgmma for a @ b, mma.sync before it, descriptors for a @ b.T) with a manifest the
run reads, and the run's element check accepts TF32 results and rejects a wrong or unwritten
element."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gemm_tf32", REPO / "bench" / "gemm_tf32.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_export_writes_each_engine(bench, tmp_path):
    bench.export(tmp_path, "sm_90a", (256,), ("128x128x32x2",))
    manifest = json.loads((tmp_path / bench.MANIFEST).read_text())
    engines = {e["label"]: e["engine"] for e in manifest["kernels"]}
    assert engines == {"nn": "wgmma-swapped", "nn-mma": "mma", "nt": "wgmma", "nn-128x128x32x2": "wgmma-swapped"}
    for entry in manifest["kernels"]:
        assert (tmp_path / entry["name"]).is_dir() and entry["size"] == 256


def test_check_takes_tf32_results_only(bench):
    gen = torch.Generator().manual_seed(0)
    k = 256
    a, b = torch.randn(64, k, generator=gen), torch.randn(k, 48, generator=gen)
    truncate = lambda x: (x.view(torch.int32) & -8192).view(torch.float32)  # noqa: E731  (13 low bits dropped)
    c = (truncate(a).double() @ truncate(b).double()).float()
    ok, worst = bench._check(torch, a, b, c)
    assert ok and worst < 1.0
    wrong = c.clone()
    wrong[5, 7] += 2.0 ** -6 * wrong.abs().max()
    assert not bench._check(torch, a, b, wrong)[0]
    unwritten = c.clone()
    unwritten[63, 47] = float("nan")
    assert not bench._check(torch, a, b, unwritten)[0]
