"""Ready operators (`tilelang_core.ops`) on a GPU: every test case checked, then every operator
timed beside torch, in one run.

    python bench/ops.py --check --speed --out DIR     # the whole run (the device command)
    python bench/ops.py --check [--ops softmax,gemm]  # correctness only
    python bench/ops.py --out DIR [--ops ...] [--size small|large] [--rounds 5] [--rep 20]

Compiles on the device (TVM staged there: shared/gpu/README.md). First every kernel the run
will launch is found without launching (`tilelang_core.ops.launch.capture`) and compiled by
`--jobs` spawned processes into the kernel cache on disk, so the phases' first calls load it;
seconds of compiling per operator go into the table.

`--check` runs the cases of tests/ops/cases.py (ragged sizes, every operator and option) with
torch tensors on the GPU against the float64 NumPy references, plus GPU-only ones (fp8,
bfloat16). float32 GEMM-family cases compare with the operands as the kernel multiplies
them: TF32-rounded where the call's precision and the target give TF32, within a bound
derived from K.

`--speed`: per operator, inputs at a realistic size (memory-bound operators move 64 MiB or
more), our output checked against torch in float32 or float64 (outputs poisoned first: the
caching allocator's blocks of the outputs' sizes are filled with NaN just before the checked
call), then ours and torch's equivalent timed in alternating rounds with CUDA events (median
of `--rep` calls per round); the ratio is the median over rounds of torch time / our time
(paired: least moved by clock drift). Triton (a softmax written below) and FlashAttention
(`flash_attn`) join where installed. Operators not reached within `--budget` seconds are
listed as not timed, so the report always comes out.

Output: a Markdown table on stdout and in DIR/ops.md, JSON in DIR/ops.json, and a bar plot
DIR/ops.png (matplotlib; where it is missing, `python scripts/plot_ops.py DIR/ops.json`
makes the plot from the JSON on another machine).

Exit status: 0 when every checked output matched, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, Path(__file__).resolve().parent, REPO / "scripts"):
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

    def gemm_float32(precision, trans_b=False):
        """float32 at one of torch's precision levels: ours with precision=, torch under the same
        setting; checked against float64 products of the operands as our kernel multiplies them
        (TF32-rounded where it runs TF32: to nearest, with the slack of tests/ops/cases.py
        float32_bound for units that truncate), within the K-derived bound of that file.
        `trans_b`: B given as (N, K), the layout wgmma's tf32 form reads on sm_90a."""
        m = 4096 if big else 256

        def make():
            from tilelang_core.ops.gemm import float32_math
            from tilelang_core.ops.launch import target_for

            a, b = rnd(m, m, dtype=torch.float32), rnd(m, m, dtype=torch.float32)

            def theirs():
                saved = torch.get_float32_matmul_precision()
                torch.set_float32_matmul_precision(precision)
                try:
                    return a @ (b.T if trans_b else b)
                finally:
                    torch.set_float32_matmul_precision(saved)
            tf32 = float32_math(precision, target_for([a])) == "tf32"
            ar, br = (_tf32(a), _tf32(b)) if tf32 else (a, b)
            br = br.T if trans_b else br
            magnitude = ar.abs().double() @ br.abs().double()
            bound = (2.0 * (m + 2) * 2.0 ** -24 + (1.01 * 2.0 ** -9 if tf32 else 0.0)) * magnitude
            return (lambda: ops.gemm(a, b, trans_b=trans_b, precision=precision), theirs,
                    lambda: ar.double() @ br.double(), 2.0 * m ** 3, "TFLOP/s", bound), {}
        return make
    p["gemm_float32_highest"] = gemm_float32("highest")
    p["gemm_float32_high"] = gemm_float32("high")
    p["gemm_float32_high_nt"] = gemm_float32("high", trans_b=True)

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
                "add_rms_norm", "cross_entropy", "quantize_per_token", "sum", "mean", "max", "min", "cumsum", "topk",
                "dequantize_gemv_int8", "dequantize_gemv_int4", "attention_decode"}


