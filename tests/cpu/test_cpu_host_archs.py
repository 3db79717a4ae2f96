"""Which CPU archs run on this host, and a clear error for another instruction set."""
from __future__ import annotations

import pytest

from tilelang_core.runtime import CompileError
from tilelang_cpu import compile as cpu_compile
from tilelang_cpu import target as cpu_target


@pytest.mark.parametrize("host,arch,runs", [
    ("x86-64-avx2", "x86-64", True),
    ("x86-64-avx2", "x86-64-avx2", True),
    ("x86-64-avx2", "x86-64-avx512", False),
    ("x86-64-avx512", "x86-64-avx2", True),
    ("x86-64-avx2", "generic", True),
    ("x86-64-avx2", "aarch64", False),
    ("aarch64", "x86-64", False),
    ("aarch64", "aarch64", True),
])
def test_runs_on_host(monkeypatch, host, arch, runs):
    monkeypatch.setattr(cpu_target, "host_arch", lambda: host)
    assert cpu_target.runs_on_host(arch) is runs


def test_another_instruction_set_is_refused_before_the_c_compiler(monkeypatch):
    monkeypatch.setattr(cpu_target, "host_arch", lambda: "x86-64-avx2")
    monkeypatch.delenv("TILELANG_CC", raising=False)
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(CompileError, match=r"cpu/aarch64 needs a compiler for aarch64, and this host is "
                                           r"x86-64-avx2.*TILELANG_CC.*tilelang_core.lower"):
        cpu_compile.compile_source("int x;", "aarch64")


def test_backends_rows_show_lower_levels_as_running_here(monkeypatch):
    from tilelang_cpu import plugin

    monkeypatch.setattr(cpu_target, "host_arch", lambda: "x86-64-avx2")
    monkeypatch.setattr(cpu_compile, "find_compiler", lambda: "/usr/bin/cc")
    found = {d.arch: d for d in plugin.tilelang_detect_targets()}
    assert found["x86-64"].device and "runs on this host" in found["x86-64"].reason
    assert found["generic"].device
    assert not found["x86-64-avx512"].device and "needs x86-64-avx512, this host is x86-64-avx2" in found["x86-64-avx512"].reason
    assert not found["aarch64"].toolchain
