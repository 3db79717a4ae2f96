"""Post-processing callbacks on generated device source (`tilelang_core.jit.postproc`) and
TileLang's names for them (`tilelang.engine.callback`, `tilelang.register_<kind>_postproc`),
on the CPU backend."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.compat.modules.engine import callback
from tilelang_core.jit.postproc import register_postproc, unregister_postproc


def add_one(n):
    @T.prim_func
    def kernel(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(n):
                B[i] = A[i] + 1.0

    return kernel


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def clean():
    yield
    unregister_postproc("cpu")


def test_the_callback_edits_the_source_the_compiler_builds(clean, cache_dir):
    seen = []

    @callback.register_cpu_postproc_callback
    def mark(code, target):
        seen.append(target.kind)
        return "/* post-processed */\n" + code

    kernel = tilelang.compile(add_one(8), out_idx=[1], target="cpu")
    assert seen == ["cpu"] and kernel.get_kernel_source().startswith("/* post-processed */")
    assert np.array_equal(kernel(np.arange(8, dtype=np.float32)), np.arange(1, 9, dtype=np.float32))
    # not cached: the next compile runs the callback again
    tilelang.compile(add_one(8), out_idx=[1], target="cpu")
    assert seen == ["cpu", "cpu"]
    unregister_postproc("cpu")
    assert "post-processed" not in tilelang.compile(add_one(8), out_idx=[1], target="cpu").get_kernel_source()


def test_registration_forms_and_errors(clean):
    tilelang.register_cpu_postproc(lambda code, target: code)
    with pytest.raises(ValueError, match="already registered"):
        callback.register_cpu_postproc_callback(override=False)(lambda code, target: code)
    with pytest.raises(TypeError, match="must be callable"):
        register_postproc("cpu", "not a function")
    with pytest.raises(TypeError, match="takes a function"):
        callback.register_cpu_postproc_callback(3)
    register_postproc("cpu", lambda code, target: None)
    with pytest.raises(TypeError, match="must return the device source as a str"):
        tilelang.compile(add_one(4), out_idx=[1], target="cpu")
    with pytest.raises(AttributeError):
        callback.register_something  # noqa: B018 - not a TileLang name