def _tf32(x):
    """float32 rounded to TF32 to nearest, ties away from zero (cvt.rna.tf32.f32), on x's device."""
    import torch

    return ((x.contiguous().view(torch.int32) + 0x1000) & -0x2000).view(torch.float32)


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


# ---------------------------------------------------------------------------- compiling


def _capture_jobs(calls) -> tuple[list[tuple[str, str, dict]], dict[tuple, int]]:
    """The kernels to compile: (operator, target, problem) of the first kernel each labelled
    call launches, found without launching (`tilelang_core.ops.launch.capture`), each once,
    and which of them each label's call launches. A call that fails here is left to its phase."""
    from tilelang_core.ops.launch import capture

    jobs, index, of_label = [], {}, {}
    for label, call in calls:
        try:
            rec = capture(call)
        except Exception:  # noqa: BLE001 - the phase reports it
            continue
        key = (rec.op.name, str(rec.target), json.dumps(rec.problem, sort_keys=True, default=str))
        if key not in index:
            index[key] = len(jobs)
            jobs.append((rec.op.name, str(rec.target), rec.problem))
        of_label[label] = index[key]
    return jobs, of_label


def _worker_init() -> None:
    """A compile process imports the compiler once, before its first job is timed."""
    _ensure_backend()
    import tilelang_core.ops  # noqa: F401
    import tvm  # noqa: F401


def _compile_job(job) -> tuple[str, float, str]:
    """Compile one kernel into the on-disk kernel cache (a worker process): (op, seconds, error)."""
    name, target, problem = job
    start = time.perf_counter()
    try:
        _ensure_backend()
        from tilelang_core import ops
        from tilelang_core.ops.launch import kernel_for
        from tilelang_core.plugin import get_plugin_manager

        kernel_for(ops.get(name), get_plugin_manager().parse_target(target), problem)
        return name, time.perf_counter() - start, ""
    except Exception as exc:  # noqa: BLE001 - the phase that calls it reports it in full
        return name, time.perf_counter() - start, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


def precompile(jobs, workers: int) -> dict:
    """Compile every job, `workers` processes at a time (spawned: no CUDA state is inherited),
    into the kernel cache on disk, where the phases' first calls find them. Returns the seconds
    of each job (in order), the wall time and the failures."""
    start = time.perf_counter()
    if workers <= 1:
        results = [_compile_job(j) for j in jobs]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_worker_init) as pool:
            results = list(pool.map(_compile_job, jobs))
    failed = [f"{name}: {err}" for name, _, err in results if err]
    summary = {"kernels": len(jobs), "workers": max(1, workers), "wall_s": time.perf_counter() - start,
               "sum_s": sum(r[1] for r in results), "job_s": [r[1] for r in results], "failed": failed}
    print(f"precompiled {len(jobs)} kernels on {summary['workers']} processes in {summary['wall_s']:.1f} s wall "
          f"({summary['sum_s']:.1f} s of compiling){'; failed: ' + '; '.join(failed) if failed else ''}", flush=True)
    return summary


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
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    del blocks


def _check(torch, ours, reference, tolerance) -> tuple[bool, float]:
    """Our output(s) against the reference: (atol, rtol) with atol relative to the largest
    reference magnitude (at least 1), or a tensor of per-element bounds."""
    expected = _outputs(reference())
    shapes = [(t.shape, t.dtype) for t in _outputs(ours()) if hasattr(t, "is_floating_point")]  # compiles
    _poison(torch, shapes)
    got = _outputs(ours())
    worst, good = 0.0, True
    for g, e in zip(got, expected):
        g, e = g.double(), e.double()
        if g.shape != e.shape:
            return False, float("inf")
        err = (g - e).abs()
        scale = max(1.0, float(e.abs().max()))
        worst = max(worst, float(err.max()) / scale)
        if isinstance(tolerance, tuple):
            atol, rtol = tolerance
            limit = atol * scale + rtol * e.abs()
        else:
            limit = tolerance
        good &= bool(torch.isfinite(g).all()) and bool((err <= limit).all())
    return good and len(got) == len(expected), worst


