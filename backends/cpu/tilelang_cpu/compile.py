"""The host C compiler that turns generated C into a shared library.

`compile_source(source, arch)` writes the C file into a fresh temporary directory (so any
number of processes compile at once), runs

    cc -O3 -march=<arch> [-fopenmp] -shared -fPIC -std=gnu11 -ffp-contract=fast
       -fvisibility=hidden -I<include> kernel.c -o kernel.so -lm

and returns the library's bytes. No -ffast-math: NaN and infinity keep their meaning. On
failure it raises `CompileError` with the compiler's log, the kept .c file and the command.

What enters the kernel cache key (`cache_key`) is computed once per process; the two facts
that need the compiler to run (`cc --version`, whether `-fopenmp` links) are kept on disk
beside the kernel cache, keyed by the compiler binary's path, size and modification time, so
a process that finds its kernels in the cache starts no subprocess.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from tilelang_core import env
from tilelang_core.runtime import CompileError

from . import target as _target

__all__ = [
    "INCLUDE_DIR",
    "find_compiler",
    "compiler_version",
    "openmp_supported",
    "march_flags",
    "compile_flags",
    "compile_command",
    "compile_source",
    "cache_key",
]

INCLUDE_DIR = Path(__file__).parent / "include"

# declared arch -> -march for a machine that is not this one
_MARCH = {
    "x86-64": ["-march=x86-64"],
    "x86-64-avx2": ["-march=x86-64-v3"],
    "x86-64-avx512": ["-march=x86-64-v4", "-mprefer-vector-width=512"],
    "aarch64": ["-march=armv8-a"],
    "generic": [],
}

BASE_FLAGS = ["-O3", "-shared", "-fPIC", "-std=gnu11", "-ffp-contract=fast", "-fvisibility=hidden"]


def find_compiler() -> str | None:
    explicit = env.host_c_compiler()
    if explicit:
        return shutil.which(explicit) or None
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _probe_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def _probe_openmp(cc: str) -> bool:
    tmp = tempfile.mkdtemp(prefix="tilelang-cpu-omp-")
    try:
        src = Path(tmp) / "omp.c"
        src.write_text("#include <omp.h>\nint f(void) { return omp_get_max_threads(); }\n")
        cmd = [cc, "-fopenmp", "-shared", "-fPIC", str(src), "-o", str(Path(tmp) / "omp.so")]
        return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@functools.lru_cache(maxsize=None)
def _toolchain(cc: str) -> dict:
    """{"version", "openmp"} of compiler `cc`: probed once per compiler binary (two
    subprocesses, ~50 ms) and remembered under the cache directory."""
    try:
        real = os.path.realpath(cc)
        st = os.stat(real)
        identity = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return {"version": _probe_version(cc), "openmp": _probe_openmp(cc)}
    path = env.cache_dir() / "toolchains" / (hashlib.sha256(identity.encode()).hexdigest()[:24] + ".json")
    try:
        known = json.loads(path.read_text())
        if known.get("identity") == identity:
            return known
    except (OSError, ValueError):
        pass
    known = {"identity": identity, "version": _probe_version(cc), "openmp": _probe_openmp(cc)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump(known, f)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache directory: probe again next time
    return known


def compiler_version(cc: str) -> str:
    """The first line of `cc --version` (part of the cache key)."""
    return _toolchain(cc)["version"]


def openmp_supported(cc: str) -> bool:
    """Whether `cc -fopenmp` links (clang without libomp does not: blocks then run serially)."""
    return bool(_toolchain(cc)["openmp"])


def march_flags(arch: str | None) -> list[str]:
    """-march for a target arch: native for this host's arch, a portable level otherwise."""
    if arch is None:
        arch = _target.host_arch()
    if arch == _target.host_arch():
        flags = ["-march=native"]
        if arch == "x86-64-avx512":
            flags.append("-mprefer-vector-width=512")
        return flags
    if arch not in _MARCH:
        raise CompileError(f"unknown CPU arch {arch!r}; declared archs: {', '.join(_MARCH)}")
    return list(_MARCH[arch])


def compile_flags(cc: str, arch: str | None) -> list[str]:
    flags = BASE_FLAGS[:1] + march_flags(arch) + BASE_FLAGS[1:]
    if openmp_supported(cc):
        flags.append("-fopenmp")
    return flags + [f"-I{INCLUDE_DIR}"]


