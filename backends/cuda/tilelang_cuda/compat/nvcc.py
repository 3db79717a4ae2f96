"""TileLang's `tilelang.contrib.nvcc`, as far as this backend provides it: the CUDA toolchain's
version and compiling CUDA C++ to a cubin, through this backend's compiler (NVRTC, else nvcc).

- `get_cuda_version()`: (major, minor) of the toolchain that compiles here (NVRTC's version
  when NVRTC loads, else nvcc's); a RuntimeError when there is neither.
- `get_target_compute_version(target=None)`: the compute capability ("9.0") of `target` (an
  arch such as "sm_90a" or a target naming one), else of the CUDA device found here;
- `compile_cuda(code, target_format="cubin", arch=None, options=None)`: the cubin of `code`
  for `arch` ("sm_90a", "sm_80", or a compute capability such as 90 or "9.0"; default: the
  detected device's). `options` are raw flags for the compiler. Other target formats (PTX,
  fatbin) are refused with a clear error: this backend builds cubins only.
"""
from __future__ import annotations

import re
from typing import Sequence

from .. import compile as _compile

__all__ = ["compile_cuda", "get_cuda_version", "get_target_compute_version"]


def get_cuda_version() -> tuple[int, int]:
    """(major, minor) of the CUDA toolchain this backend compiles with."""
    version = _compile.toolchain_version()
    match = re.search(r"(\d+)\.(\d+)", version)
    if not match:
        raise RuntimeError("no CUDA toolchain found (neither NVRTC nor nvcc): install NVRTC with "
                           "pip install 'nvidia-cuda-nvrtc>=13,<14' cuda-bindings")
    return int(match.group(1)), int(match.group(2))


def _arch(arch: str | int | None) -> str:
    if arch is None:
        from tilelang_core import get_plugin_manager

        return get_plugin_manager().parse_target("cuda").arch
    text = str(arch).strip()
    if re.fullmatch(r"\d+\.\d+", text):  # "9.0" -> sm_90
        major, minor = text.split(".")
        return f"sm_{major}{minor}"
    if text.isdigit():
        return f"sm_{text}"
    return text.removeprefix("-arch=")


def compile_cuda(code: str, target_format: str = "cubin", arch: str | int | None = None,
                 options: Sequence[str] | str | None = None, path_target: str | None = None,
                 verbose: bool = False) -> bytes:
    """The cubin of CUDA C++ `code` for `arch` (written to `path_target` too when given)."""
    if target_format != "cubin":
        raise ValueError(f"compile_cuda: target_format={target_format!r} is not supported by tilelang-cuda, "
                         "which builds cubins only; pass target_format='cubin'")
    flags = (options,) if isinstance(options, str) else tuple(options or ())
    binary = _compile.compile_cuda(code, _arch(arch), {"flags": flags})
    if path_target:
        with open(path_target, "wb") as out:
            out.write(binary)
    if verbose:
        print(f"tilelang-cuda: compiled {len(binary)} bytes of cubin for {_arch(arch)}")
    return binary


def get_target_compute_version(target=None) -> str:
    """The compute capability, as "major.minor", of `target` (a `cuda/sm_XY` target, an arch
    string, or an object whose `.arch` names one), else of the detected CUDA device."""
    arch = getattr(target, "arch", None) or (str(target) if target is not None else None)
    if arch is None or "sm_" not in arch:
        arch = _arch(None)
    digits = re.search(r"sm_(\d+)", arch)
    if not digits:
        raise RuntimeError(f"get_target_compute_version: {arch!r} names no CUDA arch (sm_XY)")
    number = digits.group(1)
    return f"{number[:-1]}.{number[-1]}"
