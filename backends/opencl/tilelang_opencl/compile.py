"""Building OpenCL programs: the device's own compiler, reached through pyopencl.

OpenCL's portable form of a program is its source: a device binary is valid only for the
driver that made it. So `compile_opencl` builds the program for a device of the target's
arch class (the compile-level evidence, with the build log on failure) and returns a
self-contained program, not a device binary: the source with `tl_opencl.h` inlined, and the
build options, as JSON (`PROGRAM_FORMAT`). The runtime builds that again where it runs;
pyopencl keeps built binaries in its own disk cache, so a second build is a lookup.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

from tilelang_core.runtime import CompileError

from .device import OpenCLUnavailable, context_for, device_for, import_pyopencl

__all__ = ["PROGRAM_FORMAT", "HEADER", "build_options", "program_text", "compile_opencl", "cache_key", "read_program"]

PROGRAM_FORMAT = "tilelang-opencl-program/1"
HEADER = Path(__file__).parent / "include" / "tl_opencl.h"
_INCLUDE_LINE = '#include "tl_opencl.h"'


def build_options(fast_math: bool = False, flags=()) -> list[str]:
    """OpenCL C 1.2 (every platform has it); fast math relaxes IEEE rules as nvcc's would."""
    return ["-cl-std=CL1.2", *(["-cl-fast-relaxed-math"] if fast_math else []), *flags]


def program_text(source: str) -> str:
    """The kernel's source with the helper header inlined: a program that needs no file."""
    return source.replace(_INCLUDE_LINE, HEADER.read_text().rstrip("\n"), 1)


def compile_opencl(source: str, arch: str, options: dict) -> bytes:
    """Build `source` for a device of class `arch`; the JSON program the runtime loads.

    Raises CompileError with the build log, the file the program was saved to and a command
    that rebuilds it, when the device's compiler refuses it (or when there is no device).
    """
    text = program_text(source)
    opts = build_options(options.get("fast_math", False), options.get("flags", ()))
    try:
        device = device_for(arch)
        cl = import_pyopencl()
    except OpenCLUnavailable as exc:
        raise CompileError(f"cannot build OpenCL code for opencl/{arch}: {exc}") from exc
    try:
        cl.Program(context_for(device), text).build(options=opts, devices=[device])
    except cl.RuntimeError as exc:  # the build log is in the message
        path = _save(text)
        raise CompileError(
            f"the OpenCL compiler of {device.name} refused the generated program:\n{exc}\n"
            f"program: {path}\nrebuild: python -c \"import pyopencl as cl; d=cl.get_platforms()[0].get_devices()[0]; "
            f"cl.Program(cl.Context([d]), open('{path}').read()).build(options={opts!r})\"") from exc
    return json.dumps({"format": PROGRAM_FORMAT, "source": text, "options": opts}).encode()


def read_program(binary: bytes) -> tuple[str, list[str]]:
    """(source, build options) of what `compile_opencl` returned."""
    try:
        data = json.loads(binary.decode())
        if data.get("format") != PROGRAM_FORMAT:
            raise ValueError(f"format {data.get('format')!r}")
    except (ValueError, UnicodeDecodeError, AttributeError) as exc:
        raise CompileError(f"not an OpenCL program of tilelang-opencl ({PROGRAM_FORMAT}): {exc}; "
                           f"recompile the kernel with this version") from None
    return data["source"], list(data["options"])


def cache_key(arch: str) -> dict:
    """The helper header and the device's driver version change what a build produces."""
    key = {"header": hashlib.sha256(HEADER.read_bytes()).hexdigest()[:16], "format": PROGRAM_FORMAT}
    try:
        device = device_for(arch)
        key["device"] = f"{device.platform.version} / {device.name} / {device.driver_version}"
    except OpenCLUnavailable:
        key["device"] = "none"
    return key


def _save(text: str) -> str:
    fd, path = tempfile.mkstemp(prefix="tilelang-opencl-", suffix=".cl")
    with open(fd, "w") as f:
        f.write(text)
    return path