def compile_command(cc: str, arch: str | None, c_path: str, so_path: str, flags: tuple = ()) -> list[str]:
    """The compiler's command line; `flags` (the caller's `compile_flags`) go after ours."""
    return [cc, *compile_flags(cc, arch), *flags, c_path, "-o", so_path, "-lm"]


def _require_compiler() -> str:
    cc = find_compiler()
    if cc is None:
        named = env.host_c_compiler()
        if named:  # the advice depends on what is wrong: a name that resolves to nothing
            raise CompileError(f"the C compiler named by TILELANG_CC (or CC), {named!r}, was not found: it is "
                               "neither an executable path nor a program on PATH; set TILELANG_CC to the "
                               "compiler's full path (e.g. /usr/bin/gcc), or unset it to search PATH for cc, "
                               "gcc and clang")
        raise CompileError("no C compiler found for the CPU backend (searched PATH for cc, gcc and clang): "
                           "install gcc or clang, or set TILELANG_CC to the compiler's path")
    return cc


def _check_cross(arch: str | None) -> None:
    """A clear error, before the compiler's own, for an arch of another instruction-set family
    than this host's when no compiler was named (the host's cc cannot build it)."""
    if arch is None or env.host_c_compiler():
        return
    host = _target.host_arch()
    family, host_family = _target.arch_family(arch), _target.arch_family(host)
    if "generic" not in (family, arch) and family != host_family:
        raise CompileError(
            f"target cpu/{arch} needs a compiler for {family}, and this host is {host} "
            f"(its C compiler builds {host_family} only). Use target='cpu' (this host), "
            f"set TILELANG_CC to a cross compiler for {family} (e.g. {family}-linux-gnu-gcc), or "
            f"generate the source only with tilelang_core.lower(func, target='cpu/{arch}')")


def compile_source(source: str, arch: str | None = None, name: str = "kernel", flags: tuple = ()) -> bytes:
    """Compile generated C into a shared library (`flags` appended to the command); returns its
    bytes. The temporary folder is removed on every way out (an interrupt, Ctrl-C, included),
    except when the compiler rejects the code: then the .c file the error names is kept for the repro command (and
    everything, with TILELANG_DEBUG=1)."""
    _check_cross(arch)
    cc = _require_compiler()
    workdir = Path(tempfile.mkdtemp(prefix=f"tilelang-cpu-{name}-"))
    keep = env.debug()
    try:
        c_path, so_path = workdir / f"{name}.c", workdir / f"{name}.so"
        c_path.write_text(source)
        cmd = compile_command(cc, arch, str(c_path), str(so_path), tuple(flags))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as err:
            keep = True
            raise CompileError(f"could not run the C compiler {cc}: {err}\n"
                               f"  generated file: {c_path}\n  command: {shlex.join(cmd)}") from None
        if proc.returncode != 0:
            keep = True
            log = (proc.stderr + proc.stdout).strip()
            raise CompileError(
                f"the C compiler rejected the generated kernel {name!r} (exit code {proc.returncode}).\n"
                f"--- compiler log ---\n{log}\n--- end of log ---\n"
                f"  generated file (kept): {c_path}\n"
                f"  reproduce with: {shlex.join(cmd)}"
            )
        return so_path.read_bytes()
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def cache_key(arch: str | None) -> str:
    """Compiler path and version, the flags, for -march=native the host's CPU flags, and the
    backend's own code (its lowerings, printer and headers decide the generated code)."""
    cc = find_compiler()
    if cc is None:
        return "cc=none"
    return _cache_key(cc, arch)


@functools.lru_cache(maxsize=None)
def _cache_key(cc: str, arch: str | None) -> str:
    flags = compile_flags(cc, arch)
    parts = [f"cc={cc}", f"version={compiler_version(cc)}", "flags=" + " ".join(flags)]
    if "-march=native" in flags:
        features = " ".join(sorted(_target.host_features()))
        parts.append("host=" + hashlib.sha256(features.encode()).hexdigest()[:16])
    code = hashlib.sha256()
    package = Path(__file__).parent
    for path in sorted(INCLUDE_DIR.glob("*.h")) + sorted(package.glob("*.py")):
        code.update(path.name.encode() + b"\0" + path.read_bytes())
    parts.append("backend=" + code.hexdigest()[:16])
    return ";".join(parts)
