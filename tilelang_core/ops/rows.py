"""Row operators: softmax, log_softmax, layer_norm, rms_norm, add_rms_norm, cross_entropy,
quantize_per_token. Each works on rows of the last axis (other axes are moved there on the
host); a block owns `block_M` whole rows in registers (a fragment), reduces them with the
target's reductions (warp shuffles on GPUs) and writes once: one pass over memory. Math is in
float32 whatever the storage dtype.
"""
from __future__ import annotations

from .. import language as T
from .launch import OpError, aligned, check_dtype, contiguous, dtype_of, filled, kernel_for, library, target_for
from .registry import ConfigRule, Operator, get, register
from .rows_vector import cross_entropy_vector, norm_vector, quantize_vector, softmax_vector

__all__ = ["softmax", "log_softmax", "layer_norm", "rms_norm", "add_rms_norm", "cross_entropy",
           "quantize_per_token", "rows_of", "move_axis_last"]

FLOATS = ("float32", "float16", "bfloat16")
LOG2E = 1.4426950408889634
# the largest finite value of each quantized dtype
QMAX = {"int8": 127.0, "float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "float8_e4m3fnuz": 240.0,
        "float8_e5m2fnuz": 57344.0}
# the absmax a row's scale is computed from at least (a row of zeros, or of no elements)
MIN_ABSMAX = 1e-12

# A row lives in registers: `elems_per_thread` elements per thread at most, `max_row` elements
# per row at most (longer rows are refused with the reason).
ROW_TABLE = (
    ConfigRule("block-serial", {"block_M": 8, "threads": 1, "max_threads": 1, "elems_per_thread": 1 << 20,
                                "max_row": 1 << 16}),
    ConfigRule("simt", {"block_M": 4, "warps": 4, "max_warps": 16, "elems_per_thread": 16, "max_row": 16384}),
)
ROW_TUNE = {"block_M": (1, 2, 4, 8), "warps": (2, 4, 8)}
# softmax and the norms: on SIMT targets the 16-byte kernel of rows_vector.py (one row per
# block), which takes the register-tile kernel for rows that are not whole 16-byte pieces
VECTOR_ROW_TABLE = (
    ROW_TABLE[0],
    ConfigRule("simt", {"kernel": "vector", "block_M": 4, "warps": 4, "max_warps": 32, "elems_per_thread": 16,
                        "max_row": 16384, "vector_bytes": 16}),
)
VECTOR_ROW_TUNE = {"block_M": (1, 2, 4, 8), "warps": (1, 2, 4, 8), "elems_per_thread": (8, 16, 32)}
# cross_entropy: one row per block and 32 elements a thread (tuned on an H100, 8192 x 16384
# fp16 logits: 0.21 -> 0.11 ms against the softmax table's config)
CROSS_ENTROPY_TABLE = (
    ROW_TABLE[0],
    ConfigRule("simt", {**VECTOR_ROW_TABLE[1].config, "block_M": 1, "elems_per_thread": 32}),
)


def row_launch(problem: dict, config: dict) -> tuple[int, int]:
    """(block_M, threads) for rows of length N: at most `elems_per_thread` elements per
    thread, so a long row gets more threads (up to `max_threads`) and then fewer rows per
    block; a row too long for registers is refused."""
    N = problem["N"]
    if N > config["max_row"]:
        raise OpError(f"rows of {N} elements exceed this target's row kernel ({config['max_row']} "
                      f"elements per row in registers); split the axis or reduce it in pieces")
    threads, ept, block_M = config["threads"], config["elems_per_thread"], config["block_M"]
    while threads < config["max_threads"] and block_M * N > threads * ept:
        threads *= 2
    while block_M > 1 and block_M * N > threads * ept:
        block_M //= 2
    return block_M, min(threads, config["max_threads"])


class _Unset:
    """The default of an argument with two spellings: "not passed" (shown as `unset`)."""

    def __repr__(self) -> str:
        return "unset"


