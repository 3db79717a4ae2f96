"""The disk cache verifies what it loads: a damaged entry is quarantined and rebuilt with a
warning naming it, never loaded (SIGBUS, SIGILL, or another kernel's results); a cache
directory that cannot be written is bypassed with a warning."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.jit import api
from tilelang_core.jit.cache import KernelCacheWarning


def scale(factor: float, n: int = 64):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = X[i] * factor
    return main


def _entries(cache_dir):
    return sorted(p.parent for p in (cache_dir / "kernels").glob("*/*/kernel.json"))


def _compile(factor, monkeypatch):
    monkeypatch.setattr(api, "_MEMO", type(api._MEMO)())  # a fresh process, as far as the memo goes
    return tilelang.compile(scale(factor), out_idx=[1], target="cpu")


def _check(kernel, factor):
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_allclose(kernel(x), x * factor)


@pytest.mark.parametrize("damage", ["truncate", "bitflip", "empty", "delete_checksum", "garbage_meta"])
def test_damaged_entry_is_quarantined_and_rebuilt(cache_dir, monkeypatch, damage):
    _check(_compile(2.0, monkeypatch), 2.0)
    [entry] = _entries(cache_dir)
    binary = entry / "kernel.bin"
    data = binary.read_bytes()
    if damage == "truncate":
        binary.write_bytes(data[: len(data) // 2])
    elif damage == "bitflip":
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x10
        binary.write_bytes(bytes(flipped))
    elif damage == "empty":
        binary.write_bytes(b"")
    elif damage == "delete_checksum":
        (entry / "checksum.json").unlink()
    else:
        (entry / "kernel.json").write_bytes(b"\xff\xfe not json")
    with pytest.warns(KernelCacheWarning, match=rf"kernel cache entry .*{entry.name}.* is damaged.*rebuilt"):
        kernel = _compile(2.0, monkeypatch)
    assert not kernel.cache_hit
    _check(kernel, 2.0)
    assert list((cache_dir / "quarantine").iterdir())  # the damaged copy is kept for inspection
    again = _compile(2.0, monkeypatch)  # the rebuilt entry is whole
    assert again.cache_hit
    _check(again, 2.0)


def test_binaries_swapped_between_entries_are_detected(cache_dir, monkeypatch):
    _compile(2.0, monkeypatch)
    _compile(3.0, monkeypatch)
    first, second = _entries(cache_dir)
    a, b = (first / "kernel.bin").read_bytes(), (second / "kernel.bin").read_bytes()
    (first / "kernel.bin").write_bytes(b)
    (second / "kernel.bin").write_bytes(a)
    with pytest.warns(KernelCacheWarning, match="does not match its checksum"):
        k2 = _compile(2.0, monkeypatch)
    with pytest.warns(KernelCacheWarning, match="does not match its checksum"):
        k3 = _compile(3.0, monkeypatch)
    _check(k2, 2.0)
    _check(k3, 3.0)


def test_whole_entries_swapped_are_detected(cache_dir, monkeypatch):
    _compile(2.0, monkeypatch)
    _compile(3.0, monkeypatch)
    first, second = _entries(cache_dir)
    parked = first.parent / "parked"
    first.rename(parked)
    second.rename(first)
    parked.rename(second)
    with pytest.warns(KernelCacheWarning, match="swapped or moved"):
        k2 = _compile(2.0, monkeypatch)
    _check(k2, 2.0)
    assert not k2.cache_hit


def test_unwritable_cache_directory_compiles_uncached(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(KernelCacheWarning, match=r"cannot be written.*compiling without the disk cache.*TILELANG_CACHE_DIR"):
        kernel = _compile(5.0, monkeypatch)
    assert not kernel.cache_hit
    _check(kernel, 5.0)


def test_cache_entry_removed_while_running_is_rebuilt_silently(cache_dir, monkeypatch):
    _compile(2.0, monkeypatch)
    shutil.rmtree(cache_dir / "kernels")
    kernel = _compile(2.0, monkeypatch)
    assert not kernel.cache_hit
    _check(kernel, 2.0)
