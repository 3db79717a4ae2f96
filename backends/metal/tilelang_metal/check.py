"""The codegen-level check of generated MSL without Apple's compiler: clang in C++ mode against
`include/check/metal_stdlib`, a header that declares exactly the MSL types, address spaces,
functions and attributes this backend emits (each with the spec section it follows).

What it catches: a misspelt or undeclared function, a wrong argument count or type, a pointer
of the wrong address space (device / threadgroup / constant are distinct clang address spaces),
an unbalanced or malformed statement, and any `[[attribute]]` outside the header's list. What
it cannot: MSL's own restrictions beyond C++ (e.g. recursion, which the printer never emits)
and anything the Metal compiler decides at pipeline creation (register pressure).

One rewrite precedes clang, because C++ has no threadgroup storage for local variables: a
kernel-scope threadgroup array (`threadgroup T name[N];`) is given `static` storage.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tilelang_core.runtime import CompileError

__all__ = ["CHECK_INCLUDE", "MSLCheckError", "find_clang", "allowed_attributes", "check_msl", "describe"]

CHECK_INCLUDE = Path(__file__).parent / "include" / "check"
_CLANGS = ("clang-19", "clang-20", "clang-18", "clang-17", "clang")
_INSTALL = "scripts/install_hip_toolchain.sh (apt-get install clang-19)"
_ARRAY = re.compile(r"^(\s*)(threadgroup \w+ \w+\[\d+\];)", re.M)
_UNKNOWN = re.compile(r"unknown attribute '([A-Za-z_][A-Za-z0-9_]*)' ignored")


class MSLCheckError(CompileError):
    """clang refused the generated MSL against the declared MSL subset."""


def find_clang() -> str | None:
    """A clang on PATH (19 first), or None."""
    for name in _CLANGS:
        path = shutil.which(name)
        if path:
            return path
    return None


def allowed_attributes() -> frozenset:
    """The attribute names the declaration header lists (`// tl-msl-attribute: NAME`)."""
    text = (CHECK_INCLUDE / "metal_stdlib").read_text()
    return frozenset(re.findall(r"^// tl-msl-attribute: (\w+)", text, re.M))


def _without_allowed_attributes(log: str, allowed: frozenset) -> str:
    """clang's log without its warnings about the MSL attributes the header lists (each
    diagnostic is its first line and the source excerpt under it)."""
    blocks, current = [], []
    for line in log.splitlines():
        if re.match(r"^\S.*:\d+:\d+: (warning|error|note): ", line) or re.match(r"^\d+ (warning|error)", line):
            blocks.append(current)
            current = []
        current.append(line)
    blocks.append(current)
    kept = [b for b in blocks if b and not any(
        f"unknown attribute '{name}' ignored" in b[0] for name in allowed)]
    return "\n".join(line for b in kept for line in b).strip()


def describe() -> str:
    """What `check_msl` runs here, or why it cannot run."""
    clang = find_clang()
    return f"{Path(clang).name} -fsyntax-only against the MSL declarations" if clang else \
        f"no clang for the MSL syntax check: run {_INSTALL}"


def check_msl(source: str, entry: str) -> str:
    """Check `source` (MSL) with clang; return what was run. Raises MSLCheckError with clang's
    log, the file and a command that reproduces it; FileNotFoundError when no clang is here."""
    clang = find_clang()
    if clang is None:
        raise FileNotFoundError(f"no clang on PATH to check the generated MSL; run {_INSTALL}")
    work = Path(tempfile.mkdtemp(prefix="tilelang-metal-check-"))
    path = work / f"{entry}.metal.cpp"
    path.write_text(_ARRAY.sub(r"\1static \2", source))
    cmd = [clang, "-x", "c++", "-std=c++17", "-fsyntax-only", "-ferror-limit=20", "-Wunknown-attributes",
           "-Wno-unused-value", "-isystem", str(CHECK_INCLUDE), str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    allowed = allowed_attributes()
    log = _without_allowed_attributes(proc.stderr, allowed)
    unknown = sorted(set(_UNKNOWN.findall(proc.stderr)) - allowed)
    problems = []
    if proc.returncode != 0:
        problems.append("clang reported errors")
    if unknown:
        problems.append(f"attributes that are not MSL's (or not declared in {CHECK_INCLUDE / 'metal_stdlib'}): "
                        f"{', '.join(unknown)}")
    if problems:
        raise MSLCheckError(f"the generated MSL of {entry} fails the syntax check ({'; '.join(problems)}):\n{log}\n"
                            f"file: {path}\nreproduce: {' '.join(cmd)}")
    shutil.rmtree(work, ignore_errors=True)
    return f"{Path(clang).name} -fsyntax-only against the MSL declarations"
