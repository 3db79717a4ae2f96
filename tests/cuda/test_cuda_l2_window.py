"""T.annotate_l2_hit_ratio on CUDA: the metadata names the tensor and the ratio, and around
each launch the runtime sets the stream's access policy window over that tensor and the
persisting-L2 size, and restores both after (driver calls checked against a recording stand-in
for cuda-python; the GPU test runs the kernel)."""
from __future__ import annotations

import json
import types

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.codegen import CodegenError
from tilelang_core.runtime import KernelCallError, KernelMeta, ParamSpec

from tilelang_cuda.runtime_l2 import L2Window


def scaled(both: bool = False):
    @T.prim_func
    def main(A: T.Tensor((1024,), "float32"), B: T.Tensor((1024,), "float32")):
        with T.Kernel(8, threads=128) as bx:
            if both:
                T.annotate_l2_hit_ratio({A: 0.5, B: 0.25})
            else:
                T.annotate_l2_hit_ratio({A: 0.75})
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 3.0

    return main


def test_the_metadata_names_the_tensor_and_its_ratio():
    kernel = tilelang.compile(scaled(), target="cuda/sm_90a", cache=False)
    assert json.loads(kernel.meta.extra["l2_access_policy"]) == {"param": 0, "hit_ratio": 0.75}


def test_two_tensors_are_refused_naming_both():
    with pytest.raises(CodegenError, match="names A, B; CUDA keeps one address range per launch"):
        tilelang.compile(scaled(both=True), target="cuda/sm_90a", cache=False)


def test_the_hint_changes_no_result_on_the_cpu():
    a = np.arange(1024, dtype=np.float32)
    b = np.zeros_like(a)
    tilelang.compile(scaled(), target="cpu")(a, b)
    np.testing.assert_array_equal(b, a * 3)


def test_a_ratio_outside_0_1_is_refused():
    with pytest.raises(Exception, match="must be a number from 0 to 1"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=16):
                T.annotate_l2_hit_ratio({A: 1.5})


class _Recorder:
    """Just enough of cuda.bindings.driver for L2Window, recording the calls."""

    def __init__(self):
        from cuda.bindings import driver

        self.calls = []
        self.limit = 4096
        for name in ("CUlimit", "CUstreamAttrID", "CUdevice_attribute", "CUaccessProperty", "CUstreamAttrValue"):
            setattr(self, name, getattr(driver, name))

    def cuCtxGetDevice(self):  # noqa: N802 - the driver's names
        return (0, 0)

    def cuDeviceGetAttribute(self, attribute, device):  # noqa: N802
        return (0, 1 << 20 if "WINDOW" in attribute.name else 1 << 19)

    def cuCtxGetLimit(self, limit):  # noqa: N802
        return (0, self.limit)

    def cuCtxSetLimit(self, limit, value):  # noqa: N802
        self.calls.append(("limit", value))
        self.limit = value
        return (0,)

    def cuStreamSetAttribute(self, stream, attribute, value):  # noqa: N802
        w = value.accessPolicyWindow
        self.calls.append(("window", stream, int(w.base_ptr), w.num_bytes, round(w.hitRatio, 3)))
        return (0,)


def _window(shape=(1 << 19,)):
    meta = KernelMeta(entry="main_kernel", target="cuda/sm_90a", grid=(1, 1, 1), block=(128, 1, 1),
                      params=(ParamSpec("A", "tensor", "float32", shape), ParamSpec("B", "tensor", "float32", shape)),
                      extra={"l2_access_policy": json.dumps({"param": 0, "hit_ratio": 0.75})})
    slots = [types.SimpleNamespace(value=0xA000), types.SimpleNamespace(value=0xB000)]
    return L2Window(meta, slots)


def test_the_window_is_set_around_the_launch_and_restored():
    cu, window = _Recorder(), _window()
    launched = []
    launch = window.around(cu, lambda *args: launched.append(list(cu.calls)) or (0,))
    window.bind([None, None])
    assert launch("f", 1, 1, 1, 128, 1, 1, 0, 7, 0, 0) == (0,)
    # 2 MiB of float32 capped at the 1 MiB window, the persisting size at the 512 KiB maximum
    assert launched == [[("limit", 1 << 19), ("window", 7, 0xA000, 1 << 20, 0.75)]]
    assert cu.calls[2:] == [("window", 7, 0, 0, 0.0), ("limit", 4096)]


def test_a_symbolic_size_needs_the_tensor_itself():
    window = _window(shape=("n",))
    with pytest.raises(KernelCallError, match="pass the tensor itself"):
        window.bind([0xA000, 0xB000])
    window.bind([types.SimpleNamespace(nbytes=4096), None])
    assert window.nbytes == 4096


@pytest.mark.gpu
def test_the_annotated_kernel_runs_on_the_gpu():
    torch = pytest.importorskip("torch")
    kernel = tilelang.compile(scaled(), target="cuda", cache=False)
    a = torch.arange(1024, dtype=torch.float32, device="cuda")
    b = torch.zeros_like(a)
    kernel(a, b)
    torch.cuda.synchronize()
    assert torch.equal(b, a * 3)
