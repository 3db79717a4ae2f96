"""Device compile for AMD GPUs: HIP source -> code object (HSA ELF) for `hipModuleLoadData`.

Two ways, tried in this order unless `options["compiler"]` names one:
- hiprtc through hip-python, on a machine with ROCm installed (it matches that ROCm exactly);
- a clang that knows the arch, in HIP mode with `--cuda-device-only --no-gpu-bundle-output`:
  ROCm's own (`/opt/rocm/llvm/bin/clang`), Debian's `clang-17`+ (both gfx90a and gfx942), or
  `hipcc` (Debian's is clang 15: gfx90a only). `scripts/install_hip_toolchain.sh` installs the
  Debian set: clang-19, lld-19, llvm-19, libamdhip64-dev (HIP headers), rocm-device-libs.

Debian 12's device libraries (ROCm 5.2) predate gfx942 and lack its one arch-specific file,
`oclc_isa_version_942.bc` (a single constant, the ISA version 9402). clang refuses to compile
without it, so we lay an overlay directory in the cache: links to every library plus that
file, assembled from a sibling's text by the compiler's own `llvm-dis`/`llvm-as`.

Every compile runs in its own temporary directory, so concurrent processes never collide.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from tilelang_core import env
from tilelang_core.runtime import CompileError

from .target import HIP_ARCHS

__all__ = [
    "INCLUDE_DIR",
    "HIPToolchain",
    "HIPToolchainError",
    "compile_hip",
    "cache_key",
    "clang_command",
    "disassemble",
    "find_toolchain",
    "toolchain_version",
]

INCLUDE_DIR = Path(__file__).resolve().parent / "include"

# The first LLVM major version whose AMDGPU backend knows each arch.
_MIN_LLVM = {"gfx90a": 13, "gfx942": 17, "gfx950": 20, "gfx1100": 16, "gfx1101": 16,
             "gfx1200": 18, "gfx1201": 18}
# arch -> (suffix of oclc_isa_version_*.bc, the ISA version it defines)
_ISA_VERSION = {"gfx90a": ("90a", 9010), "gfx942": ("942", 9402), "gfx950": ("950", 9500),
                "gfx1100": ("1100", 11000), "gfx1101": ("1101", 11001), "gfx1200": ("1200", 12000),
                "gfx1201": ("1201", 12001)}

_OPTIONS = {
    "compiler": '"auto" (default), "hiprtc", "clang", or the path of a clang/hipcc executable',
    "flags": "extra compiler flags, a list of strings",
    "fast_math": "compile with -ffast-math (approximate exp/log/division, no NaN/inf checks)",
    "keep_files": "keep the temporary directory with the .hip source even on success",
    "line_map": "generated line -> (python file, line), from KernelSource.line_map",
}
_INSTALL_HINT = "run scripts/install_hip_toolchain.sh (apt-get install clang-19 lld-19 llvm-19 libamdhip64-dev rocm-device-libs)"
_TIMEOUT_S = 600


class HIPToolchainError(CompileError):
    """No compiler here can build the requested arch (not a problem of the kernel's source)."""


@dataclass(frozen=True)
class HIPToolchain:
    """A clang (or hipcc) that compiles HIP device code, with its headers and bitcode libraries.

    `rocm_path` holds `include/hip/hip_runtime.h`; `device_lib_path` holds `ocml.bc` and the
    `oclc_*.bc` controls. Both are None for hipcc, which knows its own.
    """

    compiler: str
    llvm_major: int
    version: str
    rocm_path: str | None = None
    device_lib_path: str | None = None

    @property
    def is_hipcc(self) -> bool:
        return _is_hipcc(self.compiler)

    def supports(self, arch: str) -> bool:
        return self.llvm_major >= _MIN_LLVM[arch]

    def tool(self, name: str) -> str | None:
        """An LLVM tool of the same version as the compiler (llvm-objdump, llvm-as, ...)."""
        real = Path(os.path.realpath(self.compiler))
        sibling = real.parent / name
        if sibling.is_file() and not self.is_hipcc:
            return str(sibling)
        for candidate in (f"{name}-{self.llvm_major}", f"/usr/lib/llvm-{self.llvm_major}/bin/{name}"):
            path = shutil.which(candidate)
            if path:
                return path
        return None


# ---------------------------------------------------------------------------------------------
# Finding a toolchain
# ---------------------------------------------------------------------------------------------


def _rocm_paths() -> list[Path]:
    """Directories that hold the HIP headers: a ROCm install, then Debian's /usr."""
    return [p for p in (Path("/opt/rocm"), Path("/usr")) if (p / "include/hip/hip_runtime.h").is_file()]


def _device_lib_dirs(rocm: Path | None) -> list[Path]:
    found: list[Path] = []
    if rocm is not None and rocm != Path("/usr"):
        found += [rocm / "amdgcn/bitcode", *sorted(rocm.glob("lib/llvm/lib/clang/*/lib/amdgcn/bitcode"))]
    found += sorted(Path("/usr/lib").glob("*/amdgcn/bitcode")) + [Path("/usr/lib/amdgcn/bitcode")]
    return [p for p in found if (p / "ocml.bc").is_file()]


def _is_hipcc(compiler: str) -> bool:
    return Path(compiler).name.startswith("hipcc")


def _launcher(compiler: str) -> list[str]:
    # hipcc picks the NVIDIA platform when it sees nvcc on the PATH: pin it to AMD.
    return ["env", "HIP_PLATFORM=amd", compiler] if _is_hipcc(compiler) else [compiler]


@functools.lru_cache(maxsize=None)
def _probe(compiler: str) -> HIPToolchain | None:
    """Ask a compiler for its version; None when it does not run or is not clang-based."""
    try:
        out = subprocess.run([*_launcher(compiler), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"clang version (\d+)", out.stdout + out.stderr)
    if out.returncode != 0 or match is None:
        return None
    first = next((line for line in out.stdout.splitlines() if "clang version" in line), "")
    if _is_hipcc(compiler):
        return HIPToolchain(compiler, int(match.group(1)), first.strip())
    rocm_candidates = _rocm_paths()
    if "/opt/rocm" in os.path.realpath(compiler):
        rocm_candidates = [p for p in rocm_candidates if p == Path("/opt/rocm")] or rocm_candidates
    rocm = rocm_candidates[0] if rocm_candidates else None
    libs = _device_lib_dirs(rocm)
    return HIPToolchain(compiler, int(match.group(1)), first.strip(),
                        str(rocm) if rocm else None, str(libs[0]) if libs else None)


def _compiler_candidates() -> list[str]:
    names = ["/opt/rocm/llvm/bin/clang"]
    names += [f"clang-{major}" for major in range(30, 16, -1)] + ["clang", "hipcc"]
    found = []
    for name in names:
        path = shutil.which(name)
        if path and path not in found:
            found.append(path)
    return found


def find_toolchain(arch: str, compiler: str | None = None) -> HIPToolchain | None:
    """The first compiler here that builds `arch` with headers and device libraries present.

    :param arch: "gfx90a" or "gfx942".
    :param compiler: a path or name to use instead of searching.
    :returns: the toolchain, or None when none is complete.
    """
    _check_arch(arch)
    candidates = [shutil.which(compiler) or compiler] if compiler else _compiler_candidates()
    for path in candidates:
        tc = _probe(path)
        if tc is None or not tc.supports(arch):
            continue
        if tc.is_hipcc or (tc.rocm_path and tc.device_lib_path):
            return tc
    return None


def _describe(tc: HIPToolchain) -> str:
    if tc.is_hipcc:
        return f"hipcc (clang {tc.llvm_major})"
    return (f"{Path(tc.compiler).name} (clang {tc.llvm_major}, HIP headers: {tc.rocm_path or 'missing'}, "
            f"device libs: {tc.device_lib_path or 'missing'})")


def _toolchain_or_raise(arch: str, compiler: str | None) -> HIPToolchain:
    tc = find_toolchain(arch, compiler)
    if tc is not None:
        return tc
    seen = [_describe(t) for p in ([compiler] if compiler else _compiler_candidates()) if (t := _probe(p))]
    raise HIPToolchainError(
        f"no HIP compiler here builds {arch} (it needs clang >= {_MIN_LLVM[arch]} with the HIP "
        f"headers and the ROCm device libraries); found: {', '.join(seen) or 'none'}. "
        f"Fix: {_INSTALL_HINT}"
    )


# ---------------------------------------------------------------------------------------------
# hiprtc (hip-python), when ROCm is installed
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _hiprtc() -> tuple[Any, str] | None:
    """(hip-python's hiprtc module, its version) when it imports and libhiprtc loads, else None."""
    try:
        from hip import hiprtc

        err, major, minor = hiprtc.hiprtcVersion()
    except Exception:  # noqa: BLE001 - missing package, missing libhiprtc.so, ABI mismatch
        return None
    return (hiprtc, f"{major}.{minor}") if int(err) == 0 else None


def _program_log(hiprtc: Any, prog: Any) -> str:
    _, size = hiprtc.hiprtcGetProgramLogSize(prog)
    log = bytearray(int(size))
    if size:
        hiprtc.hiprtcGetProgramLog(prog, log)
    return log.rstrip(b"\0").decode(errors="replace")


def _compile_hiprtc(hiprtc: Any, source: str, arch: str, flags: list[str]) -> tuple[bytes | None, str]:
    """(code object, log); the code object is None when hiprtc rejected the source."""
    opts = [f"--offload-arch={arch}", "-O3", "-std=c++17", f"-I{INCLUDE_DIR}", *flags]
    err, prog = hiprtc.hiprtcCreateProgram(source.encode(), b"kernel.hip", 0, [], [])
    if int(err) != 0:
        return None, f"hiprtcCreateProgram failed: {err}"
    try:
        (err,) = hiprtc.hiprtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        log = _program_log(hiprtc, prog)
        if int(err) != 0:
            return None, log or str(err)
        _, size = hiprtc.hiprtcGetCodeSize(prog)
        code = bytearray(int(size))
        hiprtc.hiprtcGetCode(prog, code)
        return bytes(code), log
    finally:
        hiprtc.hiprtcDestroyProgram(prog)


# ---------------------------------------------------------------------------------------------
# Device libraries: an overlay for archs the installed ones predate
# ---------------------------------------------------------------------------------------------


def _device_libs_for(tc: HIPToolchain, arch: str) -> str:
    """A directory of device libraries that has `oclc_isa_version_<arch>.bc`."""
    assert tc.device_lib_path is not None
    suffix, version = _ISA_VERSION[arch]
    source_dir = Path(tc.device_lib_path)
    if (source_dir / f"oclc_isa_version_{suffix}.bc").is_file():
        return str(source_dir)
    digest = hashlib.sha256(f"{source_dir}|{tc.compiler}|{arch}".encode()).hexdigest()[:12]
    overlay = env.cache_dir() / "hip" / f"device-libs-{arch}-{digest}"
    if (overlay / f"oclc_isa_version_{suffix}.bc").is_file():
        return str(overlay)
    overlay.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=overlay.name + ".", dir=overlay.parent))
    try:
        for lib in source_dir.glob("*.bc"):
            (staging / lib.name).symlink_to(lib)
        _write_isa_version(tc, source_dir, staging / f"oclc_isa_version_{suffix}.bc", version)
        try:
            staging.rename(overlay)
        except OSError:  # another process laid it first: theirs is as good as ours
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(overlay)


