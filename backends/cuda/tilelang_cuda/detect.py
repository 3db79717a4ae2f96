"""Finding an NVIDIA GPU and a CUDA toolchain without failing when neither is there."""
from __future__ import annotations

from tilelang_core.plugin import Detection

from .target import CUDA_ARCHS, arch_for_compute_capability

__all__ = ["detect"]


def _toolchain() -> tuple[bool, str]:
    from .compile import toolchain_version

    version = toolchain_version()
    if version == "none":
        return False, "no NVRTC (pip install tilelang-cuda brings it) and no nvcc on PATH"
    return True, version


def _device():
    """(arch, refined capabilities, description) of device 0, or (None, None, why not), or
    (None, None, which device and why not, True) for a device this backend cannot use."""
    try:
        return _query_device()
    except Exception as exc:  # noqa: BLE001 - a missing driver library raises on first call
        return None, None, f"no NVIDIA driver or device ({type(exc).__name__})"


def _query_device():
    try:
        from cuda.bindings import driver as cu
    except Exception as exc:  # noqa: BLE001
        return None, None, f"cuda-python not importable ({type(exc).__name__})"
    (err,) = cu.cuInit(0)
    if err != cu.CUresult.CUDA_SUCCESS:
        return None, None, f"no NVIDIA driver or device (cuInit: {err.name})"
    err, count = cu.cuDeviceGetCount()
    if err != cu.CUresult.CUDA_SUCCESS or count == 0:
        return None, None, "no NVIDIA device"
    err, dev = cu.cuDeviceGet(0)

    def attr(a):
        return cu.cuDeviceGetAttribute(a, dev)[1]

    A = cu.CUdevice_attribute
    major = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    minor = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    err, name = cu.cuDeviceGetName(256, dev)
    name = name.split(b"\0", 1)[0].decode(errors="replace")
    arch = arch_for_compute_capability(major, minor)
    if arch is None:
        return None, None, (f"{name} (sm_{major}{minor}): tilelang-cuda has no arch whose code runs on "
                            f"compute capability {major}.{minor} (it builds for {', '.join(CUDA_ARCHS)})", True)
    caps = CUDA_ARCHS[arch].refine(
        processor_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        l2_size=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        shared_memory_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        registers_per_block=attr(A.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
        extra={"device_name": name},
    )
    return arch, caps, f"{name} (sm_{major}{minor})"


def detect() -> list[Detection]:
    has_tools, tools = _toolchain()
    arch, caps, what, *unusable = _device()
    if arch is not None:
        return [Detection("cuda", arch, device=True, toolchain=has_tools and _builds(arch),
                          reason=f"device: {what}; {_toolchain_text(arch, tools)}", capabilities=caps, priority=10)]
    seen = what if unusable else ""
    return [Detection("cuda", a, device=False, toolchain=has_tools and _builds(a),
                      reason=f"{what}; {_toolchain_text(a, tools)}", unusable_device=seen) for a in CUDA_ARCHS]


def _builds(arch: str) -> bool:
    from .compile import unbuildable_reason

    return unbuildable_reason(arch) is None


def _toolchain_text(arch: str, tools: str) -> str:
    from .compile import unbuildable_reason

    why = unbuildable_reason(arch)
    return f"toolchain: {tools}" if why is None else f"toolchain: {why}"
