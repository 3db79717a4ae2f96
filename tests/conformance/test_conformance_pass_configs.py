"""`tilelang conformance --pass-config KEY=VALUE`: checked by the core, recorded in reports and
exports, replayed by `--from`; on cuda/sm_90a the three switches give the older path (mma.sync
+ cp.async, no wgmma, no TMA) and the cases that probe what they switch off are N/A. Also the
probes of warp_shuffle, ldmatrix and async_barrier, and that only `cluster` stays unprobed there."""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from tilelang_conformance.cli import main
from tilelang_conformance.configs import PassConfigError, parse_pass_configs, switched_off

OLDER_PATH = {"tl.disable_wgmma": 1, "tl.disable_tma_lower": 1, "tl.disable_warp_specialized": 1}
OLDER_PATH_ARGS = [arg for key in OLDER_PATH for arg in ("--pass-config", f"{key}=1")]


def _target(spec: str):
    from tilelang_core import get_plugin_manager
    from tilelang_core.plugin import TargetError

    try:
        return get_plugin_manager().parse_target(spec)
    except TargetError as exc:
        pytest.skip(f"{spec} is not installed here: {exc}")


@pytest.fixture(scope="module")
def sm90a():
    from tilelang_conformance.levels import available_level

    target = _target("cuda/sm_90a")
    best, why = available_level(target)
    if best == "codegen":
        pytest.skip(f"no CUDA toolchain here: {why}")
    return target


def test_values_parse_and_bad_configs_are_usage_errors(capsys):
    assert parse_pass_configs(["tl.disable_wgmma=1", "tl.enable_fast_math=false", "tl.device_compile_flags=-lineinfo",
                               "tl.disable_tma_lower = on"]) == {
        "tl.disable_wgmma": 1, "tl.enable_fast_math": False, "tl.device_compile_flags": "-lineinfo",
        "tl.disable_tma_lower": True}
    with pytest.raises(PassConfigError, match=r"unknown pass config 'tl\.nope'; valid keys: .*tl\.disable_wgmma"):
        parse_pass_configs(["tl.nope=1"])
    with pytest.raises(PassConfigError, match="expected KEY=VALUE"):
        parse_pass_configs(["tl.disable_wgmma"])
    with pytest.raises(PassConfigError, match="tl.disable_wgmma is a switch; give 1, 0, true or false"):
        parse_pass_configs(["tl.disable_wgmma=maybe"])
    with pytest.raises(PassConfigError, match="given twice"):
        parse_pass_configs(["tl.disable_wgmma=1", "tl.disable_wgmma=0"])
    assert main(["--target", "cpu", "--pass-config", "tl.nope=1"]) == 2
    assert "unknown pass config 'tl.nope'" in capsys.readouterr().err


def test_what_the_switches_turn_off_is_read_from_the_capabilities():
    assert switched_off(_target("cpu").capabilities, OLDER_PATH) == {}
    off = switched_off(_target("cuda/sm_90a").capabilities, OLDER_PATH)
    assert off == {"wgmma": "tl.disable_wgmma=1", "tma": "tl.disable_tma_lower=1",
                   "setmaxnreg": "tl.disable_warp_specialized=1"}
    assert switched_off(_target("cuda/sm_80").capabilities, OLDER_PATH) == {}  # nothing of it declared
    assert switched_off(_target("cuda/sm_90a").capabilities, {"tl.disable_wgmma": 0}) == {}


