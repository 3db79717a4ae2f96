"""`tilelang conformance`: reports (terminal, JSON, Markdown with the versions and the
capability table), exit codes, levels, and the export -> `--from` round trip without TVM."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tilelang_conformance.cli import main
from tilelang_conformance.report import format_cell

REPO = Path(__file__).resolve().parents[2]
CASES = ["-k", "elementwise.float32", "-k", "gemm.transpose.nt", "-k", "debug.*", "-k", "errors.call_shape",
         "-k", "errors.gemm_k_mismatch"]


@pytest.fixture(scope="module")
def cpu_runs():
    from tilelang_core import get_plugin_manager

    from tilelang_conformance.levels import available_level

    if available_level(get_plugin_manager().parse_target("cpu"))[0] != "run":
        pytest.skip("the CPU backend cannot run kernels here (no C compiler)")


def test_cells_keep_levels_apart():
    assert format_cell(Counter({"run": 9, "codegen": 2})) == "2 codegen · 9 run"
    assert format_cell(Counter({"-": 3})) == "3"
    assert format_cell(None) == ""


def test_cpu_run_writes_json_and_markdown(tmp_path, capsys, cpu_runs):
    out_json, out_md = tmp_path / "r.json", tmp_path / "md"
    out_md.mkdir()
    assert main(["--target", "cpu", *CASES, "--seed", "5", "--json", str(out_json), "--markdown", str(out_md)]) == 0
    printed = capsys.readouterr().out
    assert "feature x outcome" in printed and "at level run" in printed
    report = json.loads(out_json.read_text())["targets"][0]
    for key in ("tilelang-core", "backend", "toolchain", "tilelang-conformance"):
        assert report["header"][key], key
    assert "tilelang-cpu" in report["header"]["backend"] and "cc=" in report["header"]["toolchain"]
    assert report["capabilities"]["dtypes"].startswith("bool") and report["seed"] == 5
    outcomes = {r["case"]: (r["outcome"], r["level"]) for r in report["results"]}
    assert outcomes["elementwise.float32"] == ("PASS", "run")
    assert outcomes["errors.gemm_k_mismatch"] == ("PASS", "codegen")
    assert outcomes["debug.assert.fail"] == ("PASS", "run")
    claims = {c["capability"]: c for c in report["claims"]}
    assert claims["printf"]["status"] == "PASS (run)" and claims["sse2"]["status"].startswith("not probed")
    (md,) = out_md.glob("*.md")
    assert md.name.startswith("cpu-")
    text = md.read_text()
    for needle in ("evidence level: run", "| feature | PASS | FAIL | XFAIL | XPASS | N/A |", "| debug | 3 run |",
                   "tilelang-cpu", "Capability table", "| `printf` | debug.print | PASS (run) |"):
        assert needle in text, needle


def test_failing_case_sets_the_exit_status(tmp_path, monkeypatch, cpu_runs):
    from tilelang_core.plugin import TargetHooks

    monkeypatch.setattr(TargetHooks, "conformance_expectations", lambda self: {"elementwise.float32": "pretend"})
    out = tmp_path / "r.json"
    assert main(["--target", "cpu", "-k", "elementwise.float32", "--json", str(out)]) == 1
    (result,) = json.loads(out.read_text())["targets"][0]["results"]
    assert result["outcome"] == "XPASS"


def test_usage_errors(capsys):
    assert main([]) == 2
    assert main(["--backend", "no_such_backend"]) == 2
    assert "no backend named 'no_such_backend'" in capsys.readouterr().err
    assert main(["--target", "cpu/not-an-arch"]) == 2


def test_run_level_needs_a_device(capsys):
    from tilelang_core import get_plugin_manager

    target = get_plugin_manager().parse_target("cuda/sm_80")
    if any(d.device for d in get_plugin_manager().detections() if d.kind == "cuda"):
        pytest.skip("a CUDA device is present")
    assert main(["--target", str(target), "--level", "run", "-k", "elementwise.float32"]) == 2
    assert "--export" in capsys.readouterr().err


def test_tilelang_cli_has_the_subcommand():
    from tilelang_core.cli.main import build_parser

    args = build_parser().parse_args(["conformance", "--backend", "cpu", "--level", "compile"])
    assert args.backend == ["cpu"] and args.level == "compile"


def _from(directory: Path, *extra: str) -> subprocess.CompletedProcess:
    """`--from` in a fresh process where TVM cannot be imported and no backend is installed
    through entry points (the backend registers from the manifest), as on a GPU machine."""
    code = ("import sys; sys.modules['tvm'] = None; from tilelang_conformance.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    env = dict(os.environ, TILELANG_BACKENDS="__none__")
    return subprocess.run([sys.executable, "-c", code, "--from", str(directory), *extra],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def test_export_then_run_from_without_tvm(tmp_path, cpu_runs):
    export = tmp_path / "export"
    assert main(["--target", "cpu", *CASES, "--export", str(export)]) == 0
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["backend"]["module"] == "tilelang_cpu.plugin"
    entries = {e["name"]: e for e in manifest["cases"]}
    assert entries["errors.gemm_k_mismatch"]["result"]["outcome"] == "PASS"  # decided at export
    assert (export / entries["gemm.transpose.nt"]["kernel"] / "kernel.json").exists()
    assert sum(p.stat().st_size for p in export.rglob("*") if p.is_file()) < 5e6

    done = _from(export, "--json", str(tmp_path / "from.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    results = {r["case"]: r for r in json.loads((tmp_path / "from.json").read_text())["targets"][0]["results"]}
    assert results["gemm.transpose.nt"]["outcome"] == "PASS" and results["gemm.transpose.nt"]["level"] == "run"
    assert results["debug.print"]["outcome"] == "PASS" and results["errors.call_shape"]["outcome"] == "PASS"

    # tamper with an expected output: the run on the other side must catch it
    data = export / entries["elementwise.float32"]["data"]
    with np.load(data) as stored:
        arrays = {k: stored[k] for k in stored.files}
    arrays["ref0_C"] = arrays["ref0_C"] + 1.0
    np.savez_compressed(data, **arrays)
    done = _from(export, "-k", "elementwise.float32", "-v")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL" in done.stdout and "elements off" in done.stdout


def test_a_backend_at_run_level_skips_the_targets_that_cannot_run_here(capsys):
    import platform

    if platform.machine().lower() in ("aarch64", "arm64"):
        pytest.skip("cpu/aarch64 runs on this host")
    assert main(["--backend", "cpu", "--level", "run", "-k", "no.such.case"]) == 0
    err = capsys.readouterr().err
    assert "skipped cpu/aarch64: --level run is not available here" in err
    assert main(["--target", "cpu/aarch64", "--level", "run", "-k", "no.such.case"]) == 2  # named: an error
