"""One case per operator (and per notable option): fresh random inputs at ragged sizes, the
call, the NumPy reference in float64 and its tolerance. Shared by the CPU run tests and by
`bench/ops.py --check` on a GPU (there with torch tensors on the device).

A case is `make(rng, lib) -> (call, reference, tolerance)`; `lib` turns a NumPy array into the
array the call takes (itself on the CPU, a torch tensor on the device in `--check`).
"""
from __future__ import annotations

import numpy as np

from tilelang_core import ops

TOL = {"float32": (2e-5, 2e-5), "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)}


def _x(rng, shape, dtype="float32", scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def elementwise(name, dtype, shape=(7, 333)):
    def make(rng, lib):
        x = _x(rng, shape, dtype)
        return (lambda: getattr(ops, name)(lib(x)), lambda: ops.get(name).reference(x), TOL[dtype])
    return make


def bias_gelu(dtype):
    def make(rng, lib):
        x, b = _x(rng, (5, 3, 67), dtype), _x(rng, (67,), dtype)
        return (lambda: ops.bias_gelu(lib(x), lib(b)), lambda: ops.get("bias_gelu").reference(x, b), TOL[dtype])
    return make


def swiglu(dtype):
    def make(rng, lib):
        g, u = _x(rng, (9, 130), dtype), _x(rng, (9, 130), dtype)
        return (lambda: ops.swiglu(lib(g), lib(u)), lambda: ops.get("swiglu").reference(g, u), TOL[dtype])
    return make


def rope(rng, lib):
    x = _x(rng, (2, 5, 3, 8))
    angle = np.arange(5)[:, None] * (1e-2 ** (np.arange(4) / 4))[None, :]
    cos, sin = np.cos(angle).astype("float32"), np.sin(angle).astype("float32")
    return (lambda: ops.rope(lib(x), lib(cos), lib(sin)), lambda: ops.get("rope").reference(x, cos, sin),
            TOL["float32"])


def softmax(name, dtype, axis=-1):
    def make(rng, lib):
        x = _x(rng, (7, 333), dtype, 3.0)
        return (lambda: getattr(ops, name)(lib(x), axis=axis), lambda: ops.get(name).reference(x, axis), TOL[dtype])
    return make


def layer_norm(dtype):
    def make(rng, lib):
        x, w, b = _x(rng, (7, 333), dtype), _x(rng, (333,), dtype), _x(rng, (333,), dtype)
        return (lambda: ops.layer_norm(lib(x), lib(w), lib(b)), lambda: ops.get("layer_norm").reference(x, w, b),
                TOL[dtype])
    return make


def rms_norm(dtype):
    def make(rng, lib):
        x, w = _x(rng, (4, 3, 111), dtype), _x(rng, (111,), dtype)
        return (lambda: ops.rms_norm(lib(x), lib(w)), lambda: ops.get("rms_norm").reference(x, w), TOL[dtype])
    return make


def add_rms_norm(dtype):
    def make(rng, lib):
        x, r, w = _x(rng, (7, 333), dtype), _x(rng, (7, 333), dtype), _x(rng, (333,), dtype)
        return (lambda: ops.add_rms_norm(lib(x), lib(r), lib(w)),
                lambda: ops.get("add_rms_norm").reference(x, r, w), TOL[dtype])
    return make


def cross_entropy(reduction):
    def make(rng, lib):
        x = _x(rng, (7, 333), "float32", 2.0)
        labels = rng.integers(0, 333, 7).astype("int64")
        labels[2] = -100
        ref = ops.get("cross_entropy").reference(x, labels)

        def reduce():
            if reduction == "none":
                return ref
            return ref.sum() / (1 if reduction == "sum" else (labels != -100).sum())
        return (lambda: ops.cross_entropy(lib(x), lib(labels), reduction=reduction), reduce, TOL["float32"])
    return make


def quantize_per_token(qdtype):
    """Checked through q * scale (the dequantized values): int8 may round a tie the other way
    (one step: the row's scale); fp8 keeps 3 mantissa bits (relative step 2**-3)."""
    def make(rng, lib):
        x = _x(rng, (6, 200), "float32")

        def call():
            q, scale = ops.quantize_per_token(lib(x), qdtype)
            return _host(q).astype("float64") * _host(scale)[:, None]
        ref = ops.get("quantize_per_token").reference(x, qdtype)[0]
        step = float(np.abs(x).max() / 127.0)
        return call, lambda: ref, (step, 0.0) if qdtype == "int8" else (1e-3, 0.07)
    return make


def reduce(kind, axis, shape=(3, 2500)):
    def make(rng, lib):
        x = _x(rng, shape, "float32")
        ref = (lambda: getattr(x.astype("float64"), kind)()) if axis is None else \
            (lambda: getattr(x.astype("float64"), kind)(axis=axis))
        return (lambda: getattr(ops, kind)(lib(x), axis=axis), ref, (1e-4, 1e-5))
    return make


def cumsum(reverse):
    def make(rng, lib):
        x = _x(rng, (3, 2500), "float32")
        return (lambda: ops.cumsum(lib(x), reverse=reverse), lambda: ops.get("cumsum").reference(x, -1, reverse),
                (2e-4, 1e-5))
    return make


def topk(rng, lib):
    x = _x(rng, (7, 333), "float32")
    values, indices = ops.get("topk").reference(x, 5)
    return (lambda: ops.topk(lib(x), 5), lambda: (values, indices), (0.0, 0.0))


# -- float32 matrix products: the reference multiplies what the kernel multiplies ------------


def tf32_round(x):
    """float32 values rounded to TF32 (10-bit mantissa) to nearest, ties away from zero: what
    `cvt.rna.tf32.f32` gives the TF32 matrix units."""
    bits = np.ascontiguousarray(x, dtype="float32").view("uint32").astype("uint64")
    return ((bits + 0x1000) & 0xFFFFE000).astype("uint32").view("float32")


def _float32_math(op, precision, inputs, conv=False) -> str:
    from tilelang_core.ops.gemm import float32_math, float32_precision
    from tilelang_core.ops.launch import target_for

    return float32_math(float32_precision(op, precision, inputs, conv), target_for(inputs))


def float32_operands(op, precision, inputs, host, conv=False):
    """The host operands as the float32 op multiplies them for `inputs` (the arrays the call
    takes): TF32-rounded where the call's precision and target give TF32 math, else as they are."""
    math = _float32_math(op, precision, inputs, conv)
    return [tf32_round(h) for h in host] if math == "tf32" else list(host)


def float32_tolerance(op, precision, inputs, k, magnitude, conv=False):
    """`float32_bound`, widened where the call runs TF32 math: TF32 units read operands either
    rounded to nearest (mma.sync after cvt.rna) or truncated (wgmma reads float32 words from
    shared memory and drops their 13 low mantissa bits). Each operand of the two differs by at
    most one TF32 unit in the last place (2^-10 relative), so each product by 2^-9 (+ a hair)
    of |a| |b|: the reference (rounded to nearest) then holds for both."""
    return float32_bound(k, magnitude, tf32=_float32_math(op, precision, inputs, conv) == "tf32")


def float32_bound(k, magnitude, tf32=False):
    """Per element, the most a float32 sum of `k` products (plus a bias and the store) may be
    off the exact sum of the same operands: 2 (k + 2) u |a| @ |b| with u = 2**-24 (a float32
    rounding each step, doubled for matrix units that truncate their sums); `magnitude` is
    |a| @ |b| (+ |bias|) in float64. `tf32`: plus 1.01 * 2**-9 |a| @ |b|, the most the product
    of operands truncated to TF32 may differ from that of operands rounded to nearest."""
    magnitude = np.asarray(magnitude, dtype="float64")
    return (2.0 * (k + 2) * 2.0 ** -24 + (1.01 * 2.0 ** -9 if tf32 else 0.0)) * magnitude


def gemm(dtype, trans_a=False, trans_b=False, bias=False, activation="none", precision=None):
    def make(rng, lib):
        a = _x(rng, (70, 45), dtype)
        b = _x(rng, (45, 52), dtype)
        c = _x(rng, (52,), dtype) if bias else None
        a_in = lib(np.ascontiguousarray(a.T) if trans_a else a)
        b_in = lib(np.ascontiguousarray(b.T) if trans_b else b)
        c_in = None if c is None else lib(c)

        def call():
            return ops.gemm(a_in, b_in, trans_a=trans_a, trans_b=trans_b, bias=c_in, activation=activation,
                            precision=precision)
        reference = ops.get("gemm").reference
        if dtype != "float32":
            return call, lambda: reference(a, b, bias=c, activation=activation), (3e-2, 2e-2)
        ar, br = float32_operands("gemm", precision, [a_in, b_in], [a, b])
        magnitude = reference(np.abs(ar), np.abs(br), bias=None if c is None else np.abs(c))
        return call, lambda: reference(ar, br, bias=c, activation=activation), float32_tolerance(
            "gemm", precision, [a_in, b_in], 45, magnitude)
    return make


def batched_gemm(precision=None):
    def make(rng, lib):
        a, b = _x(rng, (3, 33, 20)), _x(rng, (3, 20, 17))
        a_in, b_in = lib(a), lib(b)
        ar, br = float32_operands("batched_gemm", precision, [a_in, b_in], [a, b])
        return (lambda: ops.batched_gemm(a_in, b_in, precision=precision), lambda: ar.astype("float64") @ br,
                float32_tolerance("batched_gemm", precision, [a_in, b_in], 20,
                                  np.abs(ar).astype("float64") @ np.abs(br)))
    return make


def grouped_gemm(precision=None, sizes=(5, 0, 40, 9), dtype="float32", k=24, n=19):
    def make(rng, lib):
        a, b = _x(rng, (sum(sizes), k), dtype), _x(rng, (len(sizes), k, n), dtype)
        a_in, b_in = lib(a), lib(b)
        reference = ops.get("grouped_gemm").reference
        call = lambda: ops.grouped_gemm(a_in, b_in, list(sizes), precision=precision)  # noqa: E731
        if dtype != "float32":
            return call, lambda: reference(a, b, sizes), TOL[dtype]
        ar, br = float32_operands("grouped_gemm", precision, [a_in, b_in], [a, b])
        return call, lambda: reference(ar, br, sizes), float32_tolerance(
            "grouped_gemm", precision, [a_in, b_in], k, reference(np.abs(ar), np.abs(br), sizes))
    return make


def dequantize_gemv(bits):
    def make(rng, lib):
        x = _x(rng, (3, 256))
        w = rng.integers(-127, 128, (37, 256)).astype("int8") if bits == 8 else \
            rng.integers(0, 256, (37, 128)).astype("uint8")
        s = (rng.random((37, 2)) * 0.05).astype("float32")
        return (lambda: ops.dequantize_gemv(lib(x), lib(w), lib(s), bits=bits),
                lambda: ops.get("dequantize_gemv").reference(x, w, s, bits), (1e-4, 1e-4))
    return make


def conv2d(precision=None, stride=2, padding=1, x_shape=(2, 3, 9, 11), w_shape=(5, 3, 3, 3), dtype="float32"):
    def make(rng, lib):
        x, w = _x(rng, x_shape, dtype), _x(rng, w_shape, dtype, 0.3)
        x_in, w_in = lib(x), lib(w)
        reference = ops.get("conv2d").reference
        call = lambda: ops.conv2d(x_in, w_in, stride=stride, padding=padding, precision=precision)  # noqa: E731
        if dtype != "float32":
            return call, lambda: reference(x, w, stride, padding), TOL[dtype]
        xr, wr = float32_operands("conv2d", precision, [x_in, w_in], [x, w], conv=True)
        k = int(np.prod(w_shape[1:]))
        return (call, lambda: reference(xr, wr, stride, padding), float32_tolerance(
            "conv2d", precision, [x_in, w_in], k, reference(np.abs(xr), np.abs(wr), stride, padding), conv=True))
    return make


def flash_attention(causal, heads=4, kv_heads=2, seq_q=37, seq_kv=45, dim=32, scale=None):
    def make(rng, lib):
        q = _x(rng, (2, heads, seq_q, dim), "float16")
        k, v = _x(rng, (2, kv_heads, seq_kv, dim), "float16"), _x(rng, (2, kv_heads, seq_kv, dim), "float16")
        return (lambda: ops.flash_attention(lib(q), lib(k), lib(v), is_causal=causal, scale=scale),
                lambda: ops.get("flash_attention").reference(q, k, v, causal, scale), (1e-2, 1e-2))
    return make


def flash_attention_varlen(causal, cu_q=(0, 5, 40, 77), cu_k=(0, 9, 40, 90), heads=4, kv_heads=2, dim=32):
    def make(rng, lib):
        cq, ck = np.array(cu_q, "int32"), np.array(cu_k, "int32")
        q = _x(rng, (cu_q[-1], heads, dim), "float16")
        k, v = _x(rng, (cu_k[-1], kv_heads, dim), "float16"), _x(rng, (cu_k[-1], kv_heads, dim), "float16")
        longest = int(np.diff(cq).max())
        return (lambda: ops.flash_attention_varlen(lib(q), lib(k), lib(v), lib(cq), lib(ck), longest,
                                                   is_causal=causal),
                lambda: ops.get("flash_attention_varlen").reference(q, k, v, cq, ck, causal), (1e-2, 1e-2))
    return make


def attention_decode(heads=8, kv_heads=2, seq_kv=70, dim=32, num_splits=None, scale=None):
    def make(rng, lib):
        q = _x(rng, (3, heads, dim), "float16")
        k, v = _x(rng, (3, kv_heads, seq_kv, dim), "float16"), _x(rng, (3, kv_heads, seq_kv, dim), "float16")
        return (lambda: ops.attention_decode(lib(q), lib(k), lib(v), scale=scale, num_splits=num_splits),
                lambda: ops.get("attention_decode").reference(q, k, v, scale), (1e-2, 1e-2))
    return make


CASES = {
    "gelu.float32": elementwise("gelu", "float32"),
    "gelu.float16": elementwise("gelu", "float16", (1001,)),
    "silu.float32": elementwise("silu", "float32"),
    "bias_gelu.float32": bias_gelu("float32"),
    "swiglu.float16": swiglu("float16"),
    "rope": rope,
    "softmax.float32": softmax("softmax", "float32"),
    "softmax.float16.axis0": softmax("softmax", "float16", 0),
    "log_softmax.float32": softmax("log_softmax", "float32"),
    "layer_norm.float32": layer_norm("float32"),
    "layer_norm.float16": layer_norm("float16"),
    "rms_norm.float32": rms_norm("float32"),
    "add_rms_norm.float32": add_rms_norm("float32"),
    "cross_entropy.none": cross_entropy("none"),
    "cross_entropy.mean": cross_entropy("mean"),
    "quantize_per_token.int8": quantize_per_token("int8"),
    "sum": reduce("sum", -1),
    "mean.axis0": reduce("mean", 0),
    "max": reduce("max", -1),
    "min.all": reduce("min", None),
    "mean.all.two_stages": reduce("mean", None, (5, 3301)),  # 16384 in 8192-rows, then a 121 tail
    "cumsum": cumsum(False),
    "cumsum.reverse": cumsum(True),
    "topk": topk,
    # float32 at the caller's precision (torch's setting for torch tensors, else "highest"), and
    # at an explicit "high" (TF32 where the target has TF32 units: the reference rounds alike)
    "gemm.float32": gemm("float32"),
    "gemm.float32.high": gemm("float32", precision="high"),
    "gemm.float16.TT.bias.gelu": gemm("float16", True, True, True, "gelu"),
    "gemm.float32.bias.relu": gemm("float32", bias=True, activation="relu"),
    "gemm.float32.TT.bias.relu.high": gemm("float32", True, True, True, "relu", precision="high"),
    "gemm.float32.TT.highest": gemm("float32", True, True, precision="highest"),
    # B as (N, K): wgmma tf32 on sm_90a for "high"; the FMA loops' swizzled K-minor B tile for "highest"
    "gemm.float32.NT.bias.high": gemm("float32", trans_b=True, bias=True, precision="high"),
    "gemm.float32.NT.highest": gemm("float32", trans_b=True, precision="highest"),
    "batched_gemm": batched_gemm(),
    "grouped_gemm": grouped_gemm(),
    "grouped_gemm.high": grouped_gemm("high"),
    # groups of several 128-row tiles, a 3-row group, empty groups first and last
    "grouped_gemm.float16.tiles": grouped_gemm(sizes=(0, 130, 3, 261, 0), dtype="float16"),
    "dequantize_gemv.int8": dequantize_gemv(8),
    "dequantize_gemv.int4": dequantize_gemv(4),
    "conv2d": conv2d(),  # torch tensors: TF32 as torch.backends.cudnn.allow_tf32 says (True by default)
    "conv2d.highest": conv2d("highest"),
    # stride 1 (the padded channels-last GEMM): channels no multiple of a K tile, a 3 x 2 kernel
    "conv2d.stride1": conv2d(stride=1, padding=1, x_shape=(2, 19, 7, 10), w_shape=(6, 19, 3, 2)),
    "conv2d.stride1.pad0.float16": conv2d(stride=1, padding=0, x_shape=(3, 40, 6, 5), w_shape=(33, 40, 3, 3),
                                          dtype="float16"),
    "conv2d.stride1.1x1.pad2.highest": conv2d("highest", 1, 2, (1, 8, 5, 4), (7, 8, 1, 1)),
    # rows and channels in whole 16-byte pieces: the layout launch moves pieces (a 2 x 1 kernel)
    "conv2d.stride1.pieces.float16": conv2d(stride=1, padding=1, x_shape=(2, 24, 5, 16), w_shape=(12, 24, 2, 1),
                                            dtype="float16"),
    "flash_attention.gqa": flash_attention(False),
    "flash_attention.causal.mqa": flash_attention(True, 4, 1),
    # blocks wholly below the diagonal (no mask), the diagonal's and a ragged last one
    "flash_attention.causal.long": flash_attention(True, 2, 1, 130, 130, 16),
    "flash_attention.causal.more_queries": flash_attention(True, 2, 2, 70, 45, 16),
    "flash_attention.scale_negative": flash_attention(True, 2, 1, 40, 70, 16, -0.3),
    "flash_attention_varlen": flash_attention_varlen(False),
    "flash_attention_varlen.causal": flash_attention_varlen(True),
    # an empty query sequence, a sequence without keys (its queries give 0), tiles wholly
    # below the diagonal, more queries than keys; MQA
    "flash_attention_varlen.causal.empty": flash_attention_varlen(True, (0, 5, 5, 40, 140, 150),
                                                                  (0, 9, 20, 20, 120, 123), 2, 1, 16),
    "flash_attention_varlen.empty": flash_attention_varlen(False, (0, 0, 33, 40), (0, 7, 7, 71), 2, 2, 16),
    "attention_decode": attention_decode(),
    # the KV sequence in chunks combined at the end: ragged last chunk, more splits than tiles
    "attention_decode.splits3": attention_decode(8, 2, 200, 32, 3),
    "attention_decode.mha.splits7": attention_decode(4, 4, 33, 16, 7, -0.2),
    "attention_decode.group3.long": attention_decode(6, 2, 1000, 16, 4),
    # fewer keys than a tile (MQA), and one split of several tiles (MHA, ragged)
    "attention_decode.mqa.short": attention_decode(8, 1, 5, 64),
    "attention_decode.mha.splits1": attention_decode(4, 4, 150, 32, 1),
}


def _host(y):
    if hasattr(y, "detach"):
        y = y.detach().cpu()
        if str(y.dtype) in ("torch.bfloat16",) or "float8" in str(y.dtype):
            y = y.float()  # no NumPy dtype of its own
        return y.numpy()
    return np.asarray(y)


def compare(name: str, got, expected, tolerance) -> None:
    """Every element of `got` (an array or a tuple of them) against the reference; NaN (the
    poison of an element never written) fails. `tolerance` is (atol, rtol), atol relative to
    the reference's largest magnitude (at least 1), or an array: each element's own bound."""
    if isinstance(tolerance, np.ndarray):
        g, e = _host(got).astype("float64"), np.asarray(expected, dtype="float64")
        assert g.shape == e.shape, f"{name}: shape {g.shape}, reference {e.shape}"
        err = np.abs(g - e)
        bad = ~(err <= tolerance)  # NaN fails
        if bad.any():
            i = np.unravel_index(int(np.argmax(np.where(bad, err - tolerance, -np.inf))), g.shape)
            raise AssertionError(f"{name}: {int(bad.sum())} of {g.size} elements off the reference by more than "
                                 f"their bound; worst at {tuple(int(v) for v in i)}: got {g[i]!r}, reference {e[i]!r}, "
                                 f"bound {tolerance[i]:.3g}")
        return
    atol, rtol = tolerance
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected), f"{name}: {len(got)} outputs, the reference has {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        g = _host(g).astype("float64")
        e = np.asarray(e, dtype="float64")
        assert g.shape == e.shape, f"{name} output {i}: shape {g.shape}, reference {e.shape}"
        assert np.isfinite(g).all() or not np.isfinite(e).all(), f"{name} output {i}: non-finite values (unwritten?)"
        scale = max(1.0, float(np.abs(e).max())) if e.size else 1.0
        np.testing.assert_allclose(g, e, atol=atol * scale, rtol=rtol, err_msg=f"{name} output {i}")
