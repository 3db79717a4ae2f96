"""The CPU backend's toolchain and runtime half: flags, errors with a repro command,
concurrent compiles, the plugin hooks end to end, and a runtime that loads without TVM."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tilelang_core.runtime import CompileError, KernelMeta, ParamSpec

REPO = Path(__file__).resolve().parents[2]

GOOD_C = textwrap.dedent("""\
    #include "tl_cpu.h"
    TL_EXPORT int32_t scale(float* restrict x, int32_t n, float s) {
      for (int32_t i = 0; i < n; ++i) x[i] *= s;
      return 0;
    }
""")


def test_flags(host_compiler):
    from tilelang_cpu import compile as cc
    from tilelang_cpu.target import host_arch

    flags = cc.compile_flags(host_compiler, host_arch())
    for flag in ("-O3", "-march=native", "-shared", "-fPIC", "-std=gnu11", "-ffp-contract=fast"):
        assert flag in flags
    assert "-ffast-math" not in flags
    others = {"x86-64-avx2": "-march=x86-64-v3", "x86-64-avx512": "-march=x86-64-v4", "x86-64": "-march=x86-64"}
    for arch, march in others.items():
        if arch != host_arch():
            assert march in cc.march_flags(arch)
    with pytest.raises(CompileError, match="unknown CPU arch 'riscv'"):
        cc.march_flags("riscv")


def test_compile_error_shows_log_file_and_command(host_compiler):
    from tilelang_cpu.compile import compile_source

    broken = GOOD_C.replace("x[i] *= s;", "x[i] *= undefined_name;")
    with pytest.raises(CompileError) as info:
        compile_source(broken, name="scale")
    message = str(info.value)
    assert "undefined_name" in message  # the compiler's log
    kept = next(line.split(": ", 1)[1] for line in message.splitlines() if "generated file (kept)" in line)
    assert Path(kept).read_text() == broken
    command = next(line.split(": ", 1)[1] for line in message.splitlines() if "reproduce with" in line)
    assert host_compiler in command and "-march" in command and kept in command
    proc = subprocess.run(command, shell=True, capture_output=True, text=True)
    assert proc.returncode != 0 and "undefined_name" in proc.stderr


def test_concurrent_compiles(host_compiler):
    from tilelang_cpu.compile import compile_source
    from tilelang_cpu.runtime import CPURuntime

    sources = [GOOD_C.replace("*= s", f"*= s + {i}.0f") for i in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        binaries = list(pool.map(lambda src: compile_source(src, name="scale"), sources))
    meta = KernelMeta("cpu", "scale", (ParamSpec("x", "tensor", "float32", ("n",)),
                                       ParamSpec("n", "scalar", "int32"), ParamSpec("s", "scalar", "float32")))
    runtime = CPURuntime()
    for i, binary in enumerate(binaries):
        x = np.ones(5, "float32")
        runtime.load(binary, meta).launch([x.ctypes.data, 5, 2.0], (1, 1, 1), (1, 1, 1), 0)
        np.testing.assert_array_equal(x, 2.0 + i)


def test_plugin_hooks_end_to_end(host_compiler, rng):
    from tvm.script import tirx as T

    from tilelang_core.plugin import Target, hooks_for

    @T.prim_func
    def relu(X: T.Buffer((300,), "float32"), Y: T.Buffer((300,), "float32")):
        bx = T.launch_thread("blockIdx.x", 3)
        for i in T.vectorized(100):
            Y[bx * 100 + i] = T.max(X[bx * 100 + i], T.float32(0))

    target = Target.parse("cpu")
    hooks = hooks_for(target)
    source = hooks.codegen(relu, None)
    assert source.language == "c" and source.entry == "relu"
    binary = hooks.compile(source, None)
    assert binary[:4] == b"\x7fELF"
    runtime = hooks.runtime()
    assert runtime.dlpack_device_type == 1
    meta = KernelMeta(str(target), source.entry, tuple(ParamSpec(**p) for p in source.extra["params"]),
                      grid=source.grid)
    kernel = runtime.load(binary, meta)
    x = rng.standard_normal(300).astype("float32")
    y = runtime.allocate(x, (300,), "float32")
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    y[:] = np.nan
    kernel.launch([x.ctypes.data, y.ctypes.data], (3, 1, 1), (1, 1, 1), 0)
    runtime.synchronize()
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    key = " ".join(hooks.cache_key(None))
    from tilelang_cpu.compile import compiler_version

    assert host_compiler in key and compiler_version(host_compiler) in key and "-O3" in key


def test_toolchain_probes_are_kept_on_disk(host_compiler, tmp_path, monkeypatch):
    """`cc --version` and the OpenMP probe run once per compiler binary; a process that finds
    them under the cache directory starts no subprocess; another binary is probed anew."""
    import json
    import shutil

    from tilelang_cpu import compile as cc

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    cc._toolchain.cache_clear()
    try:
        version = cc.compiler_version(host_compiler)
        (stored,) = (tmp_path / "cache" / "toolchains").glob("*.json")
        known = json.loads(stored.read_text())
        assert known["version"] == version and known["openmp"] == cc.openmp_supported(host_compiler)
        stored.write_text(json.dumps({**known, "version": "remembered"}))
        cc._toolchain.cache_clear()  # a new process: reads the file
        monkeypatch.setattr(cc.subprocess, "run", None)  # would fail if a probe ran
        assert cc.compiler_version(host_compiler) == "remembered"
        monkeypatch.undo()
        monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
        copy = tmp_path / "cc-copy"
        shutil.copy2(os.path.realpath(host_compiler), copy)  # same bytes, another binary
        cc._toolchain.cache_clear()
        assert cc.compiler_version(str(copy)) not in ("remembered", "unknown")  # probed again
        assert len(list((tmp_path / "cache" / "toolchains").glob("*.json"))) == 2
    finally:
        cc._toolchain.cache_clear()


def test_timer():
    from tilelang_cpu.runtime import CPURuntime

    timer = CPURuntime().make_timer()
    timer.start()
    sum(range(10000))
    timer.stop()
    assert 0 <= timer.elapsed_ms() < 1000


def test_allocate_torch_like():
    torch = pytest.importorskip("torch")
    from tilelang_cpu.runtime import CPURuntime

    out = CPURuntime().allocate(torch.zeros(2), (3, 4), "float16")
    assert isinstance(out, torch.Tensor) and out.shape == (3, 4) and out.dtype == torch.float16


def test_runtime_imports_neither_tvm_nor_the_compiler(host_compiler, tmp_path):
    """Load and run a kernel in a process where `import tvm` fails."""
    from tilelang_cpu.compile import compile_source

    (tmp_path / "k.so").write_bytes(compile_source(GOOD_C, name="scale"))
    script = textwrap.dedent(f"""
        import sys
        sys.modules["tvm"] = None
        sys.modules["tvm_ffi"] = None
        sys.modules["tilelang_cpu.compile"] = None
        sys.modules["tilelang_cpu.codegen"] = None
        import numpy as np
        from tilelang_core.runtime import KernelMeta, ParamSpec
        from tilelang_cpu.runtime import CPURuntime
        meta = KernelMeta("cpu", "scale", (ParamSpec("x", "tensor", "float32", (4,)),
                                           ParamSpec("n", "scalar", "int32"), ParamSpec("s", "scalar", "float32")))
        x = np.arange(4, dtype="float32")
        CPURuntime().load(open({str(tmp_path / "k.so")!r}, "rb").read(), meta).launch([x.ctypes.data, 4, 3.0], None, None, 0)
        assert list(x) == [0, 3, 6, 9], x
        bad = [m for m in sys.modules if m.split(".")[0] in ("tvm", "tvm_ffi") and sys.modules[m] is not None]
        assert not bad, bad
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "backends" / "cpu")]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
