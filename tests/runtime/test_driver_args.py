"""`tilelang_core.runtime.driver_args`: kernel arguments as ctypes values, and the runtime made
on first use (shared by the HIP, MUSA and Metal runtimes)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tilelang_core.runtime import (KernelCallError, KernelMeta, LoadedKernel, ParamSpec, Runtime, RuntimeOnDemand,
                                   bfloat16_bits, float16_bits, pack_driver_args, scalar_packer)


def test_float16_bits_are_numpy_float16():
    values = np.random.default_rng(0).standard_normal(64) * 1000
    expected = values.astype(np.float16).view(np.uint16)
    assert [float16_bits(v) for v in values] == [int(x) for x in expected]
    assert float16_bits(1.0) == 0x3C00 and float16_bits(-2.0) == 0xC000


def test_bfloat16_bits_round_to_nearest_even_and_keep_nans():
    assert bfloat16_bits(1.0) == 0x3F80
    assert bfloat16_bits(1.00390625) == 0x3F80  # 1 + 2^-8: halfway, to the even neighbour
    assert bfloat16_bits(1.01171875) == 0x3F82  # 1 + 3 * 2^-8: halfway, up to the even one
    assert bfloat16_bits(-2.0) == 0xC000
    signalling = ctypes.c_float.from_buffer_copy((0x7F800001).to_bytes(4, "little")).value
    for nan in (float("nan"), signalling):
        bits = bfloat16_bits(nan)
        assert bits & 0x7F80 == 0x7F80 and bits & 0x7F, hex(bits)  # still a NaN, not infinity
    assert bfloat16_bits(float("inf")) == 0x7F80


def test_scalar_packer_gives_each_dtype_its_c_type():
    tensor = scalar_packer(ParamSpec("A", "tensor", "float16", (4,)), "the test runtime")(0x1000)
    assert isinstance(tensor, ctypes.c_void_p) and tensor.value == 0x1000
    cases = {"int32": (-5, ctypes.c_int32, -5), "uint8": (255, ctypes.c_uint8, 255), "bool": (1, ctypes.c_bool, True),
             "float32": (0.5, ctypes.c_float, 0.5), "float64": (0.1, ctypes.c_double, 0.1),
             "float16": (1.0, ctypes.c_uint16, 0x3C00), "bfloat16": (-2.0, ctypes.c_uint16, 0xC000)}
    for dtype, (value, ctype, held) in cases.items():
        packed = scalar_packer(ParamSpec("s", "scalar", dtype), "the test runtime")(value)
        assert isinstance(packed, ctype) and packed.value == held, dtype


def test_what_cannot_be_passed_is_named():
    with pytest.raises(KernelCallError, match=r"parameter 's': the test runtime cannot pass a scalar of dtype "
                                              r"'float8_e4m3fn'; scalars may be bool, int8"):
        scalar_packer(ParamSpec("s", "scalar", "float8_e4m3fn"), "the test runtime")
    params = [ParamSpec("A", "tensor", "float32", (4,)), ParamSpec("n", "scalar", "int32")]
    with pytest.raises(KernelCallError, match=r"kernel takes 2 arguments \(A, n\), got 1"):
        pack_driver_args(params, [0x10], "the test runtime")
    assert [v.value for v in pack_driver_args(params, [0x10, 7], "the test runtime")] == [0x10, 7]


class _Recording(Runtime):
    """A runtime that records what it was asked."""

    def __init__(self, calls):
        self.calls = calls

    def load(self, binary, meta):
        self.calls.append(("load", binary))
        return "kernel"

    def current_stream(self, device_index=0):
        self.calls.append(("current_stream", device_index))
        return 7

    def synchronize(self):
        self.calls.append(("synchronize",))

    def allocate(self, like, shape, dtype):
        self.calls.append(("allocate", tuple(shape), dtype))
        return "tensor"

    def from_numpy(self, array):
        self.calls.append(("from_numpy",))
        return "device copy"

    def make_timer(self):
        self.calls.append(("make_timer",))
        return "timer"

    def flush_l2(self):
        self.calls.append(("flush_l2",))


def test_the_runtime_is_made_on_first_use_once_and_forwards_every_call():
    made, calls = [], []

    def make():
        made.append(1)
        return _Recording(calls)

    lazy = RuntimeOnDemand(make, dlpack_device_type=10)
    assert made == [] and lazy.dlpack_device_type == 10 and lazy.takes_tensors is False
    meta = KernelMeta(target="test", entry="k", params=())
    assert lazy.load(b"bin", meta) == "kernel"
    assert lazy.current_stream(1) == 7
    lazy.synchronize()
    assert lazy.allocate(None, [2, 3], "float32") == "tensor"
    assert lazy.from_numpy(np.zeros(1)) == "device copy"
    assert lazy.make_timer() == "timer"
    lazy.flush_l2()
    assert made == [1]
    assert [c[0] for c in calls] == ["load", "current_stream", "synchronize", "allocate", "from_numpy", "make_timer",
                                     "flush_l2"]


def test_a_runtime_that_cannot_be_made_fails_at_load_not_before():
    class Unavailable(RuntimeError):
        pass

    def make():
        raise Unavailable("no device here")

    lazy = RuntimeOnDemand(make, dlpack_device_type=1, takes_tensors=True)
    assert lazy.takes_tensors is True and isinstance(lazy, Runtime) and not isinstance(lazy, LoadedKernel)
    with pytest.raises(Unavailable, match="no device here"):
        lazy.load(b"", KernelMeta(target="test", entry="k", params=()))