def speed(problems: dict, names, warmup: int, rep: int, rounds: int, deadline: float, compile_s: dict) -> list[dict]:
    """Each operator checked, then timed beside torch (and the others); past `deadline`
    (time.perf_counter()) the rest are listed as not timed, so the report still comes out.
    `compile_s`: the seconds its kernel took to compile, by row name."""
    import torch

    rows = []
    for name, make in problems.items():
        if names and name not in names:
            continue
        if time.perf_counter() > deadline:
            rows.append({"op": name, "error": "not timed: the run's time budget (--budget) was spent", "ok": True,
                        "skipped": True})
            print(f"{name:<24} not timed (time budget spent)", flush=True)
            continue
        start = time.perf_counter()
        try:
            (ours, torch_fn, reference, work, unit, tolerance), others = make()
            good, err = _check(torch, ours, reference, tolerance)
            first_call_s = time.perf_counter() - start
            timing = _alternate(torch, {"ours": ours, "torch": torch_fn, **others}, warmup, rep, rounds)
        except Exception as exc:  # noqa: BLE001 - one operator failing is reported, the rest run
            print(f"{name:<24} FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}", flush=True)
            rows.append({"op": name, "error": f"{type(exc).__name__}: {exc}"[:500], "ok": False})
            continue
        finally:
            if DEVICE == "cuda":
                torch.cuda.empty_cache()
        rate = work / (timing["ours"] * 1e-3) / (1e9 if unit == "GB/s" else 1e12)
        row = {"op": name, "ours_ms": timing["ours"], "torch_ms": timing["torch"], "ratio": timing["torch/ours"],
               "rate": rate, "unit": unit, "max_rel_err": err, "ok": good,
               "compile_s": compile_s.get(name, 0.0), "check_s": first_call_s,
               "bench_s": time.perf_counter() - start,
               "others": {k: timing[f"{k}/ours"] for k in others}, "memory_bound": name in MEMORY_BOUND}
        rows.append(row)
        others_text = "  ".join(f"{k}/ours {v:.2f}" for k, v in row["others"].items())
        print(f"{name:<24} ours {timing['ours']:.4f} ms  torch {timing['torch']:.4f} ms  torch/ours "
              f"{row['ratio']:.2f}x  {rate:8.1f} {unit}  err {err:.1e} {'ok' if good else 'MISMATCH'}  {others_text}",
              flush=True)
    return rows


# ---------------------------------------------------------------------------- --check


def check_cases(names) -> dict:
    """name -> make of the test cases (tests/ops/cases.py) plus the GPU-only ones."""
    from tests.ops import cases

    extra = {
        "quantize_per_token.float8_e4m3fn": cases.quantize_per_token("float8_e4m3fn"),
        "gemm.float16.NT": cases.gemm("float16", trans_b=True),
        "layer_norm.float16": cases.layer_norm("float16"),
        # the sm_90a GEMM-class kernels at their full tiles: several waves, ragged edges
        "grouped_gemm.float16.large": cases.grouped_gemm(sizes=(0, 300, 1, 517, 0, 128), dtype="float16",
                                                         k=520, n=600),
        "conv2d.float16.stride1.large": cases.conv2d(stride=1, padding=1, x_shape=(4, 72, 30, 29),
                                                     w_shape=(136, 72, 3, 3), dtype="float16"),
    }
    return {k: v for k, v in {**cases.CASES, **extra}.items() if not names or k.split(".")[0] in names}


def _to_device(a):
    import numpy as np
    import torch

    return torch.from_numpy(np.ascontiguousarray(a)).to(DEVICE)


