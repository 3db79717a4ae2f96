"""Issue 31, calls: every ready operator gives torch's result on empty inputs (an empty result
of the right shape and dtype, the identity of a reduction over nothing, zeros for a sum of
length 0) or, where torch refuses, an error naming the argument; never a kernel launched over
zero blocks. One test per operator family; the references are torch (CPU) and NumPy."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tilelang_core import ops
from tilelang_core.ops import OpError

torch = pytest.importorskip("torch")
F = torch.nn.functional
CPU = {"target": "cpu"}


def same(got, want):
    """`got` (a torch tensor or NumPy array) has `want`'s shape, dtype and values (NaN = NaN)."""
    want = want if isinstance(want, torch.Tensor) else torch.as_tensor(want)
    got_t = got if isinstance(got, torch.Tensor) else torch.from_numpy(np.asarray(got))
    assert tuple(got_t.shape) == tuple(want.shape), (tuple(got_t.shape), tuple(want.shape))
    assert got_t.dtype == want.dtype, (got_t.dtype, want.dtype)
    torch.testing.assert_close(got_t, want, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
def test_reductions_of_empty_inputs_follow_torch(cache_dir, kind):
    torch_kind = {"max": "amax", "min": "amin"}.get(kind, kind)
    for shape, axis, keepdims in [((0, 16), -1, False), ((4, 0), -1, False), ((4, 0), 1, True), ((0, 16), 0, False),
                                  ((2, 0, 3), 1, False), ((0, 16), None, False), ((4, 0), None, True)]:
        x = torch.zeros(shape)
        try:
            want = (getattr(x, torch_kind)(dim=axis, keepdim=keepdims) if axis is not None
                    else getattr(x, kind)().reshape((1,) * x.ndim if keepdims else ()))
        except (IndexError, RuntimeError):  # torch: max/min over no elements has no value
            where = "x has no elements" if axis is None else f"axis {axis} of x has length 0"
            with pytest.raises(OpError, match=rf"{kind}: {where} \(shape {re.escape(str(shape))}\).*no value"):
                getattr(ops, kind)(x, axis=axis, keepdims=keepdims, **CPU)
            continue
        same(getattr(ops, kind)(x, axis=axis, keepdims=keepdims, **CPU), want)
        same(getattr(ops, kind)(x.numpy(), axis=axis, keepdims=keepdims, **CPU), want)


def test_cumsum_and_topk_of_empty_inputs_follow_torch(cache_dir):
    for shape, axis in [((0, 16), -1), ((4, 0), -1), ((0, 3), 0), ((2, 0, 5), 2)]:
        x = torch.zeros(shape, dtype=torch.float16)
        same(ops.cumsum(x, axis=axis, **CPU), x.cumsum(axis))
        same(ops.cumsum(x, axis=axis, reverse=True, **CPU), x.cumsum(axis))
    for shape, k in [((0, 16), 2), ((4, 16), 0), ((4, 0), 0), ((2, 0, 7), 3)]:
        x = torch.zeros(shape)
        values, indices = ops.topk(x, k, **CPU)
        want_values, want_indices = x.topk(k)
        same(values, want_values)
        same(indices, want_indices)
        np_values, np_indices = ops.topk(x.numpy(), k, **CPU)
        assert np_values.shape == tuple(want_values.shape) and np_indices.dtype == np.int64


def test_row_ops_of_empty_inputs_follow_torch(cache_dir):
    logits, labels = torch.zeros(0, 10), torch.zeros(0, dtype=torch.long)
    for reduction in ("none", "sum", "mean"):  # mean over no rows is NaN (0 / 0), as torch
        same(ops.cross_entropy(logits, labels, reduction=reduction, **CPU),
             F.cross_entropy(logits, labels, reduction=reduction))
    ignored = torch.full((4,), -100)
    same(ops.cross_entropy(torch.zeros(4, 0), ignored, reduction="none", **CPU),
         F.cross_entropy(torch.zeros(4, 0), ignored, reduction="none"))
    with pytest.raises(OpError, match=r"cross_entropy: logits \(4, 0\) have no classes"):
        ops.cross_entropy(torch.zeros(4, 0), torch.zeros(4, dtype=torch.long), **CPU)
    reference = ops.get("quantize_per_token").reference
    for shape in [(0, 16), (4, 0), (2, 0, 8)]:
        x = np.zeros(shape, np.float32)
        q, scale = ops.quantize_per_token(x, "int8", **CPU)
        want_values, want_scale = reference(x, "int8")  # an empty row has absmax 0, like a row of zeros
        assert q.shape == shape and q.dtype == np.int8
        assert scale.shape == want_scale.shape and scale.dtype == np.float32
        np.testing.assert_allclose(scale, want_scale, rtol=1e-6)
    for op, x in [("layer_norm", torch.zeros(4, 0)), ("rms_norm", torch.zeros(0, 8))]:
        args = (torch.ones(x.shape[-1]), torch.zeros(x.shape[-1])) if op == "layer_norm" else (torch.ones(x.shape[-1]),)
        same(getattr(ops, op)(x, *args, **CPU), getattr(F, op)(x, x.shape[-1:], *args))


def test_gemm_family_of_empty_inputs_follows_torch(cache_dir):
    for a, b in [((0, 4, 5), (0, 5, 6)), ((2, 0, 5), (2, 5, 6)), ((2, 4, 0), (2, 0, 6))]:
        a, b = torch.zeros(a), torch.ones(b)
        same(ops.batched_gemm(a, b, **CPU), torch.bmm(a, b))
    grouped = ops.get("grouped_gemm").reference
    for rows, b_shape, sizes in [(0, (2, 8, 16), [0, 0]), (4, (2, 8, 0), [1, 3]), (4, (2, 0, 16), [2, 2]),
                                 (0, (0, 8, 16), [])]:
        a, b = np.ones((rows, b_shape[1]), np.float32), np.ones(b_shape, np.float32)
        same(ops.grouped_gemm(a, b, sizes, **CPU), grouped(a, b, sizes).astype(np.float32))
    for x_shape, n in [((0, 64), 16), ((2, 64), 0), ((2, 0), 16), ((0,), 16)]:
        x = torch.ones(x_shape)
        k = x_shape[-1]
        w, scales = torch.ones(n, k, dtype=torch.int8), torch.ones(n, 1)
        same(ops.dequantize_gemv(x, w, scales, **CPU), x @ w.float().T)
    x, w = torch.ones(0, 3, 8, 8), torch.ones(4, 3, 3, 3)
    same(ops.conv2d(x, w, padding=1, **CPU), F.conv2d(x, w, padding=1))
    conv = ops.get("conv2d").reference  # torch gives (2, 0, 6, 6) for C = 0: the sum over nothing is 0
    for x_shape, w_shape, padding in [((2, 0, 8, 8), (4, 0, 3, 3), 0), ((2, 3, 0, 8), (4, 3, 1, 1), 1)]:
        x, w = np.ones(x_shape, np.float32), np.ones(w_shape, np.float32)
        same(ops.conv2d(x, w, padding=padding, **CPU), conv(x, w, padding=padding).astype(np.float32))
    with pytest.raises(OpError, match=r"conv2d: weight \(0, 3, 3, 3\) has no output channels"):
        ops.conv2d(torch.ones(2, 3, 8, 8), torch.ones(0, 3, 3, 3), **CPU)


def test_attention_of_empty_inputs_follows_torch(cache_dir):
    def sdpa(q, k, v, causal=False):
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal).half()

    half = {"dtype": torch.float16}
    for q, kv in [((0, 2, 4, 16), (0, 2, 8, 16)), ((1, 2, 0, 16), (1, 2, 8, 16)), ((1, 2, 4, 16), (1, 2, 0, 16)),
                  ((1, 4, 3, 16), (1, 2, 0, 16))]:
        q, k = torch.ones(q, **half), torch.ones(kv, **half)
        v = torch.ones(kv, **half)
        want = sdpa(q, k.repeat_interleave(q.shape[1] // k.shape[1], 1), v.repeat_interleave(q.shape[1] // k.shape[1], 1))
        same(ops.flash_attention(q, k, v, **CPU), want)
    for b, hq, hkv, s in [(0, 2, 2, 8), (2, 2, 2, 0), (2, 4, 2, 0)]:  # decode: a cache without keys gives 0
        q, k, v = torch.ones(b, hq, 16, **half), torch.ones(b, hkv, s, 16, **half), torch.ones(b, hkv, s, 16, **half)
        rep = hq // hkv
        want = sdpa(q[:, :, None], k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1))[:, :, 0]
        same(ops.attention_decode(q, k, v, **CPU), want)
    for cu_q, cu_k, total_q, total_k in [([0], [0], 0, 0), ([0, 0, 0], [0, 0, 0], 0, 0), ([0, 3], [0, 0], 3, 0)]:
        q = torch.ones(total_q, 2, 16, **half)
        k, v = torch.ones(total_k, 2, 16, **half), torch.ones(total_k, 2, 16, **half)
        out = ops.flash_attention_varlen(q, k, v, torch.tensor(cu_q, dtype=torch.int32),
                                         torch.tensor(cu_k, dtype=torch.int32), max(np.diff(cu_q), default=0), **CPU)
        # packed (total, heads, dim): each sequence as SDPA's (1, heads, seq, dim)
        want = sdpa(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None])[0].transpose(0, 1)
        same(out, want)
    with pytest.raises(OpError, match="cu_seqlens_q and cu_seqlens_k are empty"):
        empty = torch.zeros(0, dtype=torch.int32)
        ops.flash_attention_varlen(torch.ones(0, 2, 16, **half), torch.ones(0, 2, 16, **half),
                                   torch.ones(0, 2, 16, **half), empty, empty, 0, **CPU)
