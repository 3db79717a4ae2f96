"""The MUSA backend's targets, capability tables, spellings, detection and toolchain errors
on a machine without the MUSA SDK, driver or device (what CI has)."""
from __future__ import annotations

import pytest

from tilelang_core.plugin import Target, TargetError


def test_archs_and_their_tables():
    for arch, warp, smem in (("mp_21", 128, 28 * 1024), ("mp_22", 128, 28 * 1024), ("mp_31", 32, 192 * 1024)):
        caps = Target.parse(f"musa/{arch}").capabilities
        assert (caps.kind, caps.arch, caps.warp_size, caps.shared_memory_optin) == ("musa", arch, warp, smem)
        assert caps.has_copy_engine("ldlms")
    mp22, mp31 = Target.parse("musa/mp_22").capabilities, Target.parse("musa/mp_31").capabilities
    assert mp22.has_matrix("fmma") and not mp22.has_matrix("tce") and not mp22.has("float8_e4m3fn")
    assert mp31.has_matrix("tce") and mp31.has_copy_engine("tme") and mp31.has_barrier("async_barrier")
    assert mp31.has("float8_e4m3fn") and not Target.parse("musa/mp_21").capabilities.matrix_instructions


def test_bare_kind_is_mp31_without_a_device():
    assert str(Target.parse("musa")) == "musa/mp_31"


def test_tilelang_spellings():
    assert str(Target.parse({"kind": "musa", "arch": "mp_22"})) == "musa/mp_22"
    assert str(Target.parse("musa -arch=mp_21")) == "musa/mp_21"
    with pytest.raises(TargetError, match="mp_21, mp_22, mp_31"):
        Target.parse({"kind": "musa", "arch": "mp_99"})


def test_detection_says_what_is_missing(monkeypatch):
    monkeypatch.setenv("MUSA_HOME", "/nonexistent-musa-sdk")
    from tilelang_musa import sdk
    from tilelang_musa.detect import detect

    for fn in (sdk.find_mcc, sdk.find_mtrtc, sdk.load_driver):
        fn.cache_clear()
    if sdk.find_mcc() is not None or sdk.load_driver()[0] is not None:
        pytest.skip("a MUSA SDK or driver is installed here")
    found = detect()
    assert [d.arch for d in found] == ["mp_21", "mp_22", "mp_31"]
    for d in found:
        assert not d.device and not d.toolchain
        assert "no mcc" in d.reason and "libmusa" in d.reason and "torch_musa" in d.reason


def test_compile_without_mcc_names_the_fix(monkeypatch):
    from tilelang_musa import compile as musa_compile
    from tilelang_musa import sdk

    monkeypatch.setattr(sdk, "find_mcc", lambda: None)
    with pytest.raises(musa_compile.MUSAToolchainError, match="no mcc here.*MUSA_HOME"):
        musa_compile.compile_musa("extern \"C\" __global__ void k() {}", "mp_31")
    with pytest.raises(ValueError, match="unknown MUSA compile options"):
        musa_compile.compile_musa("", "mp_31", {"optimize": 3})


def test_runtime_without_driver_says_so(monkeypatch):
    from tilelang_musa import runtime, sdk

    monkeypatch.setattr(sdk, "load_driver", lambda: (None, "libmusa (the MUSA driver library) not found"))
    with pytest.raises(runtime.MUSARuntimeUnavailable, match="libmusa"):
        runtime.MUSARuntimeOnDemand().synchronize()


def test_cli_lists_musa_and_prints_the_table(capsys):
    from tilelang_core.cli.main import main

    assert main(["info", "musa/mp_31"]) == 0
    out = capsys.readouterr().out
    assert "tce (warpsquad)" in out and "tme" in out and "async_barrier" in out
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "musa/mp_22" in out and "no mcc" in " ".join(out.split())


def test_detection_imports_no_tvm():
    """`tilelang backends` runs where only the runtime is installed (no TVM): a wheel install
    once reported 'detection failed: No module named tvm_ffi' because the syntax checker
    imported the core's codegen at module level."""
    import subprocess
    import sys

    code = ("import sys; from tilelang_musa.detect import detect; detect(); "
            "bad = [m for m in sys.modules if m == 'tvm' or m.startswith(('tvm.', 'tvm_ffi'))]; "
            "assert not bad, bad")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