def check(selected: dict) -> list[dict]:
    """The test cases with torch tensors on the device against the float64 NumPy references
    (torch's float32 precision setting left at its default, "highest")."""
    import numpy as np
    import torch

    from tests.ops import cases

    results = []
    for name, make in selected.items():
        seed = secrets.randbits(32)
        start = time.perf_counter()
        try:
            call, reference, tolerance = make(np.random.default_rng(seed), _to_device)
            got = call()
            outs = got if isinstance(got, tuple) else (got,)
            assert all(o.device.type == DEVICE for o in outs if hasattr(o, "is_floating_point")), "output not on the device"
            cases.compare(f"{name} (seed {seed})", got, reference(), tolerance)
            results.append({"case": name, "ok": True, "seconds": time.perf_counter() - start})
            print(f"PASS {name}", flush=True)
        except Exception as exc:  # noqa: BLE001 - report and go on
            results.append({"case": name, "ok": False, "seconds": time.perf_counter() - start, "seed": seed,
                            "error": f"{type(exc).__name__}: {str(exc)[:1500]}"})
            print(f"FAIL {name} (seed {seed}): {type(exc).__name__}: {str(exc)[:1500]}", flush=True)
    start = time.perf_counter()
    try:
        from tilelang_core import ops

        bf16 = torch.randn(7, 333, device=DEVICE, dtype=torch.bfloat16)
        cases.compare("softmax bfloat16", ops.softmax(bf16), ops.get("softmax").reference(bf16.float().cpu().numpy()),
                      cases.TOL["bfloat16"])
        results.append({"case": "softmax.bfloat16", "ok": True, "seconds": time.perf_counter() - start})
        print("PASS softmax.bfloat16")
    except Exception as exc:  # noqa: BLE001
        results.append({"case": "softmax.bfloat16", "ok": False, "seconds": time.perf_counter() - start,
                        "error": str(exc)[:1500]})
        print(f"FAIL softmax.bfloat16: {exc}")
    failed = sum(not r["ok"] for r in results)
    print(f"check: {len(results) - failed} passed, {failed} failed", flush=True)
    return results


# ---------------------------------------------------------------------------- report


def _markdown(meta: dict, rows: list[dict], checks: list[dict]) -> str:
    lines = [f"Ready operators on {meta['device']} (torch {meta['torch']}, size {meta['size']}, one run of "
             f"{meta['wall_s']:.0f} s, compiles included): torch time / our time, median of paired rounds "
             f"(> 1: ours faster). Memory-bound floor: {MEMORY_BOUND_FLOOR}x.", ""]
    if checks:
        failed = [c for c in checks if not c["ok"]]
        lines.append(f"Check (tests/ops/cases.py on the device): {len(checks) - len(failed)} passed, "
                     f"{len(failed)} failed{': ' + ', '.join(c['case'] for c in failed) if failed else ''}.")
        lines.append("")
    if rows:
        lines += ["| operator | ours ms | torch ms | torch / ours | ours rate | others / ours | max rel err | check "
                  "| compile s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['op']} | - | - | - | - | - | - | {'not timed' if r.get('skipped') else 'FAILED'}: "
                         f"{r['error'].splitlines()[0][:120]} | - |")
            continue
        floor = " (below floor)" if r["memory_bound"] and r["ratio"] < MEMORY_BOUND_FLOOR else ""
        others = ", ".join(f"{k} {v:.2f}x" for k, v in r["others"].items()) or "-"
        lines.append(f"| {r['op']} | {r['ours_ms']:.4f} | {r['torch_ms']:.4f} | **{r['ratio']:.2f}x**{floor} | "
                     f"{r['rate']:.1f} {r['unit']} | {others} | {r['max_rel_err']:.1e} | "
                     f"{'ok' if r['ok'] else 'MISMATCH'} | {r['compile_s']:.1f} |")
    return "\n".join(lines) + "\n"


