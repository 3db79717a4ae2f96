"""The HIP runtime without an AMD GPU: it imports without TVM, refuses clearly, packs arguments.

Launch paths run against a stand-in for hip-python's `hip` module that records calls and reads
the kernel arguments back through the pointers it is handed.
"""
from __future__ import annotations

import ctypes
import struct
import subprocess
import sys
import types

import pytest

from tilelang_core.runtime import KernelCallError, KernelMeta, ParamSpec
from tilelang_hip import runtime as hip_runtime
from tilelang_hip.runtime import HIPRuntime, HIPRuntimeUnavailable, pack_args
from tilelang_hip.target import HIP_ARCHS


def test_runtime_imports_without_tvm_or_compiler():
    code = (
        "import sys; sys.modules['tvm'] = None\n"
        "import tilelang_hip.runtime as r\n"
        "assert r.HIPRuntime.dlpack_device_type == 10\n"
        "loaded = [m for m, mod in sys.modules.items() if mod is not None and"
        " (m.split('.')[0] in ('tvm', 'hip', 'torch') or m == 'tilelang_hip.compile')]\n"
        "assert not loaded, loaded\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_without_hip_python_the_error_says_compile_only(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)
    with pytest.raises(HIPRuntimeUnavailable) as info:
        HIPRuntime()
    message = str(info.value)
    assert message.startswith("no AMD GPU: hip-python is not importable")
    assert "the HIP backend can compile here (conformance level: compile)" in message
    assert "tilelang-hip[runtime]" in message


class Err(int):
    """hip-python's error enums are ints with a name."""

    @property
    def name(self):
        return {0: "hipSuccess", 100: "hipErrorNoDevice"}.get(int(self), f"hipError{int(self)}")


def fake_hip(monkeypatch, device_count=1, error=0):
    """Install a stand-in `hip` package; returns the namespace that records launches."""
    calls = types.SimpleNamespace(launches=[], events=[])

    def launch(f, gx, gy, gz, bx, by, bz, shm, stream, params, extra):
        calls.launches.append(dict(function=f, grid=(gx, gy, gz), block=(bx, by, bz), shm=shm,
                                   stream=stream, params=list(params or []), extra=extra))
        return (Err(0),)

    api = types.SimpleNamespace(
        hipGetDeviceCount=lambda: (Err(error), device_count),
        hipSetDevice=lambda i: (Err(0),),
        hipModuleLoadData=lambda image: (Err(0), ("module", bytes(image))),
        hipModuleGetFunction=lambda module, name: (Err(0), ("function", name)),
        hipModuleLaunchKernel=launch,
        hipModuleUnload=lambda module: (Err(0),),
        hipDeviceGetAttribute=lambda attr, dev: (Err(0), 65536),
        hipDeviceAttribute_t=types.SimpleNamespace(hipDeviceAttributeMaxSharedMemoryPerBlock=74),
        hipEventCreate=lambda: (Err(0), object()),
        hipEventRecord=lambda event, stream: calls.events.append(("record", stream)) or (Err(0),),
        hipEventSynchronize=lambda event: (Err(0),),
        hipEventElapsedTime=lambda a, b: (Err(0), 1.5),
        hipEventDestroy=lambda event: (Err(0),),
        hipDeviceSynchronize=lambda: (Err(0),),
        hipGetErrorString=lambda err: (Err(0), b"fake error"),
    )
    package = types.ModuleType("hip")
    package.hip = api
    monkeypatch.setitem(sys.modules, "hip", package)
    monkeypatch.setattr(hip_runtime, "_torch", lambda: None)
    return calls


def test_without_a_device_the_error_says_compile_only(monkeypatch):
    fake_hip(monkeypatch, device_count=0, error=100)
    with pytest.raises(HIPRuntimeUnavailable,
                       match=r"no AMD GPU: hipGetDeviceCount reports hipErrorNoDevice; the HIP backend "
                             r"can compile here \(conformance level: compile\)"):
        HIPRuntime()


def test_without_the_rocm_library_the_error_says_compile_only(monkeypatch):
    fake_hip(monkeypatch)

    def no_library():
        raise RuntimeError("failed to dlopen 'libamdhip64.so'")

    sys.modules["hip"].hip.hipGetDeviceCount = no_library
    with pytest.raises(HIPRuntimeUnavailable, match="no AMD GPU: the HIP runtime library does not load"):
        HIPRuntime()


META = KernelMeta(
    target="hip/gfx942",
    entry="k",
    params=(
        ParamSpec("A", "tensor", "float16", (16, 16)),
        ParamSpec("n", "scalar", "int32"),
        ParamSpec("alpha", "scalar", "float32"),
        ParamSpec("h", "scalar", "float16"),
        ParamSpec("b", "scalar", "bfloat16"),
        ParamSpec("big", "scalar", "int64"),
        ParamSpec("x", "scalar", "float64"),
        ParamSpec("flag", "scalar", "bool"),
    ),
)


@pytest.fixture(scope="module")
def code_object(tmp_path_factory):
    """A stand-in code object: an ELF shared object whose dynamic symbol table defines the
    kernel function `k` and its kernel descriptor `k.kd`, as a HIP code object does (the
    runtime checks both before it loads a code object)."""
    folder = tmp_path_factory.mktemp("code_object")
    (folder / "k.c").write_text('void k(void) {}\nconst char descriptor[64] __asm__("k.kd") = {1};\n')
    subprocess.run(["cc", "-shared", "-fPIC", str(folder / "k.c"), "-o", str(folder / "k.so")], check=True)
    return (folder / "k.so").read_bytes()


READ = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_float, ctypes.c_uint16, ctypes.c_uint16,
        ctypes.c_int64, ctypes.c_double, ctypes.c_bool]


