"""Host time of one operator call on tiny inputs, where the device work is negligible: what
`tilelang_core.ops` adds per call (argument checks, the target, the kept kernel, the launch).

    python bench/ops_overhead.py                  # NumPy arrays on the CPU backend
    python bench/ops_overhead.py --device cuda    # torch tensors on the GPU, beside torch

Prints microseconds per call, the best of `--rounds` rounds of `--calls` calls (on a GPU the
round ends with a synchronize, so the figure is the host's rate when it cannot hide behind
the device).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def best_us(fn, calls: int, rounds: int, sync=lambda: None) -> float:
    for _ in range(20):
        fn()
    sync()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def calls(device: str):
    """name -> (ours, torch's or None)."""
    import numpy as np

    from tilelang_core import ops

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 64)).astype("float32")
    q = rng.standard_normal((1, 2, 16, 64)).astype("float16")
    qd = rng.standard_normal((1, 2, 64)).astype("float16")
    if device == "cpu":
        return {"gelu": (lambda: ops.gelu(x), None), "softmax": (lambda: ops.softmax(x), None),
                "flash_attention": (lambda: ops.flash_attention(q, q, q), None),
                "attention_decode": (lambda: ops.attention_decode(qd, q, q), None)}
    import torch
    import torch.nn.functional as F

    xt, qt, qdt = (torch.from_numpy(a).to(device) for a in (x, q, qd))
    return {"gelu": (lambda: ops.gelu(xt), lambda: F.gelu(xt)),
            "softmax": (lambda: ops.softmax(xt), lambda: torch.softmax(xt, -1)),
            "flash_attention": (lambda: ops.flash_attention(qt, qt, qt),
                                lambda: F.scaled_dot_product_attention(qt, qt, qt)),
            "attention_decode": (lambda: ops.attention_decode(qdt, qt, qt),
                                 lambda: F.scaled_dot_product_attention(qdt[:, :, None], qt, qt))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu (NumPy) or a torch device such as cuda")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    sync = lambda: None  # noqa: E731
    if args.device != "cpu":
        import torch

        sync = torch.cuda.synchronize if args.device.startswith("cuda") else sync
    print(f"| operator | ours us/call | torch us/call |\n|---|---|---|")
    for name, (ours, theirs) in calls(args.device).items():
        mine = best_us(ours, args.calls, args.rounds, sync)
        other = f"{best_us(theirs, args.calls, args.rounds, sync):.1f}" if theirs else "-"
        print(f"| {name} | {mine:.1f} | {other} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