def test_export_records_the_configs_and_from_replays_them(tmp_path, capsys):
    from tilelang_conformance.levels import available_level

    if available_level(_target("cpu"))[0] != "run":
        pytest.skip("the CPU backend cannot run kernels here (no C compiler)")
    out = tmp_path / "export"
    cases = ["-k", "elementwise.float32", "-k", "gemm.pipelined.tma"]
    assert main(["--target", "cpu", *cases, "--seed", "3", "--export", str(out), *OLDER_PATH_ARGS]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["pass_configs"] == {k: 1 for k in OLDER_PATH}
    assert manifest["header"]["pass configs"] == "tl.disable_tma_lower=1, tl.disable_warp_specialized=1, tl.disable_wgmma=1"
    assert manifest["switched_off"] == {}  # the CPU declares none of them: every case still runs
    report_path = tmp_path / "r.json"
    assert main(["--from", str(out), "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())["targets"][0]
    assert report["pass_configs"] == manifest["pass_configs"]
    assert report["header"]["pass configs"] == manifest["header"]["pass configs"]
    assert {r["case"]: r["outcome"] for r in report["results"]} == {"elementwise.float32": "PASS",
                                                                     "gemm.pipelined.tma": "PASS"}
    capsys.readouterr()
    assert main(["--from", str(out), "--pass-config", "tl.disable_wgmma=1"]) == 2
    assert "compiled with pass configs tl.disable_tma_lower=1" in capsys.readouterr().err


def _sass_counts(binary: bytes) -> Counter:
    from tilelang_cuda.compile import disassemble

    return Counter(re.findall(r"\b(HGMMA|HMMA|LDGSTS|UTMALDG|LDSM)\b", disassemble(binary)))


@pytest.mark.parametrize("name", ["gemm.dtype.float16", "gemm.dtype.bfloat16"])
def test_the_switches_give_the_older_path_on_sm_90a(sm90a, name):
    """The suite's own compile-level path (render + the toolchain) with and without the switches:
    the source and the SASS show which matrix instruction and which copy engine ran."""
    from tilelang_conformance.build import compile_binary, render
    from tilelang_conformance.case import registry

    program = registry()[name].spec(sm90a).build_program()
    older = render(program, sm90a, OLDER_PATH)
    assert "tl::mma_m16n8k16" in older.source and "tl::cp_async_cg16" in older.source
    assert not re.search(r"wgmma|tma_load|tensor_map|mbarrier", older.source)
    default = render(program, sm90a)
    assert "tl::wgmma_" in default.source and "tl::tma_load" in default.source
    try:
        old_sass, new_sass = _sass_counts(compile_binary(older, sm90a, OLDER_PATH)), _sass_counts(compile_binary(default, sm90a))
    except RuntimeError as exc:  # cuobjdump/nvdisasm missing: the source checks above stand
        pytest.skip(str(exc))
    assert old_sass["HMMA"] > 0 and old_sass["LDGSTS"] > 0 and old_sass["LDSM"] > 0
    assert old_sass["HGMMA"] == 0 and old_sass["UTMALDG"] == 0
    assert new_sass["HGMMA"] > 0 and new_sass["UTMALDG"] > 0 and new_sass["HMMA"] == 0


def test_sm_90a_compile_level_with_the_switches(sm90a):
    from tilelang_conformance.report import claim_status
    from tilelang_conformance.suite import run_target

    report = run_target(sm90a, "compile", ["gemm.dtype.float16", "gemm.pipelined.tma", "gemm.warp_specialized"],
                        seed=1, pass_configs=OLDER_PATH)
    outcomes = {r.case: (r.outcome, r.detail) for r in report.results}
    assert outcomes["gemm.dtype.float16"][0] == "PASS"
    assert outcomes["gemm.warp_specialized"][0] == "PASS"  # barriers the kernel allocates itself stay
    outcome, detail = outcomes["gemm.pipelined.tma"]
    assert outcome == "N/A" and "tma (tl.disable_tma_lower=1)" in detail and "setmaxnreg" in detail
    by_case = {r.case: r for r in report.results}
    status = {c.capability: claim_status(c, by_case, report.switched_off) for c in report.claims}
    assert status["wgmma"] == "switched off by tl.disable_wgmma=1: not probed in this run"
    assert status["mma.sync"].startswith("PASS (compile)")
    assert report.header["pass configs"] == "tl.disable_tma_lower=1, tl.disable_warp_specialized=1, tl.disable_wgmma=1"
    assert "wgmma (tl.disable_wgmma=1)" in report.header["switched off by the pass configs"]


def test_sm_90a_probes_show_in_the_source(sm90a):
    """warp_shuffle, ldmatrix and async_barrier each have a case whose CUDA source uses them;
    `cluster` is the one declared capability no case can reach (the language has no clusters)."""
    from tilelang_conformance.build import render
    from tilelang_conformance.case import registry
    from tilelang_conformance.probes import cases_for, claims_for

    cases = registry()
    expect = {"reduce.lanes": "__shfl_xor_sync", "gemm.two_warps": "tl::ldmatrix_x4",
              "gemm.pipelined.tma": "tl::mbarrier_expect_tx"}
    for name, needle in expect.items():
        assert needle in render(cases[name].spec(sm90a).build_program(), sm90a).source, name
    claims = {c.capability: c.cases for c in claims_for(sm90a.capabilities, cases_for(sm90a, cases.values()))}
    assert "reduce.lanes" in claims["warp_shuffle"] and "gemm.two_warps" in claims["ldmatrix"]
    assert "gemm.pipelined.tma" in claims["async_barrier"]
    assert [c for c, probes in claims.items() if not probes] == ["cluster"]


def _older_path_cases() -> list:
    from tilelang_conformance.case import registry, select

    chosen = select(registry().values(), ["gemm.*", "layout.*", "flash_attention.*", "symbolic.gemm_m"])
    return [pytest.param(c.name, id=c.name) for c in sorted(chosen, key=lambda c: c.name)]


@pytest.mark.parametrize("name", _older_path_cases())
def test_matrix_cases_compile_on_the_older_path_of_sm_90a(sm90a, name, conformance_seed):
    """What the H100 runs with the switches, at the compile level in CI: every case that uses
    matrix instructions passes on mma.sync + cp.async, or is N/A because it probes what they
    switch off; so the older path does not rot on Hopper between device runs."""
    from tilelang_core.plugin import hooks_for

    from tilelang_conformance.case import registry
    from tilelang_conformance.evaluate import evaluate

    result = evaluate(registry()[name], sm90a, "compile", conformance_seed, hooks_for(sm90a).conformance_expectations(),
                      OLDER_PATH)
    if result.outcome == "N/A":
        assert "switch off" in result.detail or "does not declare" in result.detail, result.detail
        return
    assert result.outcome in ("PASS", "XFAIL"), (
        f"{result.outcome} at {result.stage}: {result.detail}\nreproduce: tilelang conformance --target cuda/sm_90a "
        f"--level compile -k '{name}' --seed {conformance_seed} -v " + " ".join(OLDER_PATH_ARGS))


def test_wgmma_is_credited_only_by_cases_whose_source_uses_it():
    """The `wgmma` claim of cuda/sm_90a lists the cases that name it (A and B K-major, one
    warpgroup; and the float32 dtype case, B as (K, N), which wgmma's tf32 form takes swapped),
    and each of their CUDA sources calls a wgmma of its dtype; `mma.sync` keeps the other dtype
    cases of B as (K, N) whose GEMMs wgmma cannot take (s8), and drops the wgmma ones.
    Rendered without a toolchain."""
    from tilelang_conformance.build import render
    from tilelang_conformance.case import registry
    from tilelang_conformance.probes import cases_for, claims_for

    target = _target("cuda/sm_90a")
    cases = cases_for(target, registry().values())
    claims = {c.capability: c.cases for c in claims_for(target.capabilities, cases)}
    kmajor = {"float16": "f32_f16<", "float32": "k8_f32_tf32(", "int8": "k32_s32_s8(",
              "float8_e4m3fn": "k32_f32_e4m3(", "float8_e5m2": "k32_f32_e5m2("}
    assert set(claims["wgmma"]) == {f"gemm.kmajor.{d}" for d in kmajor} | {"gemm.dtype.float32"}
    for dtype, call in kmajor.items():
        source = render(registry()[f"gemm.kmajor.{dtype}"].spec(target).build_program(), target).source
        assert call in source and "tl::mma_m16n8k" not in source, dtype
    assert not any(name.startswith("gemm.kmajor.") for name in claims["mma.sync"])
    source = render(registry()["gemm.dtype.float32"].spec(target).build_program(), target).source
    assert "k8_rs_f32_tf32(" in source and "tl::mma_m16n8k" not in source  # B (K, N): swapped
    assert "gemm.dtype.float32" not in claims["mma.sync"] and "gemm.dtype.int8" in claims["mma.sync"]
    source = render(registry()["gemm.dtype.int8"].spec(target).build_program(), target).source
    assert "wgmma" not in source and "tl::mma_m16n8k" in source and "cp_async" in source  # B (K, N): mma.sync