def test_launch_passes_each_argument_by_dtype(monkeypatch, code_object):
    calls = fake_hip(monkeypatch)
    seen = []

    def launch(f, gx, gy, gz, bx, by, bz, shm, stream, params, extra):
        # read back while the launch is in progress: the values live until it returns
        seen.extend(kind.from_address(addr).value for kind, addr in zip(READ, params))
        calls.launches.append(dict(grid=(gx, gy, gz), block=(bx, by, bz), shm=shm, stream=stream, extra=extra))
        return (Err(0),)

    sys.modules["hip"].hip.hipModuleLaunchKernel = launch
    runtime = HIPRuntime()
    kernel = runtime.load(code_object, META)
    kernel.launch([0xDEAD0000, 7, 0.5, 1.5, 1.0, -(2**40), 2.25, True], (4, 2, 1), (64, 1, 1), 1024)
    half_bits = struct.unpack("<H", struct.pack("<e", 1.5))[0]
    assert seen == [0xDEAD0000, 7, 0.5, half_bits, 0x3F80, -(2**40), 2.25, True]
    assert calls.launches == [dict(grid=(4, 2, 1), block=(64, 1, 1), shm=1024, stream=0, extra=None)]


def test_launch_checks_arguments_and_lds(monkeypatch, code_object):
    fake_hip(monkeypatch)
    kernel = HIPRuntime().load(code_object, META)
    with pytest.raises(KernelCallError, match="takes 8 arguments, got 1"):
        kernel.launch([1], (1, 1, 1), (64, 1, 1), 0)
    with pytest.raises(KernelCallError, match="70000 bytes of dynamic LDS; this GPU has 65536"):
        kernel.launch([0, 1, 1.0, 1.0, 1.0, 1, 1.0, False], (1, 1, 1), (64, 1, 1), 70000)


def test_pack_args_rejects_what_it_cannot_pass():
    with pytest.raises(KernelCallError, match="cannot pass a scalar of dtype 'float8_e4m3fnuz'"):
        pack_args([ParamSpec("s", "scalar", "float8_e4m3fnuz")], [1.0])
    bf16 = pack_args([ParamSpec("b", "scalar", "bfloat16")] * 3, [1.00390625, float("nan"), -2.0])
    assert [v.value for v in bf16][0] == 0x3F80  # ties round to even
    assert bf16[1].value & 0x7FC0 == 0x7FC0 and bf16[2].value == 0xC000


def test_timer_records_events_and_reports_ms(monkeypatch):
    calls = fake_hip(monkeypatch)
    timer = HIPRuntime().make_timer()
    timer.start()
    timer.stop()
    assert timer.elapsed_ms() == 1.5 and calls.events == [("record", 0), ("record", 0)]


def test_hip_errors_name_the_call(monkeypatch, code_object):
    fake_hip(monkeypatch)
    sys.modules["hip"].hip.hipModuleLoadData = lambda image: (Err(200), None)
    with pytest.raises(hip_runtime.HIPError, match=r"hipModuleLoadData\(hip/gfx942\) failed: hipError200 \(fake error\)"):
        HIPRuntime().load(code_object, META)


def test_load_checks_the_entry_before_the_code_object_is_mapped(monkeypatch, code_object):
    import dataclasses

    fake_hip(monkeypatch)
    mapped = []
    sys.modules["hip"].hip.hipModuleLoadData = lambda image: mapped.append(image) or (Err(0), "module")
    runtime = HIPRuntime()
    for entry, why in [("system", "not a function defined by the HIP code object itself"),
                       ("k.kd", "not a function defined by the HIP code object itself")]:  # an object
        with pytest.raises(ValueError, match=rf"kernel '{entry}' \(hip/gfx942\): entry '{entry}' is {why}"):
            runtime.load(code_object, dataclasses.replace(META, entry=entry))
    with pytest.raises(ValueError, match="not a HIP code object: not an ELF file"):
        runtime.load(b"code", META)
    assert mapped == []
    runtime.load(code_object, META)
    assert mapped == [code_object]


def test_allocate_needs_a_torch_rocm_tensor(monkeypatch):
    fake_hip(monkeypatch)
    with pytest.raises(KernelCallError, match="torch ROCm tensors"):
        HIPRuntime().allocate([1.0], (4,), "float32")


@pytest.mark.parametrize("hip_python", ["missing", "no device"])
def test_detect_reports_no_device_honestly(monkeypatch, hip_python):
    from tilelang_hip.compile import find_toolchain
    from tilelang_hip.detect import detect

    if hip_python == "missing":
        monkeypatch.setitem(sys.modules, "hip", None)
    else:
        fake_hip(monkeypatch, device_count=0, error=100)
    found = detect()
    assert {d.arch for d in found} == set(HIP_ARCHS)
    for d in found:
        assert not d.device and "no AMD device" in d.reason
        assert d.toolchain == (find_toolchain(d.arch) is not None)
