"""Advice about the environment says what is actually wrong."""
from __future__ import annotations

import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime import CompileError


def fill(n=8):
    @T.prim_func
    def main(Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = 1.0
    return main


def test_a_missing_named_compiler_is_named(cache_dir, monkeypatch):
    monkeypatch.setenv("TILELANG_CC", "/nonexistent/bin/cc-42")
    with pytest.raises(CompileError, match=r"TILELANG_CC \(or CC\), '/nonexistent/bin/cc-42', was not found.*full path"):
        tilelang.compile(fill(), target="cpu", cache=False)


def test_no_compiler_on_path_says_what_was_searched(cache_dir, monkeypatch, tmp_path):
    monkeypatch.delenv("TILELANG_CC", raising=False)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CompileError, match=r"no C compiler found.*searched PATH for cc, gcc and clang.*install gcc"):
        tilelang.compile(fill(), target="cpu", cache=False)


def _manager(monkeypatch, setting):
    from tilelang_core.plugin.manager import PluginManager

    monkeypatch.setenv("TILELANG_BACKENDS", setting)
    return PluginManager()


def test_backends_setting_naming_nothing_installed_says_what_is_installed(monkeypatch):
    from tilelang_core.plugin import TargetError

    manager = _manager(monkeypatch, "nosuch")
    with pytest.raises(TargetError) as info:
        manager.parse_target("cpu")
    message = str(info.value)
    assert "TILELANG_BACKENDS=nosuch names 'nosuch', which no installed backend provides" in message
    assert "installed: " in message and "cpu" in message.split("installed: ")[1]
    assert "set TILELANG_BACKENDS=cpu, or unset it" in message
    assert "pip install" not in message  # cpu is installed: the advice must not say to install it
    with pytest.raises(TargetError, match=r"target 'auto' found no usable device; loaded kinds: none\. "
                                          r"TILELANG_BACKENDS=nosuch names 'nosuch'"):
        manager.best_detected_target()


def test_backends_setting_leaving_out_the_kind_names_the_fix(monkeypatch):
    from tilelang_core.plugin import TargetError

    manager = _manager(monkeypatch, "cuda")
    with pytest.raises(TargetError) as info:
        manager.parse_target("cpu")
    message = str(info.value)
    assert "TILELANG_BACKENDS=cuda leaves out the installed backend(s) cpu: set TILELANG_BACKENDS=cuda,cpu" in message
    assert "which no installed backend provides" not in message and "pip install" not in message


def test_backends_setting_is_not_blamed_for_a_kind_nobody_installed(monkeypatch):
    from tilelang_core.plugin import TargetError

    manager = _manager(monkeypatch, "cpu")
    with pytest.raises(TargetError) as info:
        manager.parse_target("vendorx")
    message = str(info.value)
    assert "pip install tilelang-vendorx" in message and "TILELANG_BACKENDS" not in message


def test_backends_setting_with_an_extra_unknown_name_still_loads_the_rest(monkeypatch):
    manager = _manager(monkeypatch, "cpu,nosuch")
    assert manager.parse_target("cpu").kind == "cpu"
    assert "names 'nosuch'" in manager.selection_advice()


def test_backends_command_prints_the_advice(monkeypatch, capsys):
    import argparse

    from tilelang_core.cli.main import cmd_backends
    from tilelang_core.plugin import manager as manager_module

    monkeypatch.setattr(manager_module, "_MANAGER", _manager(monkeypatch, "nosuch"))
    assert cmd_backends(argparse.Namespace(json=True)) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["backends"] == [] and "names 'nosuch'" in report["selection"]
