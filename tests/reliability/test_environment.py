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
