"""`tilelang --version` and the message for a command whose distribution is not installed."""
from __future__ import annotations

import sys

import pytest

import tilelang_core
from tilelang_core.cli.main import main


def test_version_lists_the_core_and_every_installed_backend(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"tilelang-core {tilelang_core.__version__}"
    assert "tilelang-cpu 0.2.0" in lines and "tilelang-cuda 0.2.0" in lines


def test_conformance_without_its_distribution_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tilelang_conformance.cli", None)  # import raises ImportError
    assert main(["conformance", "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "pip install tilelang-conformance" in err and "invalid choice" not in err


def test_an_unknown_command_is_still_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["no-such-command"])
    assert exit_info.value.code == 2


def test_a_command_that_needs_the_compiler_says_how_to_install_it(monkeypatch, capsys):
    from tilelang_core.cli import main as cli

    def ops_without_tvm(args):
        raise ModuleNotFoundError("No module named 'tvm'", name="tvm")

    monkeypatch.setattr(cli, "cmd_ops", ops_without_tvm)
    assert main(["ops"]) == 1
    err = capsys.readouterr().err
    assert "needs the compiler (apache-tvm)" in err and "tilelang-core[compiler]" in err
