"""TileLang's public modules at their TileLang paths (`tilelang.engine`, `tilelang.backend`,
`tilelang.profiler.bench`, `tilelang.cache`, `tilelang.contrib.cc`, `tilelang.env`,
`tilelang.transform`, ...) and the TVM paths TileLang's tests use (`tvm.tirx.stmt_functor`,
`tvm.testing.requires_*`); the aliased checks run in a fresh interpreter."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

ALIASED = """
    import json
    from tilelang_core.compat import install
    install()
    import tilelang, tilelang_core
    from tilelang.engine import lower
    from tilelang.engine.lower import lower as lower_again
    from tilelang.engine.param import KernelParam, CompiledArtifact
    from tilelang.backend.target import determine_target
    from tilelang.profiler.bench import do_bench
    from tilelang.profiler import Profiler
    from tilelang.cache import clear_cache
    from tilelang.cache.kernel_cache import KernelCache
    from tilelang.contrib import cc
    from tilelang.env import env, CacheState
    from tilelang.transform import PassConfigKey, simplify_prim_func
    from tilelang.transform.simplify import apply_simplify
    from tilelang.autotuner import jit, autotune
    from tilelang.jit import JITKernel, JITImpl
    from tilelang_core.jit.function import JITFunction
    from tilelang_core.jit.api import JITKernel as CoreKernel
    from tvm.tirx.stmt_functor import post_order_visit
    from tvm.tirx import stmt_functor
    import tvm.testing
    import tilelang_core.runtime.profiler as prof
    from tilelang_core.jit.artifact import lower as core_lower
    print(json.dumps({
        "lower": lower is core_lower and lower_again is core_lower,
        "target": determine_target("cpu"),
        "target_object": determine_target("cpu", return_object=True).kind,
        "bench": do_bench is prof.do_bench and Profiler is prof.Profiler,
        "profiler_attr": tilelang.profiler.do_bench is prof.do_bench,
        "env": env is tilelang_core.env and CacheState.is_enabled(),
        "pass_config": PassConfigKey.TL_DISABLE_TMA_LOWER,
        "jit": jit is tilelang.jit and JITImpl is JITFunction and JITKernel is CoreKernel,
        "stmt_functor": stmt_functor.post_order_visit is post_order_visit,
        "requires_cuda": type(tvm.testing.requires_cuda).__name__,
        "set_log_level": callable(tilelang.set_log_level),
    }))
"""


def test_tilelang_paths_resolve_to_the_core():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(ALIASED)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts.pop("target").startswith("cpu/")
    assert facts == {"lower": True, "target_object": "cpu", "bench": True, "profiler_attr": True, "env": True,
                     "pass_config": "tl.disable_tma_lower", "jit": True, "stmt_functor": True,
                     "requires_cuda": "Requirement", "set_log_level": True}


def test_stmt_functor_visits_and_rewrites():
    from tvm import tirx

    from tilelang_core.compat.modules.stmt_functor import ir_transform, post_order_visit, substitute

    x = tirx.Var("x", "int32")
    stmt = tirx.Evaluate(x + 1)
    seen = []
    post_order_visit(stmt, lambda n: seen.append(type(n).__name__))
    assert seen[-1] == "Evaluate" and "Var" in seen and "Add" in seen
    doubled = ir_transform(stmt, None, lambda n: n * 2 if isinstance(n, tirx.Var) else None)
    assert str(doubled.value) == "x * 2 + 1"
    assert str(substitute(stmt, {x: tirx.IntImm("int32", 4)}).value) == "T.Add(4, 1)"
    # only_enable takes TileLang's type keys ("tir.X") as well as 0.27's ("tirx.X")
    to_zero = lambda n: tirx.Evaluate(tirx.IntImm("int32", 0))  # noqa: E731
    assert ir_transform(stmt, None, to_zero, only_enable=["tir.Evaluate"]).value.value == 0
    assert ir_transform(stmt, None, to_zero, only_enable=["tirx.For"]).same_as(stmt)
    with pytest.raises(NotImplementedError, match="preorder"):
        ir_transform(stmt, lambda n: None, None)


def test_cross_compiler_keeps_its_base_options():
    from tilelang_core.compat.modules.contrib.cc import cross_compiler

    calls = []
    fcompile = cross_compiler(lambda out, objs, opts: calls.append(opts), options=["-base"])
    fcompile("a.so", ["a.o"], options=["-a"])
    fcompile("b.so", ["b.o"])
    assert calls == [["-base", "-a"], ["-base"]]
    with pytest.raises(TypeError, match="compile_func must be callable"):
        cross_compiler("gcc")


def test_env_variables_read_and_set(monkeypatch, tmp_path):
    from tilelang_core import env

    monkeypatch.delenv("TILELANG_TMP_DIR", raising=False)
    monkeypatch.setattr(env, "TILELANG_CACHE_DIR", str(tmp_path / "c"))
    assert os.environ["TILELANG_CACHE_DIR"] == str(tmp_path / "c")
    assert env.cache_dir() == tmp_path / "c"
    assert env.TILELANG_TMP_DIR == os.path.join(str(tmp_path / "c"), "tmp")
    monkeypatch.setenv("TILELANG_PRINT_ON_COMPILATION", "1")
    assert env.TILELANG_PRINT_ON_COMPILATION == "1" and env.print_on_compilation()
    env.CacheState.disable()
    try:
        assert not env.is_cache_enabled()
    finally:
        env.CacheState.enable()
    assert env.is_cache_enabled()


def test_kernel_param_and_clear_cache(monkeypatch, tmp_path):
    from tilelang_core.compat.modules.cache import clear_cache
    from tilelang_core.compat.modules.engine.param import KernelParam
    from tilelang_core.runtime.base import ParamSpec

    p = KernelParam.from_spec(ParamSpec("A", "tensor", "float8_e4m3", (16, "n")))
    assert p.is_float8() and p.is_dynamic() and not p.is_scalar()
    assert KernelParam("s", "scalar", "int32").is_scalar()
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    (tmp_path / "kernels" / "ab").mkdir(parents=True)
    clear_cache()
    assert not (tmp_path / "kernels").exists()


def test_set_log_level():
    import logging

    from tilelang_core.compat.names import set_log_level

    logger = logging.getLogger("tilelang_core")
    before = logger.level
    try:
        set_log_level("warning")
        assert logger.level == logging.WARNING
        import tilelang_core

        assert tilelang_core.logger is logger
        with pytest.raises(ValueError, match="unknown level 'loud'"):
            set_log_level("loud")
    finally:
        logger.setLevel(before)
