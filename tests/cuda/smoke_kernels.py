"""Build the hand-written smoke kernels (kernels/smoke.cu) into a directory a GPU machine can
run with only torch + cuda-python: a cubin per toolchain and one KernelMeta JSON per entry.

    python tests/cuda/smoke_kernels.py tests/cuda/data/smoke_sm_90a --arch sm_90a

writes smoke.cubin (NVRTC), smoke_nvcc.cubin (nvcc, when there is one), smoke.cu and
tl_smoke_axpby.json, tl_smoke_gemm.json, tl_smoke_fault.json. gpu_smoke.py runs them.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__test__ = False

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SMOKE_SOURCE = HERE / "kernels" / "smoke.cu"

for path in (REPO, REPO / "backends" / "cuda"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from tilelang_core.runtime import KernelMeta, ParamSpec  # noqa: E402

# Dynamic shared memory of the GEMM: it needs 1 KB, asks for 64 KB so that the runtime's
# opt-in above 48 KB (cuFuncSetAttribute) is exercised.
GEMM_SHARED_MEMORY = 64 * 1024


def smoke_metas(arch: str, binary_name: str = "smoke.cubin") -> dict[str, KernelMeta]:
    """The launch metadata of each kernel in smoke.cu, as the compiler would write it."""
    target = f"cuda/{arch}"
    tensor = "tensor"
    return {
        "tl_smoke_axpby": KernelMeta(
            target=target,
            entry="tl_smoke_axpby",
            params=(
                ParamSpec("a", tensor, "float32", ("n",)),
                ParamSpec("b", tensor, "float32", ("n",)),
                ParamSpec("out", tensor, "float32", ("n",)),
                ParamSpec("alpha", "scalar", "float32"),
                ParamSpec("beta", "scalar", "float64"),
                ParamSpec("offset", "scalar", "int64"),
                ParamSpec("n", "scalar", "int32"),
            ),
            grid=("ceildiv(n, 256)", 1, 1),
            block=(256, 1, 1),
            symbols={"n": (0, 0)},
            out_idx=(2,),
            binary_name=binary_name,
        ),
        "tl_smoke_gemm": KernelMeta(
            target=target,
            entry="tl_smoke_gemm",
            params=(
                ParamSpec("A", tensor, "float16", ("M", "K")),
                ParamSpec("B", tensor, "float16", ("K", "N")),
                ParamSpec("C", tensor, "float32", ("M", "N")),
                ParamSpec("M", "scalar", "int32"),
                ParamSpec("N", "scalar", "int32"),
                ParamSpec("K", "scalar", "int32"),
            ),
            grid=("ceildiv(N, 16)", "ceildiv(M, 16)", 1),
            block=(32, 1, 1),
            shared_memory=GEMM_SHARED_MEMORY,
            symbols={"M": (0, 0), "N": (1, 1), "K": (0, 1)},
            out_idx=(2,),
            binary_name=binary_name,
        ),
        "tl_smoke_fault": KernelMeta(
            target=target,
            entry="tl_smoke_fault",
            params=(
                ParamSpec("out", tensor, "float32", (32,)),
                ParamSpec("bad_address", "scalar", "int64"),
                ParamSpec("assert_value", "scalar", "int32"),
            ),
            grid=(1, 1, 1),
            block=(32, 1, 1),
            binary_name=binary_name,
        ),
    }


def build(out_dir: Path, arch: str = "sm_90a", with_nvcc: bool = True) -> list[Path]:
    """Compile smoke.cu for `arch` into `out_dir`; return the files written."""
    from tilelang_cuda.compile import _find_tool, compile_cuda

    out_dir.mkdir(parents=True, exist_ok=True)
    source = SMOKE_SOURCE.read_text()
    written = []
    cubin = out_dir / "smoke.cubin"
    cubin.write_bytes(compile_cuda(source, arch, {"name": "smoke"}))
    written.append(cubin)
    if with_nvcc and _find_tool("nvcc"):
        nvcc_cubin = out_dir / "smoke_nvcc.cubin"
        nvcc_cubin.write_bytes(compile_cuda(source, arch, {"name": "smoke", "compiler": "nvcc"}))
        written.append(nvcc_cubin)
    copy = out_dir / "smoke.cu"
    copy.write_text(source)
    written.append(copy)
    for entry, meta in smoke_metas(arch).items():
        path = out_dir / f"{entry}.json"
        path.write_text(meta.to_json() + "\n")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--no-nvcc", action="store_true", help="skip the nvcc-built cubin")
    args = parser.parse_args(argv)
    for path in build(args.out_dir, args.arch, with_nvcc=not args.no_nvcc):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