def report(out: Path | None, meta: dict, rows: list[dict], checks: list[dict]) -> None:
    """The table on stdout; with `out`: ops.md, ops.json and the plot ops.png there."""
    text = _markdown(meta, rows, checks)
    print("\n" + text)
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "ops.md").write_text(text)
    (out / "ops.json").write_text(json.dumps({**meta, "memory_bound_floor": MEMORY_BOUND_FLOOR, "rows": rows,
                                              "check": checks}, indent=1))
    if rows:
        from plot_ops import plot

        try:
            plot(out / "ops.json", out / "ops.png")
            print(f"plot: {out / 'ops.png'}")
        except ImportError:
            print(f"matplotlib is not installed here: no plot; make it elsewhere with "
                  f"`python scripts/plot_ops.py {out / 'ops.json'}`")
        except ValueError as exc:  # no operator was timed
            print(f"no plot: {exc}")


# ---------------------------------------------------------------------------- main


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="directory for ops.md / ops.json / ops.png")
    parser.add_argument("--ops", help="comma-separated operators (bench names, e.g. softmax,gemm,flash_attention_gqa)")
    parser.add_argument("--size", choices=("small", "large"), default="large")
    parser.add_argument("--check", action="store_true", help="every operator's test cases on the GPU")
    parser.add_argument("--speed", action="store_true", help="every operator timed beside torch (default with --out)")
    parser.add_argument("--jobs", type=int, default=0, help="compile processes (default: CPU cores, at most 16)")
    parser.add_argument("--budget", type=float, default=330.0,
                        help="seconds: operators not reached by then are listed as not timed (default 330)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rep", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    do_speed = args.speed or (args.out is not None and not args.check)
    if not (args.check or do_speed):
        parser.error("give --check, --speed or --out DIR")
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
    problems = _problems(torch, args.size) if do_speed else {}
    unknown = sorted(set(names or ()) - set(problems) - {n.split(".")[0] for n in check_cases(None)})
    if unknown:
        print(f"unknown operators {unknown}; known: {', '.join(problems)}")
        return 2
    selected = check_cases(names) if args.check else {}
    workers = args.jobs or min(16, os.cpu_count() or 1)
    jobs, of_label = _capture_jobs(_calls(selected, problems, names))
    compiled = precompile(jobs, workers)
    compile_s = {name: compiled["job_s"][i] for (phase, name), i in of_label.items() if phase == "speed"}
    checks = check(selected) if args.check else []
    rows = speed(problems, names, args.warmup, args.rep, args.rounds, start + args.budget, compile_s) \
        if do_speed else []
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "size": args.size,
            "precompile": compiled, "wall_s": time.perf_counter() - start}
    report(args.out, meta, rows, checks)
    ok = all(c["ok"] for c in checks) and all(r["ok"] for r in rows)
    return 0 if ok else 1


def _calls(selected: dict, problems: dict, names) -> list:
    """(label, argument-less call) of every operator call the run will make first, labelled
    ("check", case name) and ("speed", row name) (for capture)."""
    import numpy as np

    calls = []
    for label, make in selected.items():
        try:
            calls.append((("check", label), make(np.random.default_rng(0), _to_device)[0]))
        except Exception:  # noqa: BLE001 - the check reports it
            pass
    for name, make in problems.items():
        if names and name not in names:
            continue
        try:
            calls.append((("speed", name), make()[0][0]))
        except Exception:  # noqa: BLE001 - the speed phase reports it
            pass
    return calls


def _ensure_backend() -> None:
    """On a bare machine the CUDA backend comes from this checkout."""
    from tilelang_core.plugin import get_plugin_manager

    manager = get_plugin_manager()
    if "cuda" not in manager.registry.kinds:
        sys.path.insert(0, str(REPO / "backends" / "cuda"))
        manager.register_module("cuda", "tilelang_cuda.plugin")


if __name__ == "__main__":
    sys.exit(main())
