"""CUDA C++ to cubin: NVRTC (cuda-python) first, nvcc as the fallback; cuobjdump to read SASS.

Works on a machine without a GPU: NVRTC and the CUDA headers come from pip wheels
(`nvidia-cuda-nvrtc`, `nvidia-cuda-runtime`, `nvidia-cuda-cccl`), found through
`cuda.pathfinder`, or from a CUDA toolkit (`CUDA_HOME`/`CUDA_PATH`, read by pathfinder).
Generated code must mark device functions `__device__` (NVRTC runs with `-default-device`,
nvcc has no such flag) and give kernels C linkage (`extern "C" __global__`).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tilelang_core import env
from tilelang_core.runtime import CompileError

__all__ = [
    "COMPILE_OPTIONS",
    "compile_cuda",
    "toolchain_version",
    "unbuildable_reason",
    "include_digest",
    "include_dirs",
    "disassemble",
]

INCLUDE_DIR = Path(__file__).resolve().parent / "include"

# Every option compile_cuda accepts, with its default.
COMPILE_OPTIONS: dict[str, Any] = {
    # --use_fast_math: approximate division, sqrt and transcendentals, flush denormals.
    "fast_math": False,
    # -lineinfo: SASS-to-source correlation for profilers and sanitizers.
    "line_info": True,
    # extra -I directories, searched after ours and before the CUDA headers
    "include_dirs": (),
    # -D NAME=VALUE (a value of None gives -D NAME)
    "defines": {},
    # raw flags appended to the toolchain's command line
    "flags": (),
    # "auto" (NVRTC, else nvcc), "nvrtc" or "nvcc"
    "compiler": "auto",
    # the generated file's name, without ".cu" (appears in logs and the kept copy)
    "name": "kernel",
    # generated line -> (python file, python line), as in KernelSource.line_map
    "line_map": {},
}

_ARCH = re.compile(r"^sm_(\d{2,3})([af]?)$")
_LOG_LINE = re.compile(r"^(?P<file>[^\s()]+)\((?P<line>\d+)\): (?P<kind>error|catastrophic error|warning)")


def _check_options(options: dict | None) -> dict[str, Any]:
    options = dict(options or {})
    unknown = sorted(set(options) - set(COMPILE_OPTIONS))
    if unknown:
        raise ValueError(
            f"unknown CUDA compile option(s) {', '.join(map(repr, unknown))}; "
            f"valid options: {', '.join(sorted(COMPILE_OPTIONS))}"
        )
    merged = {**COMPILE_OPTIONS, **options}
    if merged["compiler"] not in ("auto", "nvrtc", "nvcc"):
        raise ValueError(f"compile option compiler={merged['compiler']!r}: use 'auto', 'nvrtc' or 'nvcc'")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", str(merged["name"])):
        raise ValueError(f"compile option name={merged['name']!r}: use letters, digits, '_', '.', '-'")
    return merged


def _check_arch(arch: str) -> tuple[str, str]:
    """("compute_90a", "sm_90a") for "sm_90a"; a clear error for anything else."""
    match = _ARCH.match(arch)
    if not match:
        raise ValueError(f"CUDA arch {arch!r} is not of the form sm_XY, sm_XYa or sm_XYf (e.g. 'sm_90a')")
    return f"compute_{match.group(1)}{match.group(2)}", arch


# ---------------------------------------------------------------- finding the toolchain


def _pathfinder():
    try:
        import cuda.pathfinder as pathfinder

        return pathfinder
    except ImportError:
        return None


@functools.lru_cache(maxsize=None)
def _cuda_home() -> Path | None:
    pathfinder = _pathfinder()
    home = pathfinder.get_cuda_path_or_home() if pathfinder and hasattr(pathfinder, "get_cuda_path_or_home") else None
    if home:
        return Path(home)
    nvcc = shutil.which("nvcc")
    for candidate in ([Path(nvcc).resolve().parent.parent] if nvcc else []) + [Path("/usr/local/cuda")]:
        if (candidate / "include" / "cuda_fp16.h").is_file():
            return candidate
    return None


@functools.lru_cache(maxsize=None)
def _cuda_header_dirs() -> tuple[str, ...]:
    """The CUDA runtime headers (cuda_fp16.h, ...) and CCCL (cuda/std/...): pathfinder looks in
    the wheels, then in CUDA_HOME / CUDA_PATH; without pathfinder, the toolkit's."""
    found: list[str] = []
    pathfinder = _pathfinder()
    if pathfinder is not None and hasattr(pathfinder, "find_nvidia_header_directory"):
        for library in ("cudart", "cccl"):
            try:
                directory = pathfinder.find_nvidia_header_directory(library)
            except Exception:  # noqa: BLE001 - a missing component is simply not added
                directory = None
            if directory and directory not in found:
                found.append(directory)
    if not found:
        home = _cuda_home()
        if home is not None:
            found = [str(d) for d in (home / "include", home / "include" / "cccl") if d.is_dir()]
    return tuple(found)


