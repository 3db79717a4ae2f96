"""`T.annotate_l2_hit_ratio` at launch: an L2 access policy window over one tensor.

The kernel's metadata names the tensor parameter and the hit ratio
(`meta.extra["l2_access_policy"]`, JSON `{"param", "hit_ratio"}`). Around each launch,
`L2Window` sets the stream's access policy window (CUDA driver API,
`CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW`): the tensor's bytes (capped at the device's largest
window), `hit_ratio` of its accesses persisting in L2, the others streaming; and raises the
context's persisting-L2 size (`CU_LIMIT_PERSISTING_L2_CACHE_SIZE`) to the window (capped at
the device's maximum). After the launch both are restored, as TileLang's runtime does: the
stream's other work keeps its own policy.

No TVM here: this runs on deployment machines with only cuda-python.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from tilelang_core.runtime import KernelCallError, KernelMeta

__all__ = ["L2Window"]

_BYTES = {"float64": 8, "int64": 8, "uint64": 8, "float32": 4, "int32": 4, "uint32": 4, "float16": 2,
          "bfloat16": 2, "int16": 2, "uint16": 2}


class L2Window:
    """The window of one kernel (see the module). `bind(args)` reads the tensor's address and
    size from a launch's arguments; `around(cu, launch)` is `launch` inside the window."""

    def __init__(self, meta: KernelMeta, slots: Sequence[Any]):
        policy = json.loads(meta.extra["l2_access_policy"])
        self.param = int(policy["param"])
        self.hit_ratio = float(policy["hit_ratio"])
        self.entry = meta.entry
        self._slots = slots
        spec = meta.params[self.param]
        self.name = spec.name
        static = all(isinstance(d, int) for d in spec.shape)
        element = _BYTES.get(spec.dtype, 1)
        self._static_bytes = element * _product(spec.shape) if static else None
        self.nbytes = self._static_bytes
        self._limits: tuple[int, int] | None = None  # (largest window, largest persisting size)

    def bind(self, args: Sequence[Any]) -> None:
        """The tensor's size in this launch: its `nbytes` (a torch tensor), else the static shape's."""
        nbytes = getattr(args[self.param], "nbytes", None)
        self.nbytes = int(nbytes) if nbytes is not None else self._static_bytes
        if self.nbytes is None:
            raise KernelCallError(f"kernel {self.entry!r}: T.annotate_l2_hit_ratio covers {self.name!r}, whose size "
                                  f"is symbolic; pass the tensor itself, not its address")

    def around(self, cu, launch):
        """`launch` (cuLaunchKernel's signature) with this window set for it."""

        def launch_in_window(function, gx, gy, gz, bx, by, bz, shared_memory, stream, params, extra):
            _, previous = self._enter(cu, stream)
            try:
                return launch(function, gx, gy, gz, bx, by, bz, shared_memory, stream, params, extra)
            finally:
                self._leave(cu, stream, previous)

        return launch_in_window

    def _device_limits(self, cu) -> tuple[int, int]:
        if self._limits is None:
            from .runtime import _check

            device = _check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
            attribute = cu.CUdevice_attribute
            window = _check(cu.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
                                                    device), "cuDeviceGetAttribute")
            persisting = _check(cu.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE,
                                                        device), "cuDeviceGetAttribute")
            self._limits = (int(window), int(persisting))
        return self._limits

    def _enter(self, cu, stream) -> tuple[int, int]:
        from .runtime import _check

        max_window, max_persisting = self._device_limits(cu)
        nbytes = min(int(self.nbytes), max_window)
        previous = int(_check(cu.cuCtxGetLimit(cu.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE), "cuCtxGetLimit"))
        _check(cu.cuCtxSetLimit(cu.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, min(nbytes, max_persisting)),
               "cuCtxSetLimit", f"the persisting L2 size for T.annotate_l2_hit_ratio of {self.entry!r}")
        _check(cu.cuStreamSetAttribute(stream, cu.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                       access_policy_window(cu, int(self._slots[self.param].value), nbytes,
                                                            self.hit_ratio)),
               "cuStreamSetAttribute", f"the L2 access policy window of {self.entry!r} over {self.name!r}")
        return nbytes, previous

    def _leave(self, cu, stream, previous: int) -> None:
        from .runtime import _check

        _check(cu.cuStreamSetAttribute(stream, cu.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                       access_policy_window(cu, 0, 0, 0.0)), "cuStreamSetAttribute")
        _check(cu.cuCtxSetLimit(cu.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, previous), "cuCtxSetLimit")


def access_policy_window(cu, pointer: int, nbytes: int, hit_ratio: float):
    """A stream attribute value holding one access policy window (num_bytes 0: none)."""
    value = cu.CUstreamAttrValue()
    window = value.accessPolicyWindow
    window.base_ptr = pointer
    window.num_bytes = nbytes
    window.hitRatio = hit_ratio
    window.hitProp = cu.CUaccessProperty.CU_ACCESS_PROPERTY_PERSISTING
    window.missProp = cu.CUaccessProperty.CU_ACCESS_PROPERTY_STREAMING
    return value


def _product(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out
