"""Issue 31, exports: an export folder is code. Damage, careless edits and hostile names are
refused by `load` with an error naming the file, before anything is mapped; `key=` signs."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime import export as export_module
from tilelang_core.runtime.export import ExportFormatError

# looked up softly, so that on a version without signing these tests fail on what they assert
ExportSignatureError = getattr(export_module, "ExportSignatureError", ExportFormatError)

KEY = b"team-signing-key-0123456789abcdef"


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


def signed_bytes(manifest, files):
    """What the manifest digest and the HMAC cover (export.py's canonical form)."""
    return json.dumps({"files": files, "manifest": manifest}, sort_keys=True, separators=(",", ":")).encode()


def edit(folder, change, reseal=True):
    """Edit kernel.json with `change(data)`; with `reseal`, recompute its digests the way a
    hostile editor would (so the later checks, not the digest, are what is tested)."""
    data = json.loads((folder / "kernel.json").read_text())
    change(data)
    integrity = data.pop("integrity", None)
    if reseal and integrity is not None:
        files = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in integrity["files"]
                 if (folder / name).is_file()}
        integrity = {**integrity, "files": files, "sha256": hashlib.sha256(signed_bytes(data, files)).hexdigest()}
    if integrity is not None:
        data["integrity"] = integrity
    (folder / "kernel.json").write_text(json.dumps(data))


