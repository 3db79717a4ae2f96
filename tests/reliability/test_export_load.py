"""Export folders: versioned; a damaged or foreign folder is refused with an error naming the
file and what is wrong; a folder of a newer format version is refused."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime.export import FORMAT_VERSION, ExportFormatError


def double(n=32):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = X[i] * 2.0
    return main


@pytest.fixture
def exported(cache_dir, tmp_path):
    kernel = tilelang.compile(double(), out_idx=[1], target="cpu")
    kernel.export(tmp_path / "k")
    return tmp_path / "k"


def test_round_trip_records_the_format_version(exported):
    assert json.loads((exported / "kernel.json").read_text())["format_version"] == FORMAT_VERSION
    x = np.arange(32, dtype=np.float32)
    np.testing.assert_allclose(tilelang.load(exported)(x), x * 2)


def test_future_format_version_is_refused(exported):
    meta = json.loads((exported / "kernel.json").read_text())
    meta["format_version"] = FORMAT_VERSION + 1
    (exported / "kernel.json").write_text(json.dumps(meta))
    with pytest.raises(ExportFormatError, match=rf"kernel.json: export format version {FORMAT_VERSION + 1} is newer.*upgrade"):
        tilelang.load(exported)


@pytest.mark.parametrize("content, words", [
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b'{"entry": "main", "params": [', "not valid JSON"),
    (b"[1, 2, 3]", "expected a JSON object, got list"),
    (b'{"name": "my-model", "version": 3}', "fields target, entry, params.* are missing"),
    (b'{"target": "cpu", "entry": "m", "params": 5, "grid": [1], "block": [1], "out_idx": [], "symbols": {}}',
     "wrong shape"),
    (b'{"format_version": "two"}', "format_version is 'two'"),
])
def test_damaged_or_foreign_meta_names_the_file(exported, content, words):
    (exported / "kernel.json").write_bytes(content)
    with pytest.raises(ExportFormatError) as info:
        tilelang.load(exported)
    assert str(exported / "kernel.json") in str(info.value)
    assert __import__("re").search(words, str(info.value)), str(info.value)


def test_missing_binary_names_the_file(exported):
    (exported / "kernel.bin").unlink()
    with pytest.raises(ExportFormatError, match=r"kernel.bin: the device binary .* is missing"):
        tilelang.load(exported)


def test_folder_without_meta_is_not_an_export(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="is not an exported kernel: kernel.json is missing"):
        tilelang.load(tmp_path / "empty")