def _write_isa_version(tc: HIPToolchain, source_dir: Path, out: Path, version: int) -> None:
    dis, asm = tc.tool("llvm-dis"), tc.tool("llvm-as")
    templates = sorted(source_dir.glob("oclc_isa_version_9*.bc"))
    if not (dis and asm and templates):
        raise HIPToolchainError(
            f"the device libraries in {source_dir} lack {out.name}, and making it needs "
            f"llvm-dis/llvm-as {tc.llvm_major} and a sibling oclc_isa_version_9*.bc. Fix: {_INSTALL_HINT}"
        )
    try:
        text = subprocess.run([dis, str(templates[-1]), "-o", "-"], capture_output=True, text=True,
                              check=True).stdout
        text, count = re.subn(r"(@__oclc_ISA_version = .*constant i32 )\d+", rf"\g<1>{version}", text)
        if count != 1:
            raise ValueError(f"{templates[-1]} defines no __oclc_ISA_version")
        subprocess.run([asm, "-", "-o", str(out)], input=text, text=True, check=True, capture_output=True)
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        raise HIPToolchainError(f"could not make {out.name} from {templates[-1].name}: {detail}") from exc


# ---------------------------------------------------------------------------------------------
# Compiling
# ---------------------------------------------------------------------------------------------


def _check_arch(arch: str) -> None:
    if arch not in HIP_ARCHS:
        raise ValueError(f"unknown HIP arch {arch!r}; valid: {', '.join(HIP_ARCHS)}")


