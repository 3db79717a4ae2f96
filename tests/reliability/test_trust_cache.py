"""Issue 31, the disk cache: entries are authenticated with a per-user secret kept outside
the cache, a directory others can write is refused (one warning, compiled without it), and a
CPU compile leaves no temporary folder behind, Ctrl-C included."""
from __future__ import annotations

import hashlib
import json
import os
import stat
import warnings

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.jit import cache as cache_module
from tilelang_core.jit.cache import KernelCacheWarning


def scale(factor, n=32):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = X[i] * factor
    return main


@pytest.fixture
def fresh(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_SECRET_FILE", str(tmp_path / "config" / "cache-secret"))
    monkeypatch.setattr(cache_module, "_DISTRUSTED", {}, raising=False)
    monkeypatch.setattr(cache_module, "_SECRETS", {}, raising=False)
    return cache_dir


def entries(root):
    return sorted(p for p in (root / "kernels").glob("*/*") if p.is_dir())


def test_swapped_binary_with_recomputed_checksum_is_not_a_hit(fresh, monkeypatch):
    from tilelang_core.jit import api

    tilelang.compile(scale(2.0), out_idx=[1], target="cpu")
    first = entries(fresh)
    tilelang.compile(scale(3.0), out_idx=[1], target="cpu")
    second = [p for p in entries(fresh) if p not in first]
    victim, donor = first[0], second[0]
    (victim / "kernel.bin").write_bytes((donor / "kernel.bin").read_bytes())
    record = json.loads((victim / "checksum.json").read_text())
    record["files"]["kernel.bin"] = hashlib.sha256((victim / "kernel.bin").read_bytes()).hexdigest()
    (victim / "checksum.json").write_text(json.dumps(record))  # what a writer of the directory can do
    monkeypatch.setattr(api, "_MEMO", type(api._MEMO)())
    with pytest.warns(KernelCacheWarning, match="not authenticated by your cache secret"):
        kernel = tilelang.compile(scale(2.0), out_idx=[1], target="cpu")
    x = np.arange(32, dtype=np.float32)
    np.testing.assert_allclose(kernel(x), x * 2)


def test_secret_is_made_0600_outside_the_cache(fresh, tmp_path):
    tilelang.compile(scale(2.0), out_idx=[1], target="cpu")
    secret = tmp_path / "config" / "cache-secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert fresh not in secret.parents and len(secret.read_text().strip()) == 64


@pytest.mark.parametrize("how", ["world-writable", "other owner"])
def test_untrusted_cache_directory_is_refused_once(fresh, monkeypatch, how):
    fresh.mkdir(parents=True)
    if how == "world-writable":
        os.chmod(fresh, 0o777)
        words = "writable by every user"
    else:
        uid = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: uid + 1)
        words = "owned by another user"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        kernel = tilelang.compile(scale(2.0), out_idx=[1], target="cpu")
        tilelang.compile(scale(5.0), out_idx=[1], target="cpu")
    refusals = [w for w in seen if issubclass(w.category, KernelCacheWarning)]
    assert len(refusals) == 1 and words in str(refusals[0].message), [str(w.message) for w in seen]
    assert not (fresh / "kernels").exists()
    x = np.arange(32, dtype=np.float32)
    np.testing.assert_allclose(kernel(x), x * 2)


def test_ctrl_c_during_cpu_compile_leaves_no_folder(fresh, tmp_path, monkeypatch):
    import tempfile

    from tilelang_cpu import compile as cpu_compile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cpu_compile.subprocess, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cpu_compile.compile_source("int f(void) { return 0; }", None, "f")
    assert list(scratch.iterdir()) == []