def include_dirs(options: dict | None = None, *, cuda_headers: bool = True) -> list[str]:
    """The -I directories of a compile, in search order: ours, the caller's, CUDA's.

    nvcc finds its own toolkit's headers, so it is given only ours and the caller's
    (`cuda_headers=False`): mixing another release's cuda_fp16.h with nvcc's breaks.
    """
    opts = _check_options(options)
    cuda = _cuda_header_dirs() if cuda_headers else ()
    return [str(INCLUDE_DIR), *map(str, opts["include_dirs"]), *cuda]


@functools.lru_cache(maxsize=None)
def _nvrtc():
    """cuda.bindings.nvrtc when its shared library loads, else None."""
    try:
        from cuda.bindings import nvrtc

        err, _, _ = nvrtc.nvrtcVersion()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return None
        return nvrtc
    except Exception:  # noqa: BLE001 - no cuda-python, or libnvrtc not found
        return None


def _find_tool(name: str) -> str | None:
    pathfinder = _pathfinder()
    if pathfinder is not None and hasattr(pathfinder, "find_nvidia_binary_utility"):
        try:
            found = pathfinder.find_nvidia_binary_utility(name)
        except Exception:  # noqa: BLE001
            found = None
        if found:
            return found
    found = shutil.which(name)
    if found:
        return found
    home = _cuda_home()
    if home is not None and (home / "bin" / name).is_file():
        return str(home / "bin" / name)
    return None


def _use_nvrtc(compiler: str) -> bool:
    if compiler == "nvcc":
        return False
    if _nvrtc() is not None:
        return True
    if compiler == "nvrtc":
        raise CompileError(
            "NVRTC is not available: cuda-python's cuda.bindings.nvrtc did not load libnvrtc.\n"
            "Install it with: pip install 'nvidia-cuda-nvrtc>=13,<14' cuda-bindings"
        )
    return False


@functools.lru_cache(maxsize=None)
def _nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"V(\d+\.\d+\.\d+)", out)
    return match.group(1) if match else "unknown"


@functools.lru_cache(maxsize=None)
def _nvrtc_archs() -> frozenset[int]:
    """The compute capabilities (75, 80, ...) the loaded NVRTC builds; empty without NVRTC."""
    nvrtc = _nvrtc()
    if nvrtc is None:
        return frozenset()
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    return frozenset(int(a) for a in archs) if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else frozenset()


def _capability_number(arch: str) -> int:
    return int(_ARCH.match(arch).group(1))


def unbuildable_reason(arch: str) -> str | None:
    """None when a compiler here builds `arch`; else why not and what to install. (CUDA 13's
    NVRTC dropped compute capability 7.0 (Volta): sm_70 needs a CUDA 12 nvcc.)"""
    if _nvrtc() is not None and _capability_number(arch) in _nvrtc_archs():
        return None
    nvcc = _find_tool("nvcc")
    if nvcc is not None and _nvcc_builds(nvcc, arch):
        return None
    have = toolchain_version()
    return (f"{have} does not build {arch}" if have != "none" else "no NVRTC and no nvcc here") + (
        "; CUDA 13 dropped compute capability 7.0: install a CUDA 12 toolkit and set CUDA_HOME to it "
        "(its nvcc builds sm_70)" if _capability_number(arch) < 75 else
        "; pip install tilelang-cuda brings NVRTC 13, which builds sm_75 and newer")


@functools.lru_cache(maxsize=None)
def _nvcc_builds(nvcc: str, arch: str) -> bool:
    out = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, check=False).stdout
    return arch in out.split()


def toolchain_version(compiler: str = "auto") -> str:
    """What compiles CUDA here, for cache keys: "nvrtc 13.5", "nvcc 13.0.88" or "none"."""
    if _use_nvrtc(compiler):
        nvrtc = _nvrtc()
        _, major, minor = nvrtc.nvrtcVersion()
        return f"nvrtc {major}.{minor}"
    nvcc = _find_tool("nvcc")
    return f"nvcc {_nvcc_version(nvcc)}" if nvcc else "none"


@functools.lru_cache(maxsize=None)
def include_digest() -> str:
    """A hash of our device headers: cache keys change when a header does."""
    digest = hashlib.sha256()
    for header in sorted(INCLUDE_DIR.glob("*.h")):
        digest.update(header.name.encode() + b"\0" + header.read_bytes())
    return digest.hexdigest()[:16]


# ---------------------------------------------------------------- compiling