def _check_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(_OPTIONS))
    if unknown:
        valid = "; ".join(f"{k}: {v}" for k, v in _OPTIONS.items())
        raise ValueError(f"unknown HIP compile option(s) {unknown}; valid options are {valid}")
    flags = opts.get("flags") or []
    if isinstance(flags, str) or not all(isinstance(f, str) for f in flags):
        raise ValueError(f"HIP compile option 'flags' must be a list of strings, got {flags!r}")
    opts["flags"] = list(flags) + (["-ffast-math"] if opts.get("fast_math") else [])
    return opts


def clang_command(tc: HIPToolchain, arch: str, source: Path, output: Path, flags: list[str]) -> list[str]:
    """The command line that compiles `source` into a code object at `output`."""
    cmd = [*_launcher(tc.compiler), "-x", "hip", f"--offload-arch={arch}", "--cuda-device-only",
           "--no-gpu-bundle-output", "-O3", "-std=c++17"]
    if not tc.is_hipcc:
        cmd += [f"--rocm-path={tc.rocm_path}", f"--rocm-device-lib-path={_device_libs_for(tc, arch)}"]
    return cmd + ["-I", str(INCLUDE_DIR), *flags, "-c", str(source), "-o", str(output)]


def compile_hip(source: str, arch: str, options: Mapping[str, Any] | None = None) -> bytes:
    """Compile HIP device source into a code object for `hipModuleLoadData`.

    :param source: the whole translation unit; it may include `tl_hip_common.h` and
        `tl_hip_mfma.h` (the include directory is on the path).
    :param arch: "gfx90a" or "gfx942".
    :param options: see `_OPTIONS`; an unknown key is a ValueError.
    :returns: the code object (an ELF for the AMDGPU HSA ABI).
    :raises CompileError: with the toolchain's log, the kept .hip file, the offending generated
        lines and a command that reproduces the failure.
    :raises HIPToolchainError: when no compiler here builds `arch` (a CompileError too).
    """
    _check_arch(arch)
    opts = _check_options(options)
    choice = opts.get("compiler") or "auto"
    found = _hiprtc() if choice in ("auto", "hiprtc") else None
    if choice == "hiprtc" and found is None:
        raise HIPToolchainError("compiler='hiprtc' asked for, but hip-python's hiprtc does not load "
                                "here (it needs ROCm's libhiprtc.so): pip install 'tilelang-hip[runtime]'")
    workdir = Path(tempfile.mkdtemp(prefix=f"tilelang-hip-{arch}-"))
    src_path = workdir / "kernel.hip"
    src_path.write_text(source)
    keep = bool(opts.get("keep_files")) or env.debug()
    if found is not None:
        hiprtc, version = found
        code, log = _compile_hiprtc(hiprtc, source, arch, opts["flags"])
        repro = [sys.executable, "-m", "tilelang_hip.compile", str(src_path), "--arch", arch,
                 "--compiler", "hiprtc", *(f"--flag={f}" for f in opts["flags"])]
        toolchain = f"hiprtc {version}"
    else:
        tc = _toolchain_or_raise(arch, None if choice in ("auto", "clang") else choice)
        out_path = workdir / "kernel.hsaco"
        repro = clang_command(tc, arch, src_path, out_path, opts["flags"])
        code, log = _run_compiler(repro, out_path)
        toolchain = Path(tc.compiler).name
    if code is None:
        raise _compile_error(toolchain, arch, log, source, src_path, repro, opts.get("line_map") or {})
    if not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return code


