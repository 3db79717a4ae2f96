"""Ready operators (`tilelang_core.ops`) beside torch on a GPU, in one run, as ratios.

    python bench/ops.py --out DIR [--ops softmax,gemm] [--size small|large] [--rounds 5] [--rep 30]
    python bench/ops.py --check [--ops ...]      # correctness only, every operator (run level)

Compiles on the device (TVM staged there: shared/gpu/README.md), so it runs where the
compiler is. For each operator: inputs at a realistic size, our output checked against torch
computed in float32 (outputs poisoned first: the caching allocator's blocks of the outputs'
sizes are filled with NaN just before the checked call, so an element never written shows),
then ours and torch's equivalent timed in alternating rounds with CUDA events (median of
`--rep` calls per round); the reported ratio is the median over rounds of torch time / our
time (paired: least moved by clock drift). Triton (a softmax written below) and FlashAttention
(`flash_attn`) join where installed. Output: a Markdown table on stdout and in
DIR/ops-bench.md, JSON in DIR/ops-bench.json, and a bar plot DIR/ops-bench.png when
matplotlib is installed (else a message).

`--check` runs the cases of tests/ops/cases.py (ragged sizes, every operator and option) with
torch tensors on the GPU against the float64 NumPy references, plus the GPU-only ones (fp8,
bfloat16); exit status 1 when one fails.

Exit status: 0 when every checked output matched, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, Path(__file__).resolve().parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from attention import _time  # noqa: E402  (bench/attention.py: CUDA events, median of `rep` calls)

MEMORY_BOUND_FLOOR = 0.9
DEVICE = "cuda"  # where the inputs live (a CPU smoke test of this script sets "cpu")


# ---------------------------------------------------------------------------- problems


def _problems(torch, size: str):
    """name -> (make() -> (ours, torch_fn, reference_fn, work, unit, tolerance), others).

    `ours` and `torch_fn` take no arguments and return the output(s); `reference_fn` computes
    the float32 torch result to check ours against; `work` is bytes moved (unit "GB/s") or
    flops (unit "TFLOP/s"); `others` maps a competitor name to a callable or None."""
    import torch.nn.functional as F

    from tilelang_core import ops

    big = size == "large"
    dev = DEVICE
    h = torch.float16
    rows, cols = (16384, 8192) if big else (1024, 1000)

    def rnd(*shape, dtype=h, scale=1.0):
        return torch.randn(*shape, device=dev, dtype=torch.float32).mul_(scale).to(dtype)

    def nbytes(*tensors):
        return sum(t.numel() * t.element_size() for t in tensors)

    p = {}

    def unary(name, fn_ours, fn_torch):
        def make():
            x = rnd(rows, cols)
            return (lambda: fn_ours(x), lambda: fn_torch(x), lambda: fn_torch(x.float()), 2 * nbytes(x), "GB/s",
                    (1e-2, 1e-2)), {}
        p[name] = make

    unary("gelu", ops.gelu, F.gelu)
    unary("silu", ops.silu, F.silu)

    def bias_gelu():
        x, b = rnd(rows, cols), rnd(cols)
        return (lambda: ops.bias_gelu(x, b), lambda: F.gelu(x + b), lambda: F.gelu(x.float() + b.float()),
                2 * nbytes(x), "GB/s", (1e-2, 1e-2)), {}
    p["bias_gelu"] = bias_gelu

    def swiglu():
        g, u = rnd(rows, cols), rnd(rows, cols)
        return (lambda: ops.swiglu(g, u), lambda: F.silu(g) * u, lambda: F.silu(g.float()) * u.float(),
                3 * nbytes(g), "GB/s", (1e-2, 1e-2)), {}
    p["swiglu"] = swiglu

    def rope():
        b, s, hh, d = (8, 2048, 32, 128) if big else (2, 100, 4, 64)
        x = rnd(b, s, hh, d)
        ang = torch.arange(s, device=dev)[:, None] * (1e-4 ** (torch.arange(d // 2, device=dev) / (d // 2)))[None]
        cos, sin = ang.cos().float().contiguous(), ang.sin().float().contiguous()

        def ref(x):
            c, sn = cos[None, :, None, :], sin[None, :, None, :]
            x1, x2 = x[..., :d // 2], x[..., d // 2:]
            return torch.cat([x1 * c - x2 * sn, x2 * c + x1 * sn], -1).to(x.dtype)
        return (lambda: ops.rope(x, cos, sin), lambda: ref(x), lambda: ref(x.float()), 2 * nbytes(x), "GB/s",
                (1e-2, 1e-2)), {}
    p["rope"] = rope

    def rowwise(name, fn_ours, fn_torch, tol=(1e-2, 1e-2), others=None):
        def make():
            x = rnd(rows, cols, scale=2.0)
            extra = {k: (lambda f=f: f(x)) for k, f in (others or {}).items() if f is not None}
            return (lambda: fn_ours(x), lambda: fn_torch(x), lambda: fn_torch(x.float()), 2 * nbytes(x), "GB/s",
                    tol), extra
        p[name] = make

    triton_softmax = _triton_softmax()
    rowwise("softmax", ops.softmax, lambda x: torch.softmax(x, -1), (1e-3, 1e-2), {"Triton": triton_softmax})
    rowwise("log_softmax", ops.log_softmax, lambda x: torch.log_softmax(x, -1), (2e-2, 1e-2))

    def layer_norm():
        x, w, b = rnd(rows, cols), rnd(cols), rnd(cols)
        return (lambda: ops.layer_norm(x, w, b), lambda: F.layer_norm(x, (cols,), w, b),
                lambda: F.layer_norm(x.float(), (cols,), w.float(), b.float()), 2 * nbytes(x), "GB/s",
                (2e-2, 1e-2)), {}
    p["layer_norm"] = layer_norm

    def rms(x, w):
        return (x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)

    def rms_norm():
        x, w = rnd(rows, cols), rnd(cols)
        torch_fn = (lambda: F.rms_norm(x, (cols,), w, 1e-6)) if hasattr(F, "rms_norm") else (lambda: rms(x, w))
        return (lambda: ops.rms_norm(x, w), torch_fn, lambda: rms(x.float(), w.float()), 2 * nbytes(x), "GB/s",
                (2e-2, 1e-2)), {}
    p["rms_norm"] = rms_norm

    def add_rms_norm():
        x, r, w = rnd(rows, cols), rnd(rows, cols), rnd(cols)

        def torch_fn():
            s = x + r
            return (F.rms_norm(s, (cols,), w, 1e-6) if hasattr(F, "rms_norm") else rms(s, w)), s
        return (lambda: ops.add_rms_norm(x, r, w), torch_fn,
                lambda: (rms(x.float() + r.float(), w.float()), x.float() + r.float()), 4 * nbytes(x), "GB/s",
                (2e-2, 1e-2)), {}
    p["add_rms_norm"] = add_rms_norm

    def cross_entropy():
        m, v = (8192, 32000) if big else (1000, 5000)
        v = min(v, 16384)  # the row kernel's limit on this target (longer rows are refused)
        x = rnd(m, v, scale=2.0)
        labels = torch.randint(0, v, (m,), device=dev)
        return (lambda: ops.cross_entropy(x, labels, reduction="none"),
                lambda: F.cross_entropy(x, labels, reduction="none"),
                lambda: F.cross_entropy(x.float(), labels, reduction="none"), nbytes(x), "GB/s", (1e-2, 1e-3)), {}
    p["cross_entropy"] = cross_entropy

    def quantize():
        x = rnd(rows, cols)
        fp8 = torch.float8_e4m3fn

        def torch_fn(x, dtype):
            scale = x.abs().amax(-1).float().clamp(min=1e-12) / 448.0
            return (x.float() / scale[:, None]).clamp(-448, 448).to(dtype), scale
        # q is checked as a number (fp8 keeps 3 mantissa bits: relative step 2**-3)
        return (lambda: ops.quantize_per_token(x, "float8_e4m3fn"), lambda: torch_fn(x, fp8),
                lambda: torch_fn(x, torch.float32), nbytes(x) * 3 // 2, "GB/s", (1e-3, 0.07)), {}
    p["quantize_per_token"] = quantize

    for kind, fn in (("sum", torch.sum), ("mean", torch.mean), ("max", torch.amax), ("min", torch.amin)):
        def make(kind=kind, fn=fn):
            x = rnd(rows, cols)
            return (lambda: getattr(ops, kind)(x, axis=-1), lambda: fn(x, -1), lambda: fn(x.float(), -1),
                    nbytes(x), "GB/s", (2e-2, 1e-2)), {}
        p[kind] = make

    def cumsum():
        x = rnd(rows // 4, cols, dtype=torch.float32)
        return (lambda: ops.cumsum(x), lambda: torch.cumsum(x, -1), lambda: torch.cumsum(x.double(), -1).float(),
                2 * nbytes(x), "GB/s", (1e-2, 1e-4)), {}
    p["cumsum"] = cumsum

    def topk():
        x = rnd(rows, 1024, dtype=torch.float32)
        return (lambda: ops.topk(x, 8)[0], lambda: torch.topk(x, 8).values, lambda: torch.topk(x, 8).values,
                nbytes(x), "GB/s", (0.0, 0.0)), {}
    p["topk"] = topk

    n = 8192 if big else 512

    def gemm():
        a, b = rnd(n, n), rnd(n, n)
        return (lambda: ops.gemm(a, b), lambda: a @ b, lambda: a.float() @ b.float(), 2.0 * n ** 3, "TFLOP/s",
                (2e-2, 1e-2)), {}
    p["gemm"] = gemm

    def gemm_epilogue():
        a, b, c = rnd(n, n), rnd(n, n), rnd(n)
        return (lambda: ops.gemm(a, b, trans_b=True, bias=c, activation="gelu"), lambda: F.gelu(F.linear(a, b, c)),
                lambda: F.gelu(a.float() @ b.float().T + c.float()), 2.0 * n ** 3, "TFLOP/s", (2e-2, 1e-2)), {}
    p["gemm_bias_gelu"] = gemm_epilogue

    def bmm():
        bt, m = (16, 2048) if big else (4, 256)
        a, b = rnd(bt, m, m), rnd(bt, m, m)
        return (lambda: ops.batched_gemm(a, b), lambda: torch.bmm(a, b), lambda: a.float() @ b.float(),
                2.0 * bt * m ** 3, "TFLOP/s", (2e-2, 1e-2)), {}
    p["batched_gemm"] = bmm

    def grouped():
        g, k, nn = (8, 4096, 4096) if big else (4, 256, 256)
        sizes = [int(s) for s in torch.randint(64, 2048 if big else 128, (g,))]
        a, b = rnd(sum(sizes), k), rnd(g, k, nn)

        def loop(a, b):
            out, start = [], 0
            for i, m in enumerate(sizes):
                out.append(a[start:start + m] @ b[i])
                start += m
            return torch.cat(out)
        return (lambda: ops.grouped_gemm(a, b, sizes), lambda: loop(a, b), lambda: loop(a.float(), b.float()),
                2.0 * sum(sizes) * k * nn, "TFLOP/s", (2e-2, 1e-2)), {}
    p["grouped_gemm"] = grouped

    def gemv(bits):
        def make():
            nn, k = (16384, 8192) if big else (512, 256)
            x = rnd(1, k)
            w = torch.randint(-127, 128, (nn, k), device=dev, dtype=torch.int8) if bits == 8 else \
                torch.randint(0, 256, (nn, k // 2), device=dev, dtype=torch.uint8)
            s = torch.rand(nn, k // 128, device=dev, dtype=torch.float32).mul_(0.01).to(h)
            if bits == 8:
                dq = w.float()
            else:
                lo, hi = (w & 15).int() - 8, (w >> 4).int() - 8
                dq = torch.stack([lo, hi], -1).reshape(nn, k).float()
            dq = (dq * s.float().repeat_interleave(128, 1))
            dq16 = dq.to(h)
            # torch has no int4/int8 GEMV: it runs on the dequantized fp16 weight (4x / 2x the bytes)
            return (lambda: ops.dequantize_gemv(x, w, s, bits=bits), lambda: x @ dq16.T, lambda: x.float() @ dq.T,
                    nbytes(w) + nbytes(s), "GB/s", (2e-2, 1e-2)), {}
        return make
    p["dequantize_gemv_int8"] = gemv(8)
    p["dequantize_gemv_int4"] = gemv(4)

    def conv():
        nb, c, hw, o = (32, 128, 56, 128) if big else (2, 16, 14, 32)
        x, w = rnd(nb, c, hw, hw), rnd(o, c, 3, 3, scale=0.1)
        return (lambda: ops.conv2d(x, w, stride=1, padding=1), lambda: F.conv2d(x, w, padding=1),
                lambda: F.conv2d(x.float(), w.float(), padding=1), 2.0 * nb * o * hw * hw * c * 9, "TFLOP/s",
                (2e-2, 1e-2)), {}
    p["conv2d"] = conv

    flash = _flash_attn()

    def attention(causal, kv_heads):
        def make():
            b, hh, s, d = (8, 16, 4096, 128) if big else (2, 4, 256, 64)
            q, k, v = rnd(b, hh, s, d), rnd(b, kv_heads, s, d), rnd(b, kv_heads, s, d)
            gqa = kv_heads != hh

            def sdpa(q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
            extra = {}
            if flash is not None:
                qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))
                extra["FlashAttention"] = lambda: flash(qt, kt, vt, causal=causal)
            flops = 4.0 * b * hh * s * s * d * (0.5 if causal else 1.0)
            return (lambda: ops.flash_attention(q, k, v, is_causal=causal), lambda: sdpa(q, k, v),
                    lambda: sdpa(q.float(), k.float(), v.float()), flops, "TFLOP/s", (1e-2, 1e-2)), extra
        return make
    p["flash_attention"] = attention(False, 16 if big else 4)
    p["flash_attention_causal"] = attention(True, 16 if big else 4)
    p["flash_attention_gqa"] = attention(False, 4 if big else 2)

    def varlen():
        hh, d = (16, 128) if big else (4, 64)
        lens = [int(s) for s in torch.randint(512 if big else 16, 4096 if big else 200, (8,))]
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), device=dev, dtype=torch.int32)
        tot, mx = sum(lens), max(lens)
        q, k, v = rnd(tot, hh, d), rnd(tot, hh, d), rnd(tot, hh, d)

        def padded(q, k, v):  # torch: SDPA over each sequence
            outs = []
            for i, n_ in enumerate(lens):
                sl = slice(int(cu[i]), int(cu[i]) + n_)
                outs.append(F.scaled_dot_product_attention(q[sl].transpose(0, 1)[None], k[sl].transpose(0, 1)[None],
                                                           v[sl].transpose(0, 1)[None], is_causal=True)[0].transpose(0, 1))
            return torch.cat(outs)
        flops = sum(4.0 * hh * n_ * n_ * d * 0.5 for n_ in lens)
        return (lambda: ops.flash_attention_varlen(q, k, v, cu, cu, mx, is_causal=True), lambda: padded(q, k, v),
                lambda: padded(q.float(), k.float(), v.float()), flops, "TFLOP/s", (1e-2, 1e-2)), {}
    p["flash_attention_varlen"] = varlen

    def decode():
        b, hh, g, s, d = (16, 32, 8, 8192, 128) if big else (2, 8, 2, 300, 64)
        q, k, v = rnd(b, hh, d), rnd(b, g, s, d), rnd(b, g, s, d)

        def sdpa(q, k, v):
            return F.scaled_dot_product_attention(q[:, :, None], k, v, enable_gqa=True)[:, :, 0]
        return (lambda: ops.attention_decode(q, k, v), lambda: sdpa(q, k, v), lambda: sdpa(q.float(), k.float(), v.float()),
                nbytes(k, v), "GB/s", (1e-2, 1e-2)), {}
    p["attention_decode"] = decode
    return p


MEMORY_BOUND = {"gelu", "silu", "bias_gelu", "swiglu", "rope", "softmax", "log_softmax", "layer_norm", "rms_norm",
                "add_rms_norm", "cross_entropy", "quantize_per_token", "sum", "mean", "max", "min", "cumsum"}


def _triton_softmax():
    """A row softmax in Triton (one program per row, the row in one block), or None."""
    try:
        import torch
        import triton
        import triton.language as tl
    except Exception:  # noqa: BLE001 - Triton is optional
        return None

    @triton.jit
    def kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty),
                 mask=offs < n_cols)

    def softmax(x):
        y = torch.empty_like(x)
        kernel[(x.shape[0],)](y, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=8)
        return y
    return softmax


def _flash_attn():
    try:
        from flash_attn import flash_attn_func
    except Exception:  # noqa: BLE001 - optional
        return None
    return flash_attn_func


# ---------------------------------------------------------------------------- measuring


def _alternate(torch, fns: dict, warmup: int, rep: int, rounds: int) -> dict:
    """Each function timed once per round, in turn; per function the median over rounds (ms)
    and, against "ours", the median of the per-round ratios (theirs / ours)."""
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(_time(fn, warmup, rep))
    out = {name: sorted(t)[rounds // 2] for name, t in samples.items()}
    for name in fns:
        if name != "ours":
            paired = sorted(o / u for u, o in zip(samples["ours"], samples[name]))
            out[f"{name}/ours"] = paired[rounds // 2]
    return out


def _outputs(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def _poison(torch, shapes) -> None:
    """Fill freed allocator blocks of the outputs' sizes with NaN (-77 for integers), so the
    next allocation of those sizes (our outputs) starts poisoned, not as an earlier result."""
    blocks = [torch.full(shape, float("nan") if dtype.is_floating_point else -77, dtype=dtype, device=DEVICE)
              for shape, dtype in shapes]
    torch.cuda.synchronize()
    del blocks


def _check(torch, ours, reference, tolerance) -> tuple[bool, float]:
    expected = _outputs(reference())
    shapes = [(t.shape, t.dtype) for t in _outputs(ours()) if hasattr(t, "is_floating_point")]  # compiles
    _poison(torch, shapes)
    got = _outputs(ours())
    atol, rtol = tolerance
    worst, good = 0.0, True
    for g, e in zip(got, expected):
        g, e = g.float(), e.float()
        if g.shape != e.shape:
            return False, float("inf")
        err = (g - e).abs()
        scale = max(1.0, float(e.abs().max()))
        worst = max(worst, float(err.max()) / scale)
        good &= bool(torch.isfinite(g).all()) and bool((err <= atol * scale + rtol * e.abs()).all())
    return good and len(got) == len(expected), worst


def bench(out: Path | None, names: list[str] | None, size: str, warmup: int, rep: int, rounds: int) -> int:
    import torch

    problems = _problems(torch, size)
    unknown = sorted(set(names or ()) - set(problems))
    if unknown:
        print(f"unknown operators {unknown}; known: {', '.join(problems)}")
        return 2
    rows, ok = [], True
    for name, make in problems.items():
        if names and name not in names:
            continue
        start = time.perf_counter()
        try:
            (ours, torch_fn, reference, work, unit, tolerance), others = make()
            good, err = _check(torch, ours, reference, tolerance)
            compile_s = time.perf_counter() - start
            timing = _alternate(torch, {"ours": ours, "torch": torch_fn, **others}, warmup, rep, rounds)
        except Exception as exc:  # noqa: BLE001 - one operator failing is reported, the rest run
            print(f"{name:<24} FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}", flush=True)
            rows.append({"op": name, "error": f"{type(exc).__name__}: {exc}"[:500], "ok": False})
            ok = False
            continue
        ok &= good
        rate = (work / (timing["ours"] * 1e-3) / (1e9 if unit == "GB/s" else 1e12))
        row = {"op": name, "ours_ms": timing["ours"], "torch_ms": timing["torch"], "ratio": timing["torch/ours"],
               "rate": rate, "unit": unit, "max_rel_err": err, "ok": good, "compile_s": compile_s,
               "others": {k: timing[f"{k}/ours"] for k in others}, "memory_bound": name in MEMORY_BOUND}
        rows.append(row)
        others_text = "  ".join(f"{k}/ours {v:.2f}" for k, v in row["others"].items())
        print(f"{name:<24} ours {timing['ours']:.4f} ms  torch {timing['torch']:.4f} ms  ours vs torch "
              f"{row['ratio']:.2f}x  {rate:8.1f} {unit}  err {err:.1e} {'ok' if good else 'MISMATCH'}  {others_text}",
              flush=True)
    text = _markdown(torch, rows, size)
    print("\n" + text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "ops-bench.md").write_text(text)
        (out / "ops-bench.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "size": size,
                                                        "torch": torch.__version__, "rows": rows}, indent=1))
        _plot(rows, out / "ops-bench.png", torch.cuda.get_device_name())
    return 0 if ok else 1


def _markdown(torch, rows: list[dict], size: str) -> str:
    lines = [f"Ready operators on {torch.cuda.get_device_name()} (torch {torch.__version__}, size {size}): "
             f"speed relative to torch = torch time / our time, median of paired rounds "
             f"(> 1: ours faster). Memory-bound floor: {MEMORY_BOUND_FLOOR}x.", "",
             "| operator | ours ms | torch ms | ours vs torch | ours rate | others vs ours | max rel err | check |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['op']} | - | - | - | - | - | - | FAILED: {r['error'].splitlines()[0][:120]} |")
            continue
        floor = " (below floor)" if r["memory_bound"] and r["ratio"] < MEMORY_BOUND_FLOOR else ""
        others = ", ".join(f"{k} {v:.2f}x" for k, v in r["others"].items()) or "-"
        lines.append(f"| {r['op']} | {r['ours_ms']:.4f} | {r['torch_ms']:.4f} | **{r['ratio']:.2f}x**{floor} | "
                     f"{r['rate']:.1f} {r['unit']} | {others} | {r['max_rel_err']:.1e} | "
                     f"{'ok' if r['ok'] else 'MISMATCH'} |")
    return "\n".join(lines) + "\n"


def _plot(rows: list[dict], path: Path, device: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - optional
        print(f"matplotlib is not installed: no plot written ({path.name}); the table has every number")
        return
    done = [r for r in rows if "ratio" in r]
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(done)), 4.5))
    colors = ["tab:blue" if r["memory_bound"] else "tab:orange" for r in done]
    ax.bar([r["op"] for r in done], [r["ratio"] for r in done], color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(MEMORY_BOUND_FLOOR, color="red", linestyle="--", linewidth=0.8, label="memory-bound floor 0.9x")
    ax.set_ylabel("torch time / our time")
    ax.set_title(f"tilelang_core.ops vs torch on {device} (blue: memory-bound)")
    ax.tick_params(axis="x", rotation=70)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


# ---------------------------------------------------------------------------- --check


def check(names: list[str] | None) -> int:
    """The test cases on the GPU (torch tensors on the device) against the NumPy references."""
    import numpy as np
    import torch

    from tests.ops import cases

    def to_device(a):
        return torch.from_numpy(np.ascontiguousarray(a)).to(DEVICE)

    extra = {
        "quantize_per_token.float8_e4m3fn": cases.quantize_per_token("float8_e4m3fn"),
        "gemm.float16.NT": cases.gemm("float16", trans_b=True),
        "layer_norm.float16": cases.layer_norm("float16"),
    }
    failed = 0
    for name, make in {**cases.CASES, **extra}.items():
        if names and name.split(".")[0] not in names:
            continue
        seed = secrets.randbits(32)
        try:
            call, reference, tolerance = make(np.random.default_rng(seed), to_device)
            got = call()
            outs = got if isinstance(got, tuple) else (got,)
            assert all(o.device.type == DEVICE for o in outs if hasattr(o, "is_floating_point")), "output not on the device"
            cases.compare(f"{name} (seed {seed})", got, reference(), tolerance)
            print(f"PASS {name}", flush=True)
        except Exception as exc:  # noqa: BLE001 - report and go on
            failed += 1
            print(f"FAIL {name} (seed {seed}): {type(exc).__name__}: {str(exc)[:1500]}", flush=True)
    bf16 = torch.randn(7, 333, device=DEVICE, dtype=torch.bfloat16)
    try:
        from tilelang_core import ops

        cases.compare("softmax bfloat16", ops.softmax(bf16), ops.get("softmax").reference(bf16.float().cpu().numpy()),
                      cases.TOL["bfloat16"])
        print("PASS softmax.bfloat16")
    except Exception as exc:  # noqa: BLE001
        failed += 1
        print(f"FAIL softmax.bfloat16: {exc}")
    print(f"{'all passed' if not failed else f'{failed} failed'} on {torch.cuda.get_device_name()}")
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="directory for ops-bench.md / .json / .png")
    parser.add_argument("--ops", help="comma-separated operators (bench names, e.g. softmax,gemm,flash_attention_gqa)")
    parser.add_argument("--size", choices=("small", "large"), default="large")
    parser.add_argument("--check", action="store_true", help="correctness only: every operator's test cases on the GPU")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rep", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to run")
        return 2
    if not torch.cuda.is_available():
        print("no CUDA device here")
        return 2
    _ensure_backend()
    names = [n.strip() for n in args.ops.split(",")] if args.ops else None
    if args.check:
        return check(names)
    if args.out is None:
        parser.error("give --out DIR (or --check)")
    return bench(args.out, names, args.size, args.warmup, args.rep, args.rounds)


def _ensure_backend() -> None:
    """On a bare machine the CUDA backend comes from this checkout."""
    from tilelang_core.plugin import get_plugin_manager

    manager = get_plugin_manager()
    if "cuda" not in manager.registry.kinds:
        sys.path.insert(0, str(REPO / "backends" / "cuda"))
        manager.register_module("cuda", "tilelang_cuda.plugin")


if __name__ == "__main__":
    sys.exit(main())