def _common_flags(opts: dict[str, Any], *, cuda_headers: bool) -> list[str]:
    flags = ["-std=c++17"]
    if opts["line_info"]:
        flags.append("-lineinfo")
    if opts["fast_math"]:
        flags.append("--use_fast_math")
    for name, value in dict(opts["defines"]).items():
        flags.append(f"-D{name}" if value is None else f"-D{name}={value}")
    flags += [f"-I{d}" for d in include_dirs({"include_dirs": opts["include_dirs"]}, cuda_headers=cuda_headers)]
    return flags


def compile_cuda(source: str, arch: str, options: dict | None = None) -> bytes:
    """Compile CUDA C++ `source` to a cubin for `arch` ("sm_80", "sm_89", "sm_90a", ...).

    Uses NVRTC when it loads, else nvcc (`options["compiler"]` forces one). Raises
    `CompileError` with the toolchain's log, the path of a kept copy of the source, the
    offending lines of the source and an nvcc command that reproduces the failure; raises
    `ValueError` for an unknown option or a malformed arch.
    """
    opts = _check_options(options)
    _check_arch(arch)
    if _use_nvrtc(opts["compiler"]) and (opts["compiler"] == "nvrtc" or _capability_number(arch) in _nvrtc_archs()):
        return _compile_nvrtc(source, arch, opts)
    if opts["compiler"] == "auto" and (why := unbuildable_reason(arch)) is not None:
        raise CompileError(f"cannot compile for cuda/{arch}: {why}")
    nvcc = _find_tool("nvcc")
    if nvcc is None:
        raise CompileError(
            "no CUDA compiler: NVRTC did not load and nvcc is not on PATH or under CUDA_HOME.\n"
            "Install NVRTC with: pip install 'nvidia-cuda-nvrtc>=13,<14' 'nvidia-cuda-runtime>=13,<14' cuda-bindings"
        )
    return _compile_nvcc(nvcc, source, arch, opts)


# nvcc flags that concern its host compile or its driver, which NVRTC (device code only,
# always optimized) does not take: host optimization levels, host warning switches, nvcc's
# C++ relaxations for calling host constexpr functions and lambdas from device code (which
# generated kernels do not do), -Xcompiler and --keep
_NVCC_ONLY = re.compile(r"^(-O[0-3s]?|-W(?!.*=).+|--expt-relaxed-constexpr|--expt-extended-lambda|--extended-lambda"
                        r"|-Xcompiler(=.*)?|--compiler-options(=.*)?|--keep|-keep)$")


def nvrtc_flags(flags) -> list[str]:
    """The user's compile flags (`compile_flags=`, TileLang's nvcc flags) as NVRTC takes them:
    the nvcc-only ones of `_NVCC_ONLY` dropped, a comma list of ptxas options split into one
    flag each, the rest (-D, -U, --use_fast_math, -lineinfo, ...) passed on; an unknown one is
    NVRTC's error, which names it."""
    out = []
    for flag in flags:
        if _NVCC_ONLY.match(flag):
            continue
        for prefix in ("--ptxas-options=", "-Xptxas="):  # nvcc splits a comma list, NVRTC does not
            if flag.startswith(prefix):
                out += [f"--ptxas-options={part}" for part in flag[len(prefix):].split(",") if part]
                break
        else:
            out.append(flag)
    return out


def _compile_nvrtc(source: str, arch: str, opts: dict[str, Any]) -> bytes:
    nvrtc = _nvrtc()
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    file_name = f"{opts['name']}.cu"
    err, program = nvrtc.nvrtcCreateProgram(source.encode(), file_name.encode(), 0, [], [])
    _check_nvrtc(nvrtc, err, "nvrtcCreateProgram")
    try:
        flags = [f"--gpu-architecture={arch}", "-default-device",
                 *_common_flags(opts, cuda_headers=True), *nvrtc_flags(opts["flags"])]
        encoded = [f.encode() for f in flags]
        (result,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        log = _nvrtc_log(nvrtc, program)
        if result != ok:
            _, major, minor = nvrtc.nvrtcVersion()
            raise _compile_error(f"NVRTC {major}.{minor}", result.name, log, source, arch, opts)
        err, size = nvrtc.nvrtcGetCUBINSize(program)
        _check_nvrtc(nvrtc, err, "nvrtcGetCUBINSize")
        cubin = b" " * size
        (err,) = nvrtc.nvrtcGetCUBIN(program, cubin)
        _check_nvrtc(nvrtc, err, "nvrtcGetCUBIN")
        if size == 0:
            raise CompileError(f"NVRTC produced no cubin for {arch} (is it a real arch, not compute_XY?)")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _check_nvrtc(nvrtc, err, call: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"{call} failed: {err.name}")


def _nvrtc_log(nvrtc, program) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(program)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(program, log)
    return log.rstrip(b"\0").decode(errors="replace").strip()


def _compile_nvcc(nvcc: str, source: str, arch: str, opts: dict[str, Any]) -> bytes:
    compute, sm = _check_arch(arch)
    with tempfile.TemporaryDirectory(prefix="tilelang_cuda_") as tmp:
        src = Path(tmp) / f"{opts['name']}.cu"
        out = Path(tmp) / f"{opts['name']}.cubin"
        src.write_text(source)
        command = [nvcc, "-cubin", f"-gencode=arch={compute},code={sm}", *_common_flags(opts, cuda_headers=False),
                   *opts["flags"], "-o", str(out), str(src)]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp)
        if done.returncode != 0 or not out.is_file():
            log = (done.stdout + done.stderr).strip().replace(str(src), src.name)
            raise _compile_error(f"nvcc {_nvcc_version(nvcc)}", f"exit status {done.returncode}", log,
                                 source, arch, opts)
        return out.read_bytes()


