"""bench/sgemm_variants.py without a GPU: the export compiles the chosen variants of the FMA
GEMM for sm_90a (the table's config: two launches; the one before it, a `__launch_bounds__`
probe; with `nvcc` / `nvrtc`, each again by that compiler) and writes a manifest the run reads; the run
checks every element against float64 and times (on the CPU, with stand-in kernels: the
exported CUDA kernels need the GPU)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang_cuda")


@pytest.fixture(scope="module")
def bench(load_bench):
    return load_bench("sgemm_variants")


def test_export_writes_the_variants_and_the_manifest(bench, monkeypatch, tmp_path):
    from tilelang_core.plugin import get_plugin_manager

    monkeypatch.setitem(bench.VARIANTS, "probe", ({**bench.KMINOR, "fma_swizzle_a": True, "fma_min_blocks": 0}, {}, 2))
    entries = bench.export(tmp_path, "cuda/sm_90a", ["table", "before", "probe"], sizes=(4096,))
    manifest = bench.variants.read_manifest(tmp_path)
    assert [e["name"] for e in manifest["variants"]] == ["table_4096", "before_4096", "probe_4096"]
    assert manifest["variants"] == json.loads(json.dumps(entries))
    table, before, probe = manifest["variants"]
    target = get_plugin_manager().parse_target("cuda/sm_90a")
    config = bench.variant_config(target, bench.problem_of(4096), {})
    assert table["config"] == {k: v for k, v in config.items() if k.startswith("fma_") and k != "fma_warps"}
    assert all(table["config"][k] for k in ("fma_offset_loop", "fma_pretranspose", "fma_prefetch"))
    kminor = {"fma_transpose_a": False, "fma_pretranspose": False}
    assert before["config"] == {**table["config"], "fma_offset_loop": False, **kminor}
    assert probe["config"] == {**table["config"], **kminor, "fma_swizzle_a": True, "fma_min_blocks": 0}
    # the table: A written as (K, M) by a first launch, then the prefetch form (16 x 8 outputs a
    # thread); A K-minor has no prefetch form: 8 x 8, one launch
    assert (table["launches"], before["launches"], probe["launches"]) == (2, 1, 1)
    assert table["threads"] == 128 and before["threads"] == probe["threads"] == 256 and table["grid"] == [32, 32, 1]
    assert probe["probe_blocks_per_sm"] == 2 and table["probe_blocks_per_sm"] == 0
    assert "__launch_bounds__(256, 2)" in (tmp_path / "probe_4096" / "kernel.src").read_text()
    source = (tmp_path / "table_4096" / "kernel.src").read_text()
    assert "__launch_bounds__(128, 2)" in source and source.count("__global__") == 2  # fma_min_blocks
    assert "cp_async_ca" not in source  # both tiles arrive 16 bytes per cp.async
    assert all(e["compiler"].startswith(("nvrtc ", "nvcc ")) for e in entries)
    if table["sass"]:  # cuobjdump found: the main loop is FMA with 16-byte shared reads only
        for entry, (tm, tn) in ((table, (16, 8)), (before, (8, 8)), (probe, (8, 8))):
            loop, k = entry["sass"]["loop"], entry["config"]["fma_block_K"]
            assert loop["FFMA"] == tm * tn * k and loop["LDS.128"] == (tm + tn) // 4 * k, entry["name"]
            assert loop["LDS other"] == 0 and loop["FFMA"] >= 0.85 * loop["instructions"], entry["name"]
            assert entry["sass"]["local_memory_ops"] == 0 and entry["sass"]["stack"] == 0
            # two blocks per SM: 128 registers for 256 threads, 255 for 128
            assert entry["sass"]["registers"] <= 65536 // (2 * entry["threads"]), entry["name"]
    assert sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file()) < 1 << 20


def _nvrtc_library():
    try:
        import cuda.pathfinder as pathfinder

        return pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path
    except Exception:  # noqa: BLE001 - no pathfinder or no NVRTC here
        return None


def test_export_builds_each_variant_again_with_nvcc_and_nvrtc(bench, tmp_path):
    """`--nvcc PATH` / `--nvrtc LIB`: further builds of each variant by those compilers, beside
    the first, named and recorded (compiler, registers, stack) in the manifest; the run reads
    them all."""
    from tilelang_cuda import compile as cuda_compile

    nvcc, library = cuda_compile._find_tool("nvcc"), _nvrtc_library()
    if nvcc is None or library is None:
        pytest.skip("needs nvcc and an NVRTC library here")
    nvcc_name = cuda_compile.toolchain_version("nvcc")
    nvrtc_name = cuda_compile.toolchain_version()
    entries = bench.export(tmp_path, "cuda/sm_90a", ["table"], sizes=(256,), nvcc=nvcc, nvrtc=library)
    suffix = "_nvcc" + ".".join(nvcc_name.split()[1].split(".")[:2])
    assert [e["name"] for e in entries] == ["table_256", f"table_256{suffix}",
                                            "table_256_nvrtc" + nvrtc_name.split()[1]]
    assert [e["compiler"] for e in entries] == [nvrtc_name, nvcc_name, nvrtc_name]
    # the table's tile loop is its second launch; a rebuild is one cubin holding both entries
    first, second, third = ((tmp_path / e["name"] / "main_launch1.bin").read_bytes() for e in entries)
    assert first != second and second[:4] == third[:4] == b"\x7fELF"
    assert (tmp_path / entries[1]["name"] / "main_launch0.bin").read_bytes() == second
    assert bench.variants.read_manifest(tmp_path)["variants"] == json.loads(json.dumps(entries))
    for entry in entries[1:]:
        if entry["sass"]:
            assert entry["sass"]["registers"] <= 65536 // (2 * entry["threads"]) and entry["sass"]["stack"] == 0, entry


def test_nvrtc_library_builds_what_the_backend_builds(bench, tmp_path):
    """`--nvrtc LIB` calls that NVRTC with the CUDA backend's flags: given the backend's own
    library it gives the backend's cubin byte for byte (so a build by 13.0's library is what
    the backend builds where 13.0 is installed, as on the H100 image)."""
    from tilelang_cuda.compile import compile_cuda

    library = _nvrtc_library()
    if library is None:
        pytest.skip("no NVRTC library here")
    build, name = bench.nvrtc_compiler(library, "sm_90a")
    source = '#include "tl_cuda_common.h"\nextern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'
    assert name.startswith("nvrtc 13.") and build(source) == compile_cuda(source, "sm_90a")
    with pytest.raises(RuntimeError, match=f"{name} failed on the kernel"):
        build("this is not CUDA")
    with pytest.raises(SystemExit, match="no NVRTC library there"):
        bench.nvrtc_compiler(str(tmp_path), "sm_90a")


def test_nvcc_that_the_backend_would_not_run_is_refused(bench, tmp_path):
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    with pytest.raises(SystemExit, match="the CUDA backend's compiler=\"nvcc\" runs"):
        bench.export(tmp_path / "out", "cuda/sm_90a", ["table"], nvcc=str(fake))
    with pytest.raises(SystemExit, match="no such executable"):
        bench.export(tmp_path / "out", "cuda/sm_90a", ["table"], nvcc=str(tmp_path / "missing"))


def test_command_line_hands_nvcc_and_nvrtc_to_the_export(bench, monkeypatch, tmp_path):
    """`--nvcc` / `--nvrtc` on top of the shared command line (`variants.parser`): they reach
    the export with the target and --only list; --run gets the rounds and the same list."""
    calls = []
    monkeypatch.setitem(sys.modules, "tvm", sys.modules.get("tvm"))  # restored after the test
    monkeypatch.setattr(bench, "export", lambda *args, **kw: calls.append(("export", args, kw)))
    monkeypatch.setattr(bench, "run", lambda *args: calls.append(("run", args)) or 3)
    argv = ["--export", str(tmp_path), "--run", str(tmp_path), "--only", "table,before", "--nvcc", "/x/nvcc",
            "--nvrtc", "/y/lib", "--arch", "sm_80", "--rounds", "2"]
    assert bench.main(argv) == 3
    assert calls == [("export", (tmp_path, "cuda/sm_80", ["table", "before"]), {"nvcc": "/x/nvcc", "nvrtc": "/y/lib"}),
                     ("run", (tmp_path, 2, ["table", "before"]))]
    calls.clear()
    assert bench.main(["--export", str(tmp_path)]) == 0
    assert calls == [("export", (tmp_path, "cuda/sm_90a", None), {"nvcc": None, "nvrtc": None})]


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
    kinds = {"float32": "float32", "float32_nvcc13.0": "float32", "kmajor": "float32", "kminor_b": "float32",
             "tf32": "tf32", "hole": "hole"}
    variants = []
    for name in kinds:
        problem = bench.problem_of(64, {"trans_a": name == "kmajor", "trans_b": name == "kminor_b"})
        variants.append({"name": name, "variant": name.split("_nvcc")[0], "size": 64, "changes": {},
                         "problem": problem, "probe_blocks_per_sm": 0, "config": {}, "threads": 256,
                         "grid": [1, 1, 1], "shared_memory": 0, "sass": {"registers": 128, "stack": 8},
                         "compiler": "nvcc 13.0.88" if "_nvcc" in name else "nvrtc 13.5"})
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
    assert "| float32 | 64 | - [nvrtc 13.5] | 256 | 0 | 128 (8 B stack) |" in out, out
    assert "| float32 | 64 | - [nvcc 13.0.88] |" in out and "MISMATCH" not in out, out
    assert "| kmajor | 64 | - A as (K, M) [nvrtc 13.5] |" in out and "| kminor_b | 64 | - B as (N, K) [" in out
    # the best per compiler; A as (K, M) is another problem: not a candidate
    assert "best at 64^3 (nvrtc 13.5): float32 " in out and "best at 64^3 (nvcc 13.0.88): float32 " in out
    assert bench.run(tmp_path, 1, ["tf32"]) == 1
    assert bench.run(tmp_path, 1, ["hole"]) == 1
    out = capsys.readouterr().out
    assert out.count("MISMATCH") == 4, out  # each in the line and in the table
