"""Run prebuilt smoke kernels on a real GPU through CUDARuntime: torch + cuda-python only.

    python tests/cuda/gpu_smoke.py tests/cuda/data/smoke_sm_90a
    python tests/cuda/gpu_smoke.py CUBIN META.json [META.json ...]

A directory runs every *.cubin in it against every *.json in it. Checks, per cubin:
axpby (every scalar kind, a masked tail, the caller's torch stream), the mma.sync GEMM
(cp.async + ldmatrix + m16n8k16, dynamic shared memory above 48 KB) against torch.matmul,
events and flush_l2, the per-launch host overhead next to torch.add, and (each in a child
process, since it poisons the context) that an illegal address and a failed device assert
are reported by synchronize(). Exit status 0: all passed; 1: a check failed; 2: no GPU.
TVM is blocked from importing, to prove the runtime does without it.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

__test__ = False

sys.modules["tvm"] = None  # the runtime half must not need the compiler
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
for _path in (REPO, REPO / "backends" / "cuda"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from tilelang_core.runtime import KernelMeta, eval_launch_expr  # noqa: E402
from tilelang_cuda.runtime import CUDADriverError, CUDARuntime, device_available  # noqa: E402

FAILURES: list[str] = []


def check(condition: bool, what: str) -> None:
    print(f"  {'ok  ' if condition else 'FAIL'} {what}", flush=True)
    if not condition:
        FAILURES.append(what)


def launch_dims(meta: KernelMeta, tensors: list) -> tuple[tuple[int, ...], tuple[int, ...]]:
    values = {name: int(tensors[index].shape[dim]) for name, (index, dim) in meta.symbols.items()}
    grid = tuple(eval_launch_expr(g, values) for g in meta.grid)
    block = tuple(eval_launch_expr(b, values) for b in meta.block)
    return grid, block


def run_axpby(runtime: CUDARuntime, kernel, torch) -> None:
    meta = kernel.meta
    for n in (1, 1000, 1 << 20, 1_000_003):
        a = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        out = runtime.allocate(a, (n,), "float32")
        alpha, beta, offset = 2.5, -0.75, 3
        grid, block = launch_dims(meta, [a, b, out])
        kernel.launch([a, b, out, alpha, beta, offset, n], grid, block, meta.shared_memory)
        torch.cuda.synchronize()
        expected = alpha * a + (beta * b.double() + offset).float()
        check(torch.allclose(out, expected, rtol=1e-5, atol=1e-5), f"axpby n={n} grid={grid}")
    # on a side stream: the launch must follow torch's current stream
    side = torch.cuda.Stream()
    n = 1 << 22
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        out = torch.empty_like(a)
        stream = runtime.current_stream(0)
        check(stream == side.cuda_stream, f"current_stream() is torch's side stream ({stream:#x})")
        grid, block = launch_dims(meta, [a, b, out])
        kernel.launch([a.data_ptr(), b.data_ptr(), out.data_ptr(), 1.0, 1.0, 0, n], grid, block, 0)
    side.synchronize()
    check(torch.allclose(out, a + b), "axpby on a side stream (pointers given as ints)")


def run_gemm(runtime: CUDARuntime, kernel, torch) -> None:
    meta = kernel.meta
    for m, n, k in ((16, 16, 16), (128, 256, 64), (77, 40, 24), (512, 512, 512)):
        A = torch.randn(m, k, device="cuda", dtype=torch.float16)
        B = torch.randn(k, n, device="cuda", dtype=torch.float16)
        C = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
        grid, block = launch_dims(meta, [A, B, C])
        kernel.launch([A, B, C, m, n, k], grid, block, meta.shared_memory)
        torch.cuda.synchronize()
        expected = A.float() @ B.float()
        error = (C - expected).abs().max().item()
        check(error < 1e-2 * max(1.0, k / 64), f"mma.sync GEMM {m}x{n}x{k}: max error {error:.2e}")


def run_core_kernel(runtime: CUDARuntime, cubin: bytes, metas: dict, torch) -> None:
    """The same kernels through tilelang_core's Kernel: argument checks, symbol binding,
    output allocation (out_idx), stream selection, the profiler."""
    try:
        from tilelang_core.runtime.kernel import Kernel
    except ImportError as exc:  # an older core without it
        print(f"  skip tilelang_core Kernel path ({exc})")
        return
    axpby = Kernel(metas["tl_smoke_axpby"], cubin, runtime)
    a = torch.randn(5000, device="cuda")
    b = torch.randn(5000, device="cuda")
    out = axpby(a, b, 2.0, 0.5, 1)
    torch.cuda.synchronize()
    check(torch.allclose(out, 2.0 * a + 0.5 * b + 1, atol=1e-5), "tilelang_core Kernel: axpby(a, b, 2.0, 0.5, 1)")
    gemm = Kernel(metas["tl_smoke_gemm"], cubin, runtime)
    A = torch.randn(256, 128, device="cuda", dtype=torch.float16)
    B = torch.randn(128, 64, device="cuda", dtype=torch.float16)
    C = gemm(A, B)
    torch.cuda.synchronize()
    check(torch.allclose(C, A.float() @ B.float(), atol=1e-2, rtol=1e-3), "tilelang_core Kernel: gemm(A, B) -> C")
    try:
        from tilelang_core.runtime.profiler import Profiler
    except ImportError:
        return
    try:
        ms = Profiler(gemm).do_bench(input_tensors=[A, B])
        check(ms > 0, f"tilelang_core Profiler.do_bench: {ms:.4f} ms")
    except Exception as exc:  # noqa: BLE001 - report, do not stop the smoke run
        check(False, f"tilelang_core Profiler.do_bench raised {type(exc).__name__}: {exc}")


def run_timing(runtime: CUDARuntime, axpby, gemm, torch) -> None:
    M = N = K = 1024
    A = torch.randn(M, K, device="cuda", dtype=torch.float16)
    B = torch.randn(K, N, device="cuda", dtype=torch.float16)
    C = torch.empty(M, N, device="cuda", dtype=torch.float32)
    grid, block = launch_dims(gemm.meta, [A, B, C])
    args = [A, B, C, M, N, K]
    timer = runtime.make_timer()
    runtime.flush_l2()
    timer.start()
    for _ in range(20):
        gemm.launch(args, grid, block, gemm.meta.shared_memory)
    timer.stop()
    ms = timer.elapsed_ms() / 20
    check(ms > 0, f"CUDA events: GEMM 1024^3 takes {ms:.3f} ms ({2 * M * N * K / ms / 1e9:.1f} TFLOP/s, naive kernel)")
    runtime.synchronize()

    # host-side cost of one launch, next to torch.add(out=) on the same tensors
    n = 4096
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    out = torch.empty_like(a)
    grid, block = launch_dims(axpby.meta, [a, b, out])
    pointers = [a.data_ptr(), b.data_ptr(), out.data_ptr(), 1.0, 1.0, 0, n]
    stream = runtime.current_stream(0)
    results = {}
    for label, call in (
        ("CUDAKernel.launch (ints, stream given)", lambda: axpby.launch(pointers, grid, block, 0, stream)),
        ("CUDAKernel.launch (tensors, stream None)", lambda: axpby.launch([a, b, out, 1.0, 1.0, 0, n], grid, block, 0)),
        ("torch.add(out=)", lambda: torch.add(a, b, out=out)),
    ):
        for _ in range(200):
            call()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(2000):
                call()
            best = min(best, (time.perf_counter() - start) / 2000 * 1e6)
            torch.cuda.synchronize()
        results[label] = best
        print(f"  host time per call, {label}: {best:.2f} us")
    check(results["CUDAKernel.launch (ints, stream given)"] < 3 * results["torch.add(out=)"] + 5,
          "launch overhead is in torch's range")


def run_fault(cubin: Path, metas: list[Path], mode: str) -> int:
    """In a child process: launch tl_smoke_fault so that it fails, expect synchronize to say so."""
    import torch

    meta = next(m for m in map(lambda p: KernelMeta.from_json(p.read_text()), metas) if m.entry == "tl_smoke_fault")
    runtime = CUDARuntime()
    torch.cuda.init()
    kernel = runtime.load(cubin.read_bytes(), meta, device=0)
    out = torch.zeros(32, device="cuda")
    bad, assert_value = (0x10, 0) if mode == "illegal" else (0, 1)
    kernel.launch([out, bad, assert_value], (1, 1, 1), (32, 1, 1), 0)
    try:
        runtime.synchronize()
    except CUDADriverError as exc:
        print(f"FAULT-REPORTED {exc.result}\n{exc}", flush=True)
        return 0
    print("FAULT-NOT-REPORTED", flush=True)
    return 1


def run_fault_checks(cubin: Path, metas: list[Path]) -> None:
    for mode, expected in (("illegal", ("CUDA_ERROR_ILLEGAL_ADDRESS",)),
                           ("assert", ("CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION"))):
        done = subprocess.run([sys.executable, __file__, "--fault", mode, str(cubin), *map(str, metas)],
                              capture_output=True, text=True, timeout=120)
        text = done.stdout + done.stderr
        reported = done.returncode == 0 and any(name in text for name in expected)
        check(reported, f"{mode}: synchronize() raises CUDADriverError naming {' or '.join(expected)}")
        if mode == "assert":
            # printf's buffer reaches stdout at synchronize; whether it survives the trap is
            # the driver's business: reported, not required.
            seen = "device assertion failed: assert_value == 0" in text
            print(f"    device assert message printed: {'yes' if seen else 'no'}")
        if not reported:
            print("    child output:\n" + "\n".join("      " + line for line in text.splitlines()[-20:]))
        else:
            first = next((line for line in text.splitlines() if "failed:" in line), "")
            print(f"    {first.strip()}")


def run_cubin(cubin: Path, metas: list[Path]) -> None:
    import torch

    print(f"== {cubin} ({cubin.stat().st_size} bytes)", flush=True)
    runtime = CUDARuntime()
    kernels = {}
    for path in metas:
        meta = KernelMeta.from_json(path.read_text())
        kernels[meta.entry] = runtime.load(cubin.read_bytes(), meta, device=torch.cuda.current_device())
    if "tl_smoke_axpby" in kernels:
        run_axpby(runtime, kernels["tl_smoke_axpby"], torch)
    if "tl_smoke_gemm" in kernels:
        run_gemm(runtime, kernels["tl_smoke_gemm"], torch)
    if "tl_smoke_axpby" in kernels and "tl_smoke_gemm" in kernels:
        run_core_kernel(runtime, cubin.read_bytes(), {name: k.meta for name, k in kernels.items()}, torch)
        run_timing(runtime, kernels["tl_smoke_axpby"], kernels["tl_smoke_gemm"], torch)
    if "tl_smoke_fault" in kernels:
        run_fault_checks(cubin, metas)


def files_from(paths: list[Path]) -> list[tuple[Path, list[Path]]]:
    if len(paths) == 1 and paths[0].is_dir():
        directory = paths[0]
        metas = sorted(directory.glob("*.json"))
        return [(cubin, metas) for cubin in sorted(directory.glob("*.cubin"))]
    cubins = [p for p in paths if p.suffix != ".json"]
    metas = [p for p in paths if p.suffix == ".json"]
    return [(cubin, metas) for cubin in cubins]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path, help="a directory, or a cubin and meta JSON files")
    parser.add_argument("--fault", choices=("illegal", "assert"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    jobs = files_from(args.paths)
    if args.fault:
        cubin, metas = jobs[0]
        return run_fault(cubin, metas, args.fault)
    available, what = device_available()
    if not available:
        print(f"SKIP: no usable CUDA device here ({what})")
        return 2
    import torch

    print(f"device: {what}; torch {torch.__version__}; python {sys.version.split()[0]}")
    if not jobs:
        print("no cubin given")
        return 1
    for cubin, metas in jobs:
        run_cubin(cubin, metas)
    print(f"\n{'ALL PASSED' if not FAILURES else f'{len(FAILURES)} FAILED'}")
    for failure in FAILURES:
        print(f"  failed: {failure}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
