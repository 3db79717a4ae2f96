"""Run inside a fresh venv with the wheels installed: compile one GEMM for each target named on
the command line and print one line per target saying what came out. Exit status 1 when a
target that must compile here did not.

usage: python first_contact.py OUTDIR TARGET[=LEVEL] ...
LEVEL: "binary" (the toolchain must build it), "source-only" (a kernel that holds its source
and exports), or "any" (a binary where the toolchain is here, else the generated source).
"""
from __future__ import annotations

import sys
from pathlib import Path

import tilelang_core
from tilelang_core import language as T


def gemm(M=256, N=256, K=128, bM=64, bN=64, bK=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def one(target: str, level: str, out: Path) -> bool:
    func = gemm()
    try:
        kernel = tilelang_core.compile(func, target=target)
    except Exception as exc:  # noqa: BLE001 - reported, and judged by the level asked for
        if level != "any":
            print(f"{target}: FAILED to compile: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            return False
        source = tilelang_core.lower(func, target=target).kernel_source
        print(f"{target}: source only ({len(str(source))} chars; no toolchain here: {str(exc).splitlines()[0][:120]})")
        return True
    path = out / target.replace("/", "_")
    kernel.export(path)
    files = sorted(p.name for p in path.iterdir())
    source_only = any(p.read_bytes().startswith(b"// tilelang-musa source-only") for p in path.iterdir() if p.is_file())
    if level == "source-only" and not source_only:
        print(f"{target}: expected a source-only kernel, exported {files}")
        return False
    if level == "binary" and source_only:
        print(f"{target}: expected a device binary, got a source-only kernel")
        return False
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    kind = "source-only kernel" if source_only else "kernel"
    print(f"{target}: {kind} exported to {path.name}/ ({size} bytes: {', '.join(files)})")
    return True


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    results = [one(*(spec.split("=", 1) if "=" in spec else (spec, "any")), out) for spec in argv[1:]]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