_UNSET = _Unset()


def torch_spelling(op: str, numpy_name: str, value, torch_name: str, torch_value, default):
    """One argument that NumPy spells `axis`/`keepdims` and torch `dim`/`keepdim`: either
    spelling works, both at once is an error naming the two. `value` is `_UNSET` when the
    caller did not pass the NumPy spelling."""
    if torch_value is _UNSET:
        return default if value is _UNSET else value
    if value is not _UNSET:
        raise TypeError(f"tilelang_core.ops.{op}: got both {numpy_name}={value!r} and {torch_name}={torch_value!r}; "
                        f"they name the same argument (NumPy's and torch's spelling): pass one")
    return torch_value


def move_axis_last(x, axis: int):
    """`x` with `axis` moved to the end, row-major (a copy only when the axis was not last)."""
    ndim = len(x.shape)
    if not -ndim <= axis < ndim:
        raise OpError(f"axis {axis} is out of range for an array of {ndim} dimensions")
    axis %= ndim
    if axis != ndim - 1:
        if library(x) == "torch":
            x = x.movedim(axis, -1)
        else:
            import numpy as np

            x = np.moveaxis(x, axis, -1)
    return contiguous(x)


def rows_of(x, axis: int = -1):
    """(x as (M, N) rows, the shape of x with `axis` last)."""
    x = aligned(move_axis_last(x, axis))
    n = int(x.shape[-1]) if len(x.shape) else 1
    m = 1
    for d in x.shape[:-1]:
        m *= int(d)
    return x.reshape(m, n), tuple(x.shape)


def restore_axis(y, shape, axis: int, ndim: int):
    y = y.reshape(shape)
    axis %= ndim
    if axis != ndim - 1:
        if library(y) == "torch":
            return y.movedim(-1, axis)
        import numpy as np

        return np.moveaxis(y, -1, axis)
    return y


# -- kernels --------------------------------------------------------------------------------