def _run_compiler(cmd: list[str], out_path: Path) -> tuple[bytes | None, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"the compiler ran past {_TIMEOUT_S} s"
    log = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0 or not out_path.is_file():
        return None, log or f"exit status {proc.returncode}"
    return out_path.read_bytes(), log


def _compile_error(toolchain: str, arch: str, log: str, source: str, src_path: Path,
                   repro: list[str], line_map: Mapping[int, Any]) -> CompileError:
    lines = source.splitlines()
    numbers = sorted({int(n) for n in re.findall(rf"{re.escape(src_path.name)}:(\d+):\d+: (?:fatal )?error", log)})
    shown = []
    for n in numbers[:5]:
        text = lines[n - 1] if 0 < n <= len(lines) else ""
        origin = line_map.get(n) or line_map.get(str(n))
        where = f"   (from {origin[0]}:{origin[1]})" if origin else ""
        shown.append(f"  {src_path.name}:{n}: {text.strip()}{where}")
    message = (
        f"HIP compile for {arch} failed ({toolchain}):\n{log}\n\n"
        + ("offending generated line(s):\n" + "\n".join(shown) + "\n\n" if shown else "")
        + f"generated source kept at {src_path}\nreproduce: {shlex.join(repro)}"
    )
    error = CompileError(message)
    error.log, error.source_path, error.command, error.lines = log, str(src_path), repro, numbers
    return error


# ---------------------------------------------------------------------------------------------
# Versions, cache keys, disassembly
# ---------------------------------------------------------------------------------------------


def _headers_digest() -> str:
    digest = hashlib.sha256()
    for header in sorted(INCLUDE_DIR.glob("*.h")):
        digest.update(header.name.encode() + b"\0" + header.read_bytes())
    return digest.hexdigest()[:16]


def _hip_version(rocm_path: str | None) -> str:
    if not rocm_path:
        return "?"
    try:
        text = (Path(rocm_path) / "include/hip/hip_version.h").read_text()
    except OSError:
        return "?"
    parts = [re.search(rf"#define HIP_VERSION_{k} (\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) if m else "?" for m in parts)


def toolchain_version(arch: str | None = None) -> str:
    """What compiles `arch` here (every arch when None), for cache keys and bug reports.

    Names hiprtc's version, or the compiler's `--version` line, the HIP headers' version and
    the device-library directory; "none" when nothing here compiles the arch.
    """
    archs = [arch] if arch else list(HIP_ARCHS)
    found = _hiprtc()
    parts = []
    for name in archs:
        if found is not None:
            parts.append(f"{name}: hiprtc {found[1]}")
            continue
        tc = find_toolchain(name)
        if tc is None:
            parts.append(f"{name}: none")
        else:
            parts.append(f"{name}: {tc.version} [{tc.compiler}]; hip {_hip_version(tc.rocm_path)}; "
                         f"device libs {tc.device_lib_path}")
    return " | ".join(parts)


def cache_key(arch: str, options: Mapping[str, Any] | None = None) -> str:
    """Everything besides the source that decides the code object: toolchain, headers, flags."""
    opts = _check_options(options)
    flags = " ".join(opts["flags"])
    return (f"{toolchain_version(arch)}; headers {_headers_digest()}; compiler="
            f"{opts.get('compiler') or 'auto'}; flags={flags}")


def _objdump(arch: str) -> str | None:
    tc = find_toolchain(arch)
    if tc is not None:
        tool = tc.tool("llvm-objdump")
        if tool:
            return tool
    for major in range(30, _MIN_LLVM[arch] - 1, -1):
        path = shutil.which(f"llvm-objdump-{major}")
        if path:
            return path
    return None


def disassemble(code_object: bytes, arch: str) -> str:
    """The code object's machine code as text (`llvm-objdump -d --mcpu=<arch>`)."""
    _check_arch(arch)
    objdump = _objdump(arch)
    if objdump is None:
        raise HIPToolchainError(f"no llvm-objdump here knows {arch} (needs LLVM >= {_MIN_LLVM[arch]}). "
                                f"Fix: {_INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="tilelang-hip-dis-") as tmp:
        path = Path(tmp) / "kernel.hsaco"
        path.write_bytes(code_object)
        proc = subprocess.run([objdump, "-d", f"--mcpu={arch}", str(path)], capture_output=True,
                              text=True, timeout=_TIMEOUT_S)
    if proc.returncode != 0:
        raise CompileError(f"{objdump} could not disassemble the code object: {proc.stderr.strip()}")
    return proc.stdout


def _main(argv: list[str] | None = None) -> int:
    """`python -m tilelang_hip.compile FILE --arch gfx942`: reproduce a compile outside Python."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tilelang_hip.compile", description=_main.__doc__)
    parser.add_argument("source")
    parser.add_argument("--arch", required=True, choices=sorted(HIP_ARCHS))
    parser.add_argument("--compiler", default="auto")
    parser.add_argument("--flag", action="append", default=[], help="an extra compiler flag")
    parser.add_argument("-o", "--output", help="where to write the code object")
    parser.add_argument("--disassemble", action="store_true", help="print the machine code")
    args = parser.parse_args(argv)
    try:
        code = compile_hip(Path(args.source).read_text(), args.arch,
                           {"compiler": args.compiler, "flags": args.flag})
    except CompileError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_bytes(code)
    if args.disassemble:
        print(disassemble(code, args.arch))
    print(f"{args.source}: {len(code)} bytes of {args.arch} code object", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