PLANTED = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) { FILE *f = fopen("%s", "w"); if (f) fclose(f); }
int main(void *x, void *y) { return 0; }
"""


def test_planted_constructor_never_runs(exported, tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "p.c").write_text(PLANTED % marker)
    subprocess.run(["cc", "-shared", "-fPIC", str(tmp_path / "p.c"), "-o", str(exported / "kernel.bin")], check=True)
    with pytest.raises(ExportFormatError, match=r"kernel.bin: does not match its SHA-256"):
        kernel = tilelang.load(exported)
        kernel(np.ones(32, np.float32))
    assert not marker.exists()


def test_entry_of_another_library_is_refused(exported, tmp_path):
    edit(exported, lambda d: d.update(entry="system"))
    with pytest.raises(ExportFormatError, match=r"kernel.bin: .*entry 'system' is not a function defined by the "
                                                r"shared library itself"):
        tilelang.load(exported)


@pytest.mark.parametrize("name", ["../outside.so", "/tmp/outside.so", "sub/kernel.bin", "..", "kernel.json"])
def test_binary_name_outside_the_folder_is_refused(exported, tmp_path, name):
    (tmp_path / "outside.so").write_bytes((exported / "kernel.bin").read_bytes())
    edit(exported, lambda d: d.update(binary_name=name))
    with pytest.raises(ExportFormatError, match=r"is not a bare file name inside the export folder"):
        tilelang.load(exported)


def test_export_never_writes_outside_its_folder(exported, tmp_path):
    import dataclasses

    kernel = tilelang.load(exported)
    kernel.meta = dataclasses.replace(kernel.meta, binary_name="../escaped.bin")
    with pytest.raises(ExportFormatError, match="bare file name"):
        kernel.export(tmp_path / "dest" / "sub")
    assert not (tmp_path / "dest" / "escaped.bin").exists()


def test_edited_output_shape_is_refused(exported):
    def shrink(d):
        d["params"][1]["shape"] = [8]
    edit(exported, shrink, reseal=False)
    with pytest.raises(ExportFormatError, match=r"kernel.json: the manifest was changed after export"):
        tilelang.load(exported)


def test_resealed_edit_fails_the_signature(cache_dir, tmp_path):
    kernel = tilelang.compile(double(), out_idx=[1], target="cpu")
    kernel.export(tmp_path / "s", key=KEY)
    x = np.arange(32, dtype=np.float32)
    np.testing.assert_allclose(tilelang.load(tmp_path / "s", key=KEY)(x), x * 2)

    def shrink(d):
        d["params"][1]["shape"] = [8]
    edit(tmp_path / "s", shrink)  # digests recomputed: only the HMAC can tell
    with pytest.raises(ExportSignatureError, match="signature does not match this key"):
        tilelang.load(tmp_path / "s", key=KEY)


def test_unsigned_or_other_key_is_refused_with_a_key(exported, cache_dir, tmp_path):
    with pytest.raises(ExportSignatureError, match="not signed"):
        tilelang.load(exported, key=KEY)
    tilelang.compile(double(), out_idx=[1], target="cpu").export(tmp_path / "s", key=KEY)
    with pytest.raises(ExportSignatureError, match="does not match this key"):
        tilelang.load(tmp_path / "s", key=b"another-key-0123456789abcdef")


def test_truncated_binary_is_an_error_not_sigbus(exported):
    data = (exported / "kernel.bin").read_bytes()
    (exported / "kernel.bin").write_bytes(data[: len(data) // 3])
    code = ("import numpy as np, tilelang_core as t\n"
            f"try:\n    t.load({str(exported)!r})(np.ones(32, np.float32))\n"
            "except Exception as e:\n    print('ERROR', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"ERROR {exported / 'kernel.bin'}: does not match its SHA-256" in proc.stdout


def test_random_bytes_name_the_export_file(exported):
    (exported / "kernel.bin").write_bytes(np.random.default_rng(0).bytes(4096))
    edit(exported, lambda d: None)
    with pytest.raises(ExportFormatError) as info:
        tilelang.load(exported)
    assert str(exported / "kernel.bin") in str(info.value) and "not a shared library" in str(info.value)
    assert "tmp" not in str(info.value).replace(str(exported), "")


def test_huge_launch_expression_is_a_clear_error(exported):
    edit(exported, lambda d: d.update(grid=["+".join(["1"] * 200_000), 1, 1]))
    with pytest.raises(ExportFormatError, match=r"grid: launch expression of \d+ characters is past the limit"):
        tilelang.load(exported)
    edit(exported, lambda d: d.update(grid=["(1+" * 300 + "1" + ")" * 300, 1, 1]))
    with pytest.raises(ExportFormatError, match=r"grid: .*(more than \d+ terms|unsupported)"):
        tilelang.load(exported)


def gpu_double(n=256):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(n // 128, threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = X[bx * 128 + i] * 2.0
    return main


def test_hip_entry_must_be_a_kernel_of_the_code_object(cache_dir, tmp_path):
    pytest.importorskip("tilelang_hip")
    from tilelang_hip.compile import find_toolchain

    if find_toolchain("gfx90a") is None:
        pytest.skip("no HIP compiler for gfx90a here (scripts/install_hip_toolchain.sh installs one)")
    folder = tmp_path / "hip"
    tilelang.compile(gpu_double(), out_idx=[1], target="hip/gfx90a").export(folder)
    meta = tilelang.load(folder).meta  # the code object defines its entry: the check passes
    code_object = (folder / meta.binary_name).read_bytes()

    edit(folder, lambda d: d.update(entry="not_in_the_code_object"))  # digests re-sealed: the entry check fires
    with pytest.raises(ExportFormatError, match=rf"{folder / meta.binary_name}: not a usable hip/gfx90a kernel binary: "
                                                r"entry 'not_in_the_code_object' is not a function defined by the HIP "
                                                r"code object itself \(it defines: main_kernel\)"):
        tilelang.load(folder)
    # a function of the code object without its kernel descriptor is a device function, not a kernel
    from tilelang_hip.runtime import check_code_object

    without_descriptor = code_object.replace(f"{meta.entry}.kd".encode(), f"{meta.entry}.kx".encode())
    with pytest.raises(ValueError, match=rf"entry '{meta.entry}' .* has no kernel descriptor '{meta.entry}.kd'"):
        check_code_object(without_descriptor, meta)
    with pytest.raises(ValueError, match="not a HIP code object: not an ELF file"):
        check_code_object(b"__CLANG_OFFLOAD_BUNDLE__" + code_object, meta)


def test_musa_device_binary_must_define_its_entry(tmp_path):
    """MUSA's compiled binaries are ELF (like cubins); a source-only kernel has no symbols
    yet: the binary mcc makes of it at load is what gets checked."""
    import dataclasses

    pytest.importorskip("tilelang_musa")
    from tilelang_core.runtime import KernelMeta
    from tilelang_musa.compile import source_only
    from tilelang_musa.runtime import MUSARuntimeOnDemand

    (tmp_path / "k.c").write_text("void main_kernel(float *x) { x[0] = 1.0f; }\n")
    subprocess.run(["cc", "-c", str(tmp_path / "k.c"), "-o", str(tmp_path / "k.o")], check=True)
    binary = (tmp_path / "k.o").read_bytes()  # an ELF that defines main_kernel, as a device binary would
    meta = KernelMeta(entry="main_kernel", target="musa/mp_31", params=())
    runtime = MUSARuntimeOnDemand()  # checks without a device
    runtime.check_binary(binary, meta)
    with pytest.raises(ValueError, match=r"entry 'system' is not a function defined by the MUSA device binary itself"):
        runtime.check_binary(binary, dataclasses.replace(meta, entry="system"))
    with pytest.raises(ValueError, match="not a MUSA device binary: not an ELF file"):
        runtime.check_binary(b"\0" * 64, meta)
    runtime.check_binary(source_only("__global__ void main_kernel() {}", "mp_31", "no mcc"), meta)