def _softmax_kernel(problem: dict, config: dict):
    M, N, dtype, log = problem["M"], problem["N"], problem["dtype"], problem["log"]
    bM, threads = row_launch(problem, config)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            x = T.alloc_fragment((bM, N), "float32")
            e = T.alloc_fragment((bM, N), "float32")
            row_max = T.alloc_fragment((bM,), "float32")
            row_sum = T.alloc_fragment((bM,), "float32")
            T.copy(X[bx * bM, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(bM, N):
                e[i, j] = T.exp2((x[i, j] - row_max[i]) * LOG2E)
            T.reduce_sum(e, row_sum, dim=1)
            for i, j in T.Parallel(bM, N):
                if log:
                    e[i, j] = x[i, j] - row_max[i] - T.log(row_sum[i])
                else:
                    e[i, j] = e[i, j] / row_sum[i]
            T.copy(e, Y[bx * bM, 0])

    return main


def _norm_kernel(problem: dict, config: dict):
    """layer_norm (centred, weight and bias) or rms_norm (weight), optionally after adding a
    residual (the sum is written too)."""
    M, N, dtype, kind, eps = problem["M"], problem["N"], problem["dtype"], problem["kind"], problem["eps"]
    residual = problem.get("residual", False)
    bM, threads = row_launch(problem, config)
    centred = kind == "layer"

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
             B: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype), S: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            x = T.alloc_fragment((bM, N), "float32")
            r = T.alloc_fragment((bM, N), "float32")
            sq = T.alloc_fragment((bM, N), "float32")
            mean = T.alloc_fragment((bM,), "float32")
            ssq = T.alloc_fragment((bM,), "float32")
            T.copy(X[bx * bM, 0], x)
            if residual:
                T.copy(R[bx * bM, 0], r)
                for i, j in T.Parallel(bM, N):
                    x[i, j] = x[i, j] + r[i, j]
                T.copy(x, S[bx * bM, 0])
            if centred:
                T.reduce_sum(x, mean, dim=1)
                for i, j in T.Parallel(bM, N):
                    x[i, j] = x[i, j] - mean[i] * (1.0 / N)
            for i, j in T.Parallel(bM, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ssq, dim=1)
            for i, j in T.Parallel(bM, N):
                if centred:
                    x[i, j] = x[i, j] * T.rsqrt(ssq[i] * (1.0 / N) + eps) * T.cast(W[j], "float32") \
                        + T.cast(B[j], "float32")
                else:
                    x[i, j] = x[i, j] * T.rsqrt(ssq[i] * (1.0 / N) + eps) * T.cast(W[j], "float32")
            T.copy(x, Y[bx * bM, 0])

    return main


def _cross_entropy_kernel(problem: dict, config: dict):
    """loss[i] = logsumexp(x[i, :]) - x[i, label[i]] (0 where label == ignore_index)."""
    M, N, dtype, ignore = problem["M"], problem["N"], problem["dtype"], problem["ignore_index"]
    bM, threads = row_launch(problem, config)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Labels: T.Tensor((M,), "int64"), Loss: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            x = T.alloc_fragment((bM, N), "float32")
            row_max = T.alloc_fragment((bM,), "float32")
            row_sum = T.alloc_fragment((bM,), "float32")
            T.copy(X[bx * bM, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(bM, N):
                x[i, j] = T.exp2((x[i, j] - row_max[i]) * LOG2E)
            T.reduce_sum(x, row_sum, dim=1)
            for i in T.Parallel(bM):
                if bx * bM + i < M:
                    label = Labels[bx * bM + i]
                    if label == ignore or label < 0 or label >= N:
                        Loss[bx * bM + i] = 0.0
                    else:
                        Loss[bx * bM + i] = T.log(row_sum[i]) + row_max[i] \
                            - T.cast(X[bx * bM + i, T.cast(label, "int32")], "float32")

    return main


def _quantize_kernel(problem: dict, config: dict):
    """Per-row scale = absmax / qmax (at least `min_scale`); q = x / scale, rounded for ints."""
    M, N, dtype, qdtype = problem["M"], problem["N"], problem["dtype"], problem["qdtype"]
    qmax = QMAX[qdtype]
    integer = qdtype == "int8"
    bM, threads = row_launch(problem, config)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), qdtype), Scale: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            x = T.alloc_fragment((bM, N), "float32")
            q = T.alloc_fragment((bM, N), qdtype)
            amax = T.alloc_fragment((bM,), "float32")
            T.copy(X[bx * bM, 0], x)
            T.reduce_absmax(x, amax, dim=1)
            for i in T.Parallel(bM):
                amax[i] = T.max(amax[i], MIN_ABSMAX) * (1.0 / qmax)
            for i, j in T.Parallel(bM, N):
                if integer:
                    q[i, j] = T.cast(T.clamp(T.round(x[i, j] / amax[i]), -qmax, qmax), qdtype)
                else:
                    q[i, j] = T.cast(T.clamp(x[i, j] / amax[i], -qmax, qmax), qdtype)
            T.copy(q, Q[bx * bM, 0])
            for i in T.Parallel(bM):
                if bx * bM + i < M:
                    Scale[bx * bM + i] = amax[i]

    return main


# -- references (NumPy, float64) ------------------------------------------------------------


def _np():
    import numpy as np

    return np


def _f64(x):
    return _np().asarray(x, dtype="float64")


def reference_softmax(x, axis=-1):
    np = _np()
    x = _f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def reference_log_softmax(x, axis=-1):
    np = _np()
    x = _f64(x)
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def reference_layer_norm(x, weight, bias, eps=1e-5):
    x = _f64(x)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / _np().sqrt(var + eps) * _f64(weight) + _f64(bias)


def reference_rms_norm(x, weight, eps=1e-6):
    x = _f64(x)
    return x / _np().sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * _f64(weight)


def reference_add_rms_norm(x, residual, weight, eps=1e-6):
    s = _f64(x) + _f64(residual)
    return reference_rms_norm(s, weight, eps), s


def reference_cross_entropy(logits, labels, ignore_index=-100):
    np = _np()
    x = _f64(logits)
    labels = np.asarray(labels).astype("int64")
    m = x.max(axis=-1)
    lse = np.log(np.exp(x - m[:, None]).sum(axis=-1)) + m
    picked = x[np.arange(x.shape[0]), np.clip(labels, 0, x.shape[1] - 1)]
    return np.where(labels == ignore_index, 0.0, lse - picked)


def reference_quantize_per_token(x, dtype="int8"):
    """(dequantized values q * scale, scale): comparing dequantized values checks q and scale."""
    np = _np()
    x = _f64(x)
    qmax = QMAX[dtype]
    scale = np.maximum(np.abs(x).max(axis=-1, initial=0.0), MIN_ABSMAX) / qmax
    q = x / scale[..., None]
    if dtype == "int8":
        q = np.clip(np.round(q), -qmax, qmax)
    return q * scale[..., None], scale


_ROWS = {"M": 4096, "N": 4096, "dtype": "float16"}


def _softmax_vector(problem, config):
    return softmax_vector(problem, config, _softmax_kernel)


def _norm_vector(problem, config):
    return norm_vector(problem, config, _norm_kernel)


_SOFTMAX_KERNELS = {"rows": _softmax_kernel, "vector": _softmax_vector}
_NORM_KERNELS = {"rows": _norm_kernel, "vector": _norm_vector}
register(Operator("softmax", "softmax over an axis", _SOFTMAX_KERNELS, VECTOR_ROW_TABLE, reference_softmax,
                  (1,), {**_ROWS, "log": False}, VECTOR_ROW_TUNE))
register(Operator("log_softmax", "log-softmax over an axis", _SOFTMAX_KERNELS, VECTOR_ROW_TABLE,
                  reference_log_softmax, (1,), {**_ROWS, "log": True}, VECTOR_ROW_TUNE))
register(Operator("layer_norm", "layer norm over the last axis, with weight and bias", _NORM_KERNELS,
                  VECTOR_ROW_TABLE, reference_layer_norm, (4, 5),
                  {**_ROWS, "kind": "layer", "eps": 1e-5, "residual": False}, VECTOR_ROW_TUNE))
register(Operator("rms_norm", "RMS norm over the last axis, with weight", _NORM_KERNELS, VECTOR_ROW_TABLE,
                  reference_rms_norm, (4, 5), {**_ROWS, "kind": "rms", "eps": 1e-6, "residual": False},
                  VECTOR_ROW_TUNE))
register(Operator("add_rms_norm", "RMS norm of x + residual (both returned), fused", _NORM_KERNELS,
                  VECTOR_ROW_TABLE, reference_add_rms_norm, (4, 5),
                  {**_ROWS, "kind": "rms", "eps": 1e-6, "residual": True}, VECTOR_ROW_TUNE))
def _cross_entropy_vector(problem, config):
    return cross_entropy_vector(problem, config, _cross_entropy_kernel)


def _quantize_vector(problem, config):
    return quantize_vector(problem, config, _quantize_kernel, QMAX[problem["qdtype"]])


register(Operator("cross_entropy", "cross-entropy of logits against integer labels, per row or reduced",
                  {"rows": _cross_entropy_kernel, "vector": _cross_entropy_vector}, CROSS_ENTROPY_TABLE,
                  reference_cross_entropy, (2,), {"M": 4096, "N": 8192, "dtype": "float16", "ignore_index": -100},
                  VECTOR_ROW_TUNE))
register(Operator("quantize_per_token", "per-row (token) absmax scaling to int8 / fp8, with the scales",
                  {"rows": _quantize_kernel, "vector": _quantize_vector}, VECTOR_ROW_TABLE,
                  reference_quantize_per_token, (1, 2), {**_ROWS, "qdtype": "float8_e4m3fn"}, VECTOR_ROW_TUNE))


# -- calls ----------------------------------------------------------------------------------


def _softmax(name: str, x, axis: int, target):
    dtype = check_dtype(name, "x", x, FLOATS)
    ndim = len(x.shape)
    if not all(x.shape):  # as torch: an empty input gives an empty result of its shape
        return filled(x, tuple(x.shape))
    rows, shape = rows_of(x, axis)
    problem = {"M": int(rows.shape[0]), "N": int(rows.shape[1]), "dtype": dtype, "log": name == "log_softmax"}
    kernel, _, _ = kernel_for(get(name), target_for([x], target, name), problem)
    return restore_axis(kernel(rows), shape, axis, ndim)


def softmax(x, axis: int = _UNSET, target=None, *, dim: int = _UNSET):
    """softmax of `x` over `axis` (default -1; torch's `dim=` also works), in float32, stored in
    x's dtype."""
    return _softmax("softmax", x, torch_spelling("softmax", "axis", axis, "dim", dim, -1), target)


def log_softmax(x, axis: int = _UNSET, target=None, *, dim: int = _UNSET):
    """log(softmax(x)) over `axis` (default -1; torch's `dim=` also works), computed stably
    (x - max - log(sum(exp(x - max))))."""
    return _softmax("log_softmax", x, torch_spelling("log_softmax", "axis", axis, "dim", dim, -1), target)


def _vector_arg(op: str, name: str, v, n: int, dtype: str):
    if v is None:
        return None
    if tuple(v.shape) != (n,):
        raise OpError(f"{op}: {name} has shape {tuple(v.shape)}; it must be ({n},), the last axis of x")
    if dtype_of(v) != dtype:
        raise OpError(f"{op}: {name} is {dtype_of(v)}, x is {dtype}; give them one dtype")
    return aligned(v)


def _norm(op: str, x, residual, weight, bias, eps: float, kind: str, target):
    dtype = check_dtype(op, "x", x, FLOATS)
    if not all(x.shape):  # as torch: an empty input gives empty results of its shape
        return filled(x, tuple(x.shape)), filled(x, tuple(x.shape))
    rows, shape = rows_of(x)
    m, n = (int(v) for v in rows.shape)
    weight = _vector_arg(op, "weight", weight, n, dtype)
    bias = _vector_arg(op, "bias", bias, n, dtype)
    res_rows = None
    if residual is not None:
        if tuple(residual.shape) != tuple(x.shape) or dtype_of(residual) != dtype:
            raise OpError(f"{op}: residual {tuple(residual.shape)} {dtype_of(residual)} must match x "
                          f"{tuple(x.shape)} {dtype}")
        res_rows = aligned(residual).reshape(m, n)
    problem = {"M": m, "N": n, "dtype": dtype, "kind": kind, "eps": float(eps), "residual": residual is not None}
    kernel, _, _ = kernel_for(get(op), target_for([x, weight], target, op), problem)
    y, s = kernel(rows, rows if res_rows is None else res_rows, weight, weight if bias is None else bias)
    return y.reshape(shape), s.reshape(shape)


def layer_norm(x, weight, bias, eps: float = 1e-5, target=None):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis (biased variance)."""
    return _norm("layer_norm", x, None, weight, bias, eps, "layer", target)[0]


def rms_norm(x, weight, eps: float = 1e-6, target=None):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    return _norm("rms_norm", x, None, weight, None, eps, "rms", target)[0]


def add_rms_norm(x, residual, weight, eps: float = 1e-6, target=None):
    """(rms_norm(x + residual) * weight, x + residual) in one pass, as transformer blocks use."""
    return _norm("add_rms_norm", x, residual, weight, None, eps, "rms", target)


def cross_entropy(logits, labels, reduction: str = "mean", ignore_index: int = -100, target=None):
    """Cross-entropy of `logits` (rows, classes) against `labels` (rows,), integer class
    indices; rows whose label is `ignore_index` count 0 and are left out of the mean.
    `reduction`: "none" (float32 per row), "sum" or "mean" (reduced by our `sum` operator)."""
    dtype = check_dtype("cross_entropy", "logits", logits, FLOATS)
    if len(logits.shape) != 2 or tuple(labels.shape) != tuple(logits.shape[:1]):
        raise OpError(f"cross_entropy: logits {tuple(logits.shape)} must be (rows, classes) and labels "
                      f"{tuple(labels.shape)} (rows,)")
    if reduction not in ("none", "sum", "mean"):
        raise OpError(f"cross_entropy: reduction {reduction!r} is not one of 'none', 'sum', 'mean'")
    check_dtype("cross_entropy", "labels", labels, ("int64", "int32"))
    labels = contiguous(labels.astype("int64") if library(labels) == "numpy" else labels.long())
    m, n = (int(v) for v in logits.shape)
    if not (m and n):
        return _cross_entropy_of_nothing(logits, labels, reduction, ignore_index)
    problem = {"M": m, "N": n, "dtype": dtype, "ignore_index": int(ignore_index)}
    kernel, _, _ = kernel_for(get("cross_entropy"), target_for([logits, labels], target, "cross_entropy"),
                              problem)
    loss = kernel(contiguous(logits), labels)
    if reduction == "none":
        return loss
    from .reduce import sum as reduce_sum

    total = reduce_sum(loss, axis=0)
    if reduction == "sum":
        return total
    counted = int((labels != ignore_index).sum())
    return total / max(counted, 1)


def _cross_entropy_of_nothing(logits, labels, reduction: str, ignore_index: int):
    """cross_entropy where `logits` has no rows or no classes, as torch gives it: no rows give
    an empty loss, a sum of 0 and a mean of NaN (0 / 0); rows without classes are an error
    unless every label is `ignore_index` (then each row's loss is 0)."""
    m, n = (int(v) for v in logits.shape)
    counted = int((labels != ignore_index).sum()) if m else 0
    if counted:
        raise OpError(f"cross_entropy: logits {tuple(logits.shape)} have no classes, so no label can index one "
                      f"({counted} labels are not ignore_index={ignore_index}; torch refuses them too); give "
                      "logits with at least one class")
    if reduction == "none":
        return filled(logits, (m,), dtype="float32")
    return filled(logits, (), 0.0 if reduction == "sum" else float("nan"), dtype="float32")


def quantize_per_token(x, dtype: str = "float8_e4m3fn", target=None):
    """Per-token (row of the last axis) quantization: (q, scale) with scale = absmax / qmax
    (float32, one per row) and q = x / scale in `dtype` ("float8_e4m3fn", "float8_e5m2", their
    "fnuz" forms on targets that have those, or "int8", rounded to nearest); x ~= q * scale."""
    xdtype = check_dtype("quantize_per_token", "x", x, FLOATS)
    if dtype not in QMAX:
        raise OpError(f"quantize_per_token: dtype {dtype!r} is not one of {', '.join(QMAX)}")
    tgt = target_for([x], target, "quantize_per_token")
    if not tgt.capabilities.supports_dtype(dtype):
        raise OpError(f"quantize_per_token: {tgt} has no {dtype} (its capability table lists "
                      f"{', '.join(tgt.capabilities.dtypes)}); use dtype='int8' there")
    rows, shape = rows_of(x)
    if not all(shape):  # a row of no elements has absmax 0, like a row of zeros
        return filled(x, shape, dtype=dtype), filled(x, shape[:-1], MIN_ABSMAX / QMAX[dtype], dtype="float32")
    problem = {"M": int(rows.shape[0]), "N": int(rows.shape[1]), "dtype": xdtype, "qdtype": dtype}
    kernel, _, _ = kernel_for(get("quantize_per_token"), tgt, problem)
    q, scale = kernel(rows)
    return q.reshape(shape), scale.reshape(shape[:-1])
