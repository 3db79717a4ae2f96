"""Where the host time of one small-kernel launch goes, on the GPU machine (no TVM needed):

    python bench/launch.py build/gemm_bench      # an export made by bench/gemm.py --export

Prints microseconds per call (best of 7 rounds of 2000) for torch.add(out=), our whole
`kernel(a, b, c)`, the loaded kernel's launch, and the two ways to reach cuLaunchKernel.
"""
from __future__ import annotations

import ctypes
import sys
import time
from pathlib import Path

sys.modules["tvm"] = None
REPO = Path(__file__).resolve().parent.parent
for path in (REPO, REPO / "backends" / "cuda"):
    sys.path.insert(0, str(path))


def best_us(torch, fn, calls=2000, rounds=7):
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main() -> None:
    import torch

    import tilelang_core
    from cuda.bindings import driver as cu

    root = Path(sys.argv[1])
    kernel = tilelang_core.load(root / "tiny_add")
    a, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    c = torch.empty_like(a)
    kernel(a, b, c)
    loaded = kernel.loaded
    ptrs = [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    grid, block = (tuple(kernel.meta.grid) + (1, 1))[:3], (tuple(kernel.meta.block) + (1, 1))[:3]
    params = loaded._param_address
    raw = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    raw.restype = ctypes.c_int
    raw.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    fn = int(loaded._function)
    rows = [
        ("torch.add(a, b, out=c)", lambda: torch.add(a, b, out=c)),
        ("kernel(a, b, c)", lambda: kernel(a, b, c)),
        ("loaded.launch(pointers, stream=0)", lambda: loaded.launch(ptrs, grid, block, 0, 0)),
        ("ctypes cuLaunchKernel", (lambda: raw(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, None, params, None)) if raw else None),
        ("cuda-bindings cuLaunchKernel", lambda: cu.cuLaunchKernel(loaded._function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, 0, params, 0)),
        ("torch current raw stream", lambda: torch._C._cuda_getCurrentRawStream(0)),
    ]
    for name, fn_ in rows:
        if fn_ is not None:
            print(f"{name:<38} {best_us(torch, fn_):6.2f} us")


if __name__ == "__main__":
    main()
