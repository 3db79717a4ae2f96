"""Drive CUDARuntime against the fake libcuda (fake_libcuda.c) and print what the fake saw,
as JSON, for test_cuda_runtime.py. Run in a child process: the fake must be loaded before
cuda.bindings looks for the driver, and must not meet NVRTC in the same process.

    python exercise_runtime.py FAKE_LIBCUDA_SO CUBIN
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
import time
from pathlib import Path

__test__ = False

fake = ctypes.CDLL(sys.argv[1], mode=os.RTLD_GLOBAL)  # found by soname libcuda.so.1 from now on
sys.modules["tvm"] = None
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from smoke_kernels import smoke_metas  # noqa: E402
from tilelang_cuda.runtime import CUDADriverError, CUDARuntime, device_available  # noqa: E402

cubin = Path(sys.argv[2]).read_bytes()
metas = smoke_metas("sm_90a")
report: dict = {"device_available": list(device_available())}


def last_params(formats: list[str]) -> list:
    buffer = ctypes.create_string_buffer(8)
    values = []
    for index, fmt in enumerate(formats):
        fake.fake_last_param(index, buffer)
        values.append(struct.unpack_from(fmt, buffer.raw)[0])
    return values


def last_launch() -> dict:
    dims = (ctypes.c_uint * 7)()
    stream = ctypes.c_uint64()
    fake.fake_last_launch(dims, ctypes.byref(stream))
    return {"grid": list(dims[0:3]), "block": list(dims[3:6]), "shared": dims[6], "stream": stream.value}


def error_of(call) -> dict | None:
    try:
        call()
    except CUDADriverError as exc:
        return {"call": exc.call, "result": exc.result, "message": str(exc)}
    except Exception as exc:  # noqa: BLE001
        return {"call": None, "result": type(exc).__name__, "message": str(exc)}
    return None


runtime = CUDARuntime()
fake.fake_function_name.restype = ctypes.c_char_p

gemm = runtime.load(cubin, metas["tl_smoke_gemm"])
report["gemm_function"] = fake.fake_function_name().decode()
report["gemm_opt_in_shared"] = fake.fake_max_dynamic_shared()

axpby = runtime.load(cubin, metas["tl_smoke_axpby"], device=0)
report["axpby_function"] = fake.fake_function_name().decode()


class FakeTensor:
    def __init__(self, address: int):
        self.address = address

    def data_ptr(self) -> int:
        return self.address


fake.fake_set_param_count(7)
axpby.launch([0x1000, FakeTensor(0x2000), 0x3000, 2.5, -0.25, -7, 1000], (4, 1, 1), (256, 1, 1), 0, 0x77)
report["axpby_params"] = last_params(["<Q", "<Q", "<Q", "<f", "<d", "<q", "<i"])
report["axpby_launch"] = last_launch()

fake.fake_set_param_count(6)
gemm.launch([0xA000, 0xB000, 0xC000, 77, 40, 24], (3, 5, 1), (32, 1, 1), 64 * 1024, None)
report["gemm_params"] = last_params(["<Q", "<Q", "<Q", "<i", "<i", "<i"])
report["gemm_launch"] = last_launch()

fake.fake_clear_current_context()  # as in a thread that never touched CUDA
report["launch_without_current_context"] = error_of(
    lambda: gemm.launch([1, 2, 3, 16, 16, 16], (1, 1, 1), (32, 1, 1), 0, 0))
fake.fake_current_context.restype = ctypes.c_uint64
fake.fake_set_current_context(ctypes.c_uint64(0xBEEF))  # another device's context, as torch may leave
report["launch_in_foreign_context"] = error_of(
    lambda: gemm.launch([1, 2, 3, 16, 16, 16], (1, 1, 1), (32, 1, 1), 0, 0))
other = runtime.load(cubin, metas["tl_smoke_fault"], device=0)
report["foreign_context_kept"] = [fake.fake_current_context(), fake.fake_context_depth()]
fake.fake_set_pending_error(700)
report["synchronize_from_foreign_context"] = error_of(runtime.synchronize)
fake.fake_set_pending_error(0)
report["foreign_context_kept_after_sync"] = [fake.fake_current_context(), fake.fake_context_depth()]
fake.fake_set_current_context(ctypes.c_uint64(0xC0C0))
del other
report["launch_count"] = fake.fake_launch_count()

report["shared_above_limit"] = error_of(
    lambda: gemm.launch([1, 2, 3, 16, 16, 16], (1, 1, 1), (32, 1, 1), 300_000, 0))
report["wrong_arg_count"] = error_of(lambda: gemm.launch([1, 2, 3], (1, 1, 1), (32, 1, 1), 0, 0))
report["missing_entry"] = error_of(lambda: runtime.load(cubin, metas["tl_smoke_gemm"].__class__(
    target="cuda/sm_90a", entry="not_in_the_cubin", params=())))
report["not_a_cubin"] = error_of(lambda: runtime.load(b"not an elf", metas["tl_smoke_gemm"]))

timer = runtime.make_timer()
timer.start()
timer.stop()
report["timer_ms"] = timer.elapsed_ms()
report["events_recorded"] = fake.fake_events_recorded()

runtime.flush_l2()
words, value = ctypes.c_uint64(), ctypes.c_uint()
fake.fake_memset(ctypes.byref(words), ctypes.byref(value))
report["flush_l2_words"] = words.value
report["current_stream"] = runtime.current_stream()

report["synchronize_clean"] = error_of(runtime.synchronize)
fake.fake_set_pending_error(700)
report["synchronize_after_fault"] = error_of(runtime.synchronize)
fake.fake_set_pending_error(0)

args = [0x1000, 0x2000, 0x3000, 2.5, -0.25, -7, 1000]
grid, block = (4, 1, 1), (256, 1, 1)
for _ in range(2000):
    axpby.launch(args, grid, block, 0, 0)
best = float("inf")
for _ in range(5):
    start = time.perf_counter()
    for _ in range(20000):
        axpby.launch(args, grid, block, 0, 0)
    best = min(best, (time.perf_counter() - start) / 20000 * 1e6)
report["host_us_per_launch"] = best

print(json.dumps(report))
