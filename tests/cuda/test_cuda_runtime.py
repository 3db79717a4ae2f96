"""CUDARuntime: imports without TVM, packs parameters by dtype, opts into large dynamic
shared memory, follows the caller's stream, reports driver errors by call and CUresult.

Without a GPU the flow runs against a fake libcuda (fake_driver/fake_libcuda.c, built with
the host C compiler); `@pytest.mark.gpu` tests run the real thing and skip elsewhere."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tilelang_core.runtime import KernelCallError, KernelMeta, ParamSpec
from tilelang_cuda import runtime as cuda_runtime
from tilelang_cuda.runtime import CUDARuntime, device_available

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PYTHON = sys.executable


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, cwd=REPO)


def test_runtime_imports_without_tvm():
    done = _run_python("import sys; sys.modules['tvm'] = None; import tilelang_cuda.runtime")
    assert done.returncode == 0, done.stderr


def test_runtime_import_is_lazy():
    done = _run_python(
        "import sys, json; import tilelang_cuda.runtime; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('tvm', 'cuda', 'torch', 'tilelang_cuda')))))"
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "tilelang_cuda.compile" not in loaded, "the runtime must not pull in the compiler"
    assert not [m for m in loaded if m.startswith(("tvm", "torch", "cuda.bindings"))], loaded


def test_device_available_never_raises():
    available, why = device_available()
    assert isinstance(available, bool) and isinstance(why, str) and why


def test_runtime_contract_without_a_device():
    runtime = CUDARuntime()
    assert runtime.dlpack_device_type == 2
    if "torch" not in sys.modules:
        assert runtime.current_stream() == 0


@pytest.mark.parametrize(
    "dtype, number, bits",
    [("float16", 1.5, 0x3E00), ("float16", -2.0, 0xC000), ("bfloat16", 1.0, 0x3F80),
     ("bfloat16", -3.140625, 0xC049), ("bfloat16", 1.00390625, 0x3F80)],  # ties round to even
)
def test_half_scalars_are_packed_as_bits(dtype, number, bits):
    slot, cvalue = cuda_runtime._param_slot("scalar", dtype)
    slot.value = number
    assert cvalue.value == bits


def test_unsupported_scalar_dtype_is_named():
    with pytest.raises(KernelCallError, match="'complex64'.*supported: .*float32"):
        cuda_runtime._param_slot("scalar", "complex64")


def test_driver_error_names_call_and_result():
    from cuda.bindings import driver

    error = cuda_runtime.CUDADriverError("cuCtxSynchronize", driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS, "device 0")
    text = str(error)
    assert text.startswith("cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS")
    assert "device 0" in text and "CUDA_LAUNCH_BLOCKING=1" in text
    assert error.call == "cuCtxSynchronize" and error.result == "CUDA_ERROR_ILLEGAL_ADDRESS"


# ---------------------------------------------------------------- against the fake driver


@pytest.fixture(scope="module")
def fake_driver_report(tmp_path_factory, request):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no host C compiler to build the fake libcuda")
    if device_available()[0]:
        pytest.skip("a real driver is loaded here; the GPU tests cover the runtime")
    out = tmp_path_factory.mktemp("fake_driver")
    library = out / "libcuda.so.1"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(library), "-Wl,-soname,libcuda.so.1",
                    str(HERE / "fake_driver" / "fake_libcuda.c"), "-ldl"], check=True)
    from tilelang_cuda.compile import compile_cuda

    cubin = out / "smoke.cubin"
    cubin.write_bytes(compile_cuda((HERE / "kernels" / "smoke.cu").read_text(), "sm_90a", {"name": "smoke"}))
    done = subprocess.run([PYTHON, str(HERE / "fake_driver" / "exercise_runtime.py"), str(library), str(cubin)],
                          capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_fake_driver_is_what_the_runtime_talks_to(fake_driver_report):
    assert fake_driver_report["device_available"] == [True, "Fake GPU"]
    assert fake_driver_report["gemm_function"] == "tl_smoke_gemm"
    assert fake_driver_report["axpby_function"] == "tl_smoke_axpby"


def test_params_are_packed_by_dtype(fake_driver_report):
    # pointers as u64 (an int or anything with data_ptr()), f32, f64, i64, i32, in order
    assert fake_driver_report["axpby_params"] == [0x1000, 0x2000, 0x3000, 2.5, -0.25, -7, 1000]
    assert fake_driver_report["gemm_params"] == [0xA000, 0xB000, 0xC000, 77, 40, 24]


def test_launch_dims_shared_memory_and_stream(fake_driver_report):
    assert fake_driver_report["axpby_launch"] == {"grid": [4, 1, 1], "block": [256, 1, 1], "shared": 0, "stream": 0x77}
    gemm = fake_driver_report["gemm_launch"]
    assert gemm["grid"] == [3, 5, 1] and gemm["block"] == [32, 1, 1] and gemm["shared"] == 65536
    assert gemm["stream"] == 0  # no torch: the default stream
    assert fake_driver_report["current_stream"] == 0


def test_shared_memory_above_48k_is_opted_into_at_load(fake_driver_report):
    assert fake_driver_report["gemm_opt_in_shared"] == 65536


def test_launch_from_a_thread_without_context_recovers(fake_driver_report):
    assert fake_driver_report["launch_without_current_context"] is None
    assert fake_driver_report["launch_count"] == 4


def test_another_current_context_is_left_in_place(fake_driver_report):
    # torch's current device must not move: our context is pushed and popped around
    # loads, retried launches and synchronize.
    assert fake_driver_report["launch_in_foreign_context"] is None
    assert fake_driver_report["foreign_context_kept"] == [0xBEEF, 0]
    error = fake_driver_report["synchronize_from_foreign_context"]
    assert error is not None and error["result"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert fake_driver_report["foreign_context_kept_after_sync"] == [0xBEEF, 0]


def test_too_much_shared_memory_names_the_call(fake_driver_report):
    error = fake_driver_report["shared_above_limit"]
    assert error["call"] == "cuFuncSetAttribute" and error["result"] == "CUDA_ERROR_INVALID_VALUE"
    assert "300000 bytes of dynamic shared memory" in error["message"]


def test_wrong_argument_count_is_a_call_error(fake_driver_report):
    error = fake_driver_report["wrong_arg_count"]
    assert error["result"] == "KernelCallError" and "takes 6 arguments, got 3" in error["message"]


def test_missing_entry_and_bad_image_are_named(fake_driver_report):
    missing = fake_driver_report["missing_entry"]
    assert missing["call"] == "cuModuleGetFunction" and missing["result"] == "CUDA_ERROR_NOT_FOUND"
    assert "'not_in_the_cubin' is not in the cubin" in missing["message"]
    bad = fake_driver_report["not_a_cubin"]
    assert bad["call"] == "cuModuleLoadData" and bad["result"] == "CUDA_ERROR_INVALID_IMAGE"


def test_timer_and_flush_l2(fake_driver_report):
    assert fake_driver_report["timer_ms"] == 1.5
    assert fake_driver_report["events_recorded"] == 2
    assert fake_driver_report["flush_l2_words"] == (256 << 20) // 4


def test_asynchronous_fault_is_reported_on_synchronize(fake_driver_report):
    assert fake_driver_report["synchronize_clean"] is None
    error = fake_driver_report["synchronize_after_fault"]
    assert error["call"] == "cuCtxSynchronize" and error["result"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert "an illegal memory access was encountered" in error["message"]
    assert "'tl_smoke_gemm'" in error["message"]  # the last kernel launched
    assert "CUDA_LAUNCH_BLOCKING=1" in error["message"]


def test_host_cost_of_a_launch_is_small(fake_driver_report):
    # The Python side of a launch (the fake driver does nothing); a real launch adds the
    # driver's ~2-4 us. Generous bound: this is a 2-core CI machine.
    assert fake_driver_report["host_us_per_launch"] < 20


# ---------------------------------------------------------------- on a real GPU


@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    return torch


@pytest.mark.gpu
def test_axpby_and_gemm_on_the_gpu(torch_cuda, smoke_source):
    from smoke_kernels import smoke_metas
    from tilelang_cuda.compile import compile_cuda
    from tilelang_cuda.target import arch_for_compute_capability

    torch = torch_cuda
    arch = arch_for_compute_capability(*torch.cuda.get_device_capability())
    if arch is None:
        pytest.skip("this GPU's arch is not declared by the backend")
    cubin = compile_cuda(smoke_source, arch, {"name": "smoke"})
    metas = smoke_metas(arch)
    runtime = CUDARuntime()
    axpby = runtime.load(cubin, metas["tl_smoke_axpby"])
    a = torch.randn(1001, device="cuda")
    b = torch.randn(1001, device="cuda")
    out = runtime.allocate(a, (1001,), "float32")
    axpby.launch([a, b, out, 2.0, 0.5, 1, 1001], (4, 1, 1), (256, 1, 1), 0)
    runtime.synchronize()
    assert torch.allclose(out, 2.0 * a + 0.5 * b + 1, atol=1e-5)

    gemm = runtime.load(cubin, metas["tl_smoke_gemm"])
    A = torch.randn(64, 32, device="cuda", dtype=torch.float16)
    B = torch.randn(32, 48, device="cuda", dtype=torch.float16)
    C = torch.empty(64, 48, device="cuda")
    gemm.launch([A, B, C, 64, 48, 32], (3, 4, 1), (32, 1, 1), metas["tl_smoke_gemm"].shared_memory)
    runtime.synchronize()
    assert torch.allclose(C, A.float() @ B.float(), atol=1e-2, rtol=1e-3)


@pytest.mark.gpu
def test_gpu_smoke_script_passes(torch_cuda, tmp_path):
    from smoke_kernels import build
    from tilelang_cuda.target import arch_for_compute_capability

    arch = arch_for_compute_capability(*torch_cuda.cuda.get_device_capability())
    if arch is None:
        pytest.skip("this GPU's arch is not declared by the backend")
    build(tmp_path, arch)
    done = subprocess.run([PYTHON, str(HERE / "gpu_smoke.py"), str(tmp_path)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


def test_kernels_share_one_runtime_per_process():
    # per-device state (contexts, the 256 MB L2-flush buffer of do_bench) is held once for
    # the process: a runtime per kernel ran an autotuner of hundreds of candidates out of
    # GPU memory
    from tilelang_cuda.plugin import tilelang_runtime

    first = tilelang_runtime(target=None)
    assert isinstance(first, CUDARuntime)
    assert tilelang_runtime(target=None) is first
