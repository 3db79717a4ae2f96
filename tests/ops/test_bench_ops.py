"""bench/ops.py without a GPU: every operator has a timed row, every case and row captures the
kernel it will launch (what the run precompiles), rows check on the CPU against torch, and
the report writes ops.md, ops.json and (with matplotlib) ops.png."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tilelang_core import ops

torch = pytest.importorskip("torch")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_ops", REPO / "bench" / "ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.DEVICE = "cpu"
    return module


@pytest.fixture(scope="module")
def problems(bench):
    return bench._problems(torch, "small")


def test_every_operator_is_timed_and_precompiled(bench, problems):
    timed, _ = bench._capture_jobs(bench._calls({}, problems, None))
    # every operator has a speed row; the fp8 quantize row cannot capture on the CPU (no fp8 dtype)
    assert set(ops.operators()) - {name for name, _, _ in timed} == {"quantize_per_token"}
    cases = bench.check_cases(None)
    jobs, of_label = bench._capture_jobs(bench._calls(cases, problems, None))
    assert {name for name, _, _ in jobs} == set(ops.operators())
    assert all(target.startswith("cpu") for _, target, _ in jobs)
    speed_rows = {name for phase, name in of_label if phase == "speed"}
    assert set(problems) - speed_rows == {"quantize_per_token"} and set(of_label.values()) == set(range(len(jobs)))
    assert jobs[of_label["check", "gemm.float32"]][2]["dtype"] == "float32"
    assert jobs[of_label["speed", "gemm"]][2]["dtype"] == "float16"
    summary = bench.precompile([jobs[of_label["speed", "softmax"]]], 1)  # in this process
    assert summary["kernels"] == 1 and not summary["failed"] and summary["job_s"][0] > 0


@pytest.mark.parametrize("name", ["softmax", "gemm_float32_high", "gemm_float32_high_nt", "cumsum", "add_rms_norm"])
def test_rows_check_against_torch(bench, problems, name):
    (ours, _, reference, work, unit, tolerance), _ = problems[name]()
    good, err = bench._check(torch, ours, reference, tolerance)
    assert good and err < 1e-2 and work > 0 and unit in ("GB/s", "TFLOP/s")


def test_a_wrong_output_fails_the_check(bench, problems):
    (ours, _, reference, _, _, tolerance), _ = problems["softmax"]()
    assert not bench._check(torch, lambda: ours() * 1.05, reference, tolerance)[0]


def test_report_files(bench, tmp_path):
    rows = [{"op": "softmax", "ours_ms": 0.5, "torch_ms": 0.6, "ratio": 1.2, "rate": 2000.0, "unit": "GB/s",
             "max_rel_err": 1e-4, "ok": True, "compile_s": 1.5, "others": {}, "memory_bound": True},
            {"op": "gemm", "ours_ms": 2.0, "torch_ms": 1.0, "ratio": 0.5, "rate": 500.0, "unit": "TFLOP/s",
             "max_rel_err": 1e-3, "ok": False, "compile_s": 3.0, "others": {"Triton": 0.9}, "memory_bound": False},
            {"op": "topk", "error": "not timed: the run's time budget (--budget) was spent", "ok": True,
             "skipped": True}]
    meta = {"device": "test", "torch": torch.__version__, "size": "small", "wall_s": 12.0}
    bench.report(tmp_path, meta, rows, [{"case": "gemm.float32", "ok": False}])
    text = (tmp_path / "ops.md").read_text()
    assert "| softmax | 0.5000 | 0.6000 | **1.20x** |" in text and "MISMATCH" in text and "not timed" in text
    assert "0 passed, 1 failed: gemm.float32" in text
    run = json.loads((tmp_path / "ops.json").read_text())
    assert [r["op"] for r in run["rows"]] == ["softmax", "gemm", "topk"] and run["memory_bound_floor"] == 0.9
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not (tmp_path / "ops.png").exists()
    else:
        assert (tmp_path / "ops.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_device_command_runs_end_to_end(bench, monkeypatch, tmp_path):
    """`bench/ops.py --check --speed --out DIR` as the device runs it, on the CPU: CUDA's
    availability and its event timer stood in for (the timer by the wall clock), every phase
    real: capture, precompile, check cases, speed rows with their checks, the report."""
    import time

    def wall_ms(fn, warmup, rep):
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3

    monkeypatch.setattr(bench, "_time", wall_ms)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "cpu (stand-in)")
    rc = bench.main(["--check", "--speed", "--out", str(tmp_path), "--ops", "softmax,cumsum", "--size", "small",
                     "--jobs", "1", "--rounds", "1", "--rep", "1", "--warmup", "0"])
    run = json.loads((tmp_path / "ops.json").read_text())
    assert rc == 0 and run["device"] == "cpu (stand-in)"
    assert {c["case"] for c in run["check"]} >= {"softmax.float32", "cumsum.reverse"} and all(c["ok"] for c in run["check"])
    assert [r["op"] for r in run["rows"]] == ["softmax", "cumsum"] and all(r["ok"] and r["ratio"] > 0 for r in run["rows"])
    assert run["precompile"]["kernels"] >= 4 and not run["precompile"]["failed"]
    assert "| cumsum |" in (tmp_path / "ops.md").read_text()
