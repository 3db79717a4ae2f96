"""bench/gemm_tf32.py without a GPU: the export writes the gemm operator's float32 kernels
(swapped wgmma for a @ b, mma.sync before it, descriptors for a @ b.T) with a manifest the
run reads, the run's element check accepts TF32 results and rejects a wrong or unwritten
element, and the run checks, times and ranks what a manifest lists (on the CPU, with stand-in
kernels: the exported CUDA kernels need the GPU)."""
from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def bench(load_bench):
    return load_bench("gemm_tf32")


def test_export_writes_each_engine(bench, tmp_path):
    bench.export(tmp_path, "sm_90a", (256,), ("128x128x32x2",))
    manifest = bench.variants.read_manifest(tmp_path)
    engines = {e["label"]: e["engine"] for e in manifest["kernels"]}
    assert engines == {"nn": "wgmma-swapped", "nn-mma": "mma", "nt": "wgmma", "nn-128x128x32x2": "wgmma-swapped"}
    for entry in manifest["kernels"]:
        assert (tmp_path / entry["name"]).is_dir() and entry["size"] == 256


def _truncate(x):
    """float32 with the 13 low mantissa bits dropped: what a unit that truncates to TF32 reads."""
    return (x.contiguous().view(torch.int32) & -8192).view(torch.float32)


def test_check_takes_tf32_results_only(bench):
    gen = torch.Generator().manual_seed(0)
    k = 256
    a, b = torch.randn(64, k, generator=gen), torch.randn(k, 48, generator=gen)
    c = (_truncate(a).double() @ _truncate(b).double()).float()
    ok, worst = bench._check(torch, a, b, c)
    assert ok and worst < 1.0
    wrong = c.clone()
    wrong[5, 7] += 2.0 ** -6 * wrong.abs().max()
    assert not bench._check(torch, a, b, wrong)[0]
    unwritten = c.clone()
    unwritten[63, 47] = float("nan")
    assert not bench._check(torch, a, b, unwritten)[0]


def test_run_checks_times_and_ranks_on_the_cpu(bench, monkeypatch, tmp_path, capsys):
    """The run as on the GPU at a small size, with kernels that stand in for the exports: TF32
    products pass and are ranked per problem, --only picks by part of the name, and a kernel
    that leaves an element unwritten is reported (exit status 1)."""
    def stand_in(name, trans_b):
        def kernel(a, b, bias, c):
            b_kn = b[0].t() if trans_b else b[0]
            c[0].copy_(_truncate(a[0]) @ _truncate(b_kn))
            if "hole" in name:
                c[0, 3, 5] = float("nan")
        return kernel

    kernels = [{"name": f"gemm_f32_{label}_64", "label": label, "size": 64, "trans_b": label == "nt",
                "engine": "wgmma", "block": [384, 1, 1], "grid": [1, 1, 1], "shared_memory": 0}
               for label in ("nn", "nt", "nn-hole")]
    bench.variants.write_manifest(tmp_path, {"arch": "sm_90a", "kernels": kernels})
    trans = {k["name"]: k["trans_b"] for k in kernels}
    monkeypatch.setattr(bench, "DEVICE", "cpu")
    monkeypatch.setattr(bench.variants, "load", lambda path: stand_in(path.name, trans[path.name]))
    monkeypatch.setitem(sys.modules, "tvm", sys.modules.get("tvm"))  # --run keeps TVM out: restored after
    assert bench.main(["--run", str(tmp_path), "--rounds", "1", "--only", "_nn_,_nt_"]) == 0
    out = capsys.readouterr().out
    assert "float32 nn 64^3:" in out and "float32 nt 64^3:" in out and "hole" not in out, out
    assert "all results within the TF32 bound" in out
    assert bench.run(tmp_path, ["hole"], 1) == 1
    out = capsys.readouterr().out
    assert "gemm_f32_nn-hole_64" in out and "WRONG RESULT" in out and "1 kernel(s) gave wrong results" in out, out