# ---------------------------------------------------------------- error reports


def _keep_source(source: str, name: str) -> Path:
    """A copy of the generated source that outlives the compile, named by its content."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    for directory in (env.cache_dir() / "cuda" / "failed", Path(tempfile.gettempdir()) / "tilelang_cuda_failed"):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{name}_{digest}.cu"
            path.write_text(source)
            return path
        except OSError:
            continue
    raise CompileError("could not write the generated source anywhere (cache dir and temp dir unwritable)")


def _offending_lines(log: str, source: str, file_name: str, line_map: dict) -> list[str]:
    """The generated lines the log blames (errors first), quoted with a line of context."""
    lines = source.splitlines()
    blamed: list[int] = []
    for kind_first in ("error", "warning"):
        for entry in log.splitlines():
            match = _LOG_LINE.match(entry.strip())
            if not match or not match.group("kind").endswith(kind_first):
                continue
            if Path(match.group("file")).name != file_name:
                continue
            number = int(match.group("line"))
            if number not in blamed and 1 <= number <= len(lines):
                blamed.append(number)
        if blamed:
            break
    quoted = []
    for number in blamed[:5]:
        for shown in range(max(1, number - 1), number + 1):
            marker = ">" if shown == number else " "
            quoted.append(f"  {marker} {shown:5d} | {lines[shown - 1]}")
        origin = line_map.get(number) or line_map.get(str(number))
        if origin:
            quoted.append(f"          (from {origin[0]}:{origin[1]})")
    return quoted


def _repro_command(path: Path, arch: str, opts: dict[str, Any]) -> str:
    compute, sm = _check_arch(arch)
    nvcc = _find_tool("nvcc") or "nvcc"
    command = [nvcc, "-cubin", f"-gencode=arch={compute},code={sm}", *_common_flags(opts, cuda_headers=False),
               *opts["flags"], "-o", str(path.with_suffix(".cubin")), str(path)]
    return shlex.join(command)


def _compile_error(tool: str, status: str, log: str, source: str, arch: str, opts: dict[str, Any]) -> CompileError:
    file_name = f"{opts['name']}.cu"
    kept = _keep_source(source, opts["name"])
    quoted = _offending_lines(log, source, file_name, dict(opts["line_map"]))
    parts = [
        f"{tool} failed to compile {file_name} for {arch} ({status}).",
        "",
        "Toolchain log:",
        *(f"  {line}" for line in (log or "(empty)").splitlines()),
        "",
        f"Generated source kept at: {kept}",
    ]
    if quoted:
        parts += ["Offending generated line(s):", *quoted]
    else:
        parts.append("The log names no line of the generated source (see the log above).")
    parts += ["", "Reproduce with nvcc:", f"  {_repro_command(kept, arch, opts)}"]
    return CompileError("\n".join(parts))


# ---------------------------------------------------------------- reading the binary


def disassemble(cubin: bytes) -> str:
    """The SASS of a cubin, as `cuobjdump -sass` prints it.

    cuobjdump hands the work to nvdisasm, which it looks for on PATH or in NVDISASM_PATH;
    both come from the nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm wheels or a toolkit.
    """
    cuobjdump = _find_tool("cuobjdump")
    nvdisasm = _find_tool("nvdisasm")
    if cuobjdump is None or nvdisasm is None:
        raise RuntimeError(
            "cuobjdump and nvdisasm are needed to read SASS: "
            "pip install 'nvidia-cuda-cuobjdump>=13,<14' 'nvidia-cuda-nvdisasm>=13,<14', or install a CUDA toolkit"
        )
    child_env = {**os.environ, "NVDISASM_PATH": str(Path(nvdisasm).parent)}
    with tempfile.TemporaryDirectory(prefix="tilelang_cuda_") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([cuobjdump, "-sass", str(path)], capture_output=True, text=True, check=False,
                              env=child_env)
    if done.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass failed (exit status {done.returncode}): {done.stderr.strip()}")
    return done.stdout
