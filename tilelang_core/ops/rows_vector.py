"""Row kernels for SIMT targets with 16-byte accesses: softmax / log_softmax, the norms and
the reductions over the last axis.

One row per block. Thread t holds the 16-byte pieces t, t + threads, t + 2*threads, ... of its
row in registers (consecutive threads on consecutive pieces: coalesced), reduces its own
elements, and the block combines the per-thread partials with a fragment reduction (warp
shuffles, then shared memory between warps). The row is read once and written once.

The kernels need the row length to be a multiple of a piece (16 bytes) so every row starts
aligned; other lengths take the register-tile kernel of `rows.py`, which the builders here
fall back to.
"""
from __future__ import annotations

from .. import language as T

__all__ = ["vector_launch", "softmax_vector", "norm_vector", "reduce_vector", "cross_entropy_vector",
           "quantize_vector"]

LOG2E = 1.4426950408889634


def vector_launch(problem: dict, config: dict) -> tuple[int, int, int] | None:
    """(lanes per piece, threads, pieces per thread) for rows of N elements, or None when the
    row length is not a whole number of 16-byte pieces (or too long for registers)."""
    from ..ir import dtype_bytes

    N = problem["N"]
    lanes = max(1, config["vector_bytes"] // dtype_bytes(problem["dtype"]))
    if N % lanes or N > config["max_row"]:
        return None
    pieces = N // lanes
    threads = config["threads"]
    while threads < config["max_threads"] and pieces > threads * (config["elems_per_thread"] // lanes):
        threads *= 2
    return lanes, threads, -(-pieces // threads)


def softmax_vector(problem: dict, config: dict, fallback):
    launch = vector_launch(problem, config)
    if launch is None:
        return fallback(problem, config)
    M, N, dtype, log = problem["M"], problem["N"], problem["dtype"], problem["log"]
    vec, threads, per = launch

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as bx:
            raw = T.alloc_local((per * vec,), dtype)
            xf = T.alloc_local((per * vec,), "float32")
            acc = T.alloc_local((1,), "float32")
            part = T.alloc_fragment((1, threads), "float32")
            row_max = T.alloc_fragment((1,), "float32")
            row_sum = T.alloc_fragment((1,), "float32")
            for t in T.Parallel(threads):
                acc[0] = -T.infinity("float32")
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        raw[T.Ramp(p * vec, 1, vec)] = X[bx, T.Ramp((p * threads + t) * vec, 1, vec)]
                        for v in T.unroll(vec):
                            xf[p * vec + v] = T.cast(raw[p * vec + v], "float32")
                            acc[0] = T.max(acc[0], xf[p * vec + v])
                part[0, t] = acc[0]
            T.reduce_max(part, row_max, dim=1)
            for t in T.Parallel(threads):
                acc[0] = 0.0
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        for v in T.unroll(vec):
                            acc[0] = acc[0] + T.exp2((xf[p * vec + v] - row_max[0]) * LOG2E)
                part[0, t] = acc[0]
            T.reduce_sum(part, row_sum, dim=1)
            for t in T.Parallel(threads):
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        for v in T.unroll(vec):
                            if log:
                                raw[p * vec + v] = T.cast(xf[p * vec + v] - row_max[0] - T.log(row_sum[0]), dtype)
                            else:
                                raw[p * vec + v] = T.cast(T.exp2((xf[p * vec + v] - row_max[0]) * LOG2E)
                                                          / row_sum[0], dtype)
                        Y[bx, T.Ramp((p * threads + t) * vec, 1, vec)] = raw[T.Ramp(p * vec, 1, vec)]

    return main


def norm_vector(problem: dict, config: dict, fallback):
    """layer_norm / rms_norm, with an optional residual added first (the sum written too)."""
    launch = vector_launch(problem, config)
    if launch is None:
        return fallback(problem, config)
    M, N, dtype, kind, eps = problem["M"], problem["N"], problem["dtype"], problem["kind"], problem["eps"]
    residual = problem.get("residual", False)
    centred = kind == "layer"
    vec, threads, per = launch

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
             B: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype), S: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as bx:
            raw = T.alloc_local((per * vec,), dtype)
            other = T.alloc_local((per * vec,), dtype)
            xf = T.alloc_local((per * vec,), "float32")
            acc = T.alloc_local((1,), "float32")
            part = T.alloc_fragment((1, threads), "float32")
            mean = T.alloc_fragment((1,), "float32")
            ssq = T.alloc_fragment((1,), "float32")
            for t in T.Parallel(threads):
                acc[0] = 0.0
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        raw[T.Ramp(p * vec, 1, vec)] = X[bx, T.Ramp((p * threads + t) * vec, 1, vec)]
                        if residual:
                            other[T.Ramp(p * vec, 1, vec)] = R[bx, T.Ramp((p * threads + t) * vec, 1, vec)]
                        for v in T.unroll(vec):
                            if residual:
                                xf[p * vec + v] = T.cast(raw[p * vec + v], "float32") \
                                    + T.cast(other[p * vec + v], "float32")
                                raw[p * vec + v] = T.cast(xf[p * vec + v], dtype)
                            else:
                                xf[p * vec + v] = T.cast(raw[p * vec + v], "float32")
                            acc[0] = acc[0] + xf[p * vec + v]
                        if residual:
                            S[bx, T.Ramp((p * threads + t) * vec, 1, vec)] = raw[T.Ramp(p * vec, 1, vec)]
                part[0, t] = acc[0]
            T.reduce_sum(part, mean, dim=1)
            for t in T.Parallel(threads):
                acc[0] = 0.0
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        for v in T.unroll(vec):
                            if centred:
                                xf[p * vec + v] = xf[p * vec + v] - mean[0] * (1.0 / N)
                            acc[0] = acc[0] + xf[p * vec + v] * xf[p * vec + v]
                part[0, t] = acc[0]
            T.reduce_sum(part, ssq, dim=1)
            for t in T.Parallel(threads):
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        other[T.Ramp(p * vec, 1, vec)] = W[T.Ramp((p * threads + t) * vec, 1, vec)]
                        for v in T.unroll(vec):
                            xf[p * vec + v] = xf[p * vec + v] * T.rsqrt(ssq[0] * (1.0 / N) + eps) \
                                * T.cast(other[p * vec + v], "float32")
                        if centred:
                            other[T.Ramp(p * vec, 1, vec)] = B[T.Ramp((p * threads + t) * vec, 1, vec)]
                        for v in T.unroll(vec):
                            if centred:
                                raw[p * vec + v] = T.cast(xf[p * vec + v] + T.cast(other[p * vec + v], "float32"), dtype)
                            else:
                                raw[p * vec + v] = T.cast(xf[p * vec + v], dtype)
                        Y[bx, T.Ramp((p * threads + t) * vec, 1, vec)] = raw[T.Ramp(p * vec, 1, vec)]

    return main


def reduce_vector(problem: dict, config: dict, fallback):
    """sum / mean / max / min of each row, one row per block, rows of any length that is a
    whole number of 16-byte pieces: each thread folds its pieces as they arrive (nothing kept),
    then the block combines the threads' partials."""
    from ..ir import dtype_bytes

    M, N, dtype, kind = problem["M"], problem["N"], problem["dtype"], problem["kind"]
    out_dtype = problem.get("out_dtype", dtype)
    vec = max(1, config["vector_bytes"] // dtype_bytes(dtype))
    if N % vec:
        return fallback(problem, config)
    threads = config["threads"]
    steps = -(-(N // vec) // threads)
    walk = T.unroll if steps <= 8 else T.serial  # unrolled: the loads of a thread are in flight together
    init = {"sum": 0.0, "mean": 0.0, "max": -T.infinity("float32"), "min": T.infinity("float32")}[kind]
    reducer = {"sum": T.reduce_sum, "mean": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min}[kind]
    scale = 1.0 / N if kind == "mean" else 1.0

    def fold(a, b):
        if kind == "max":
            return T.max(a, b)
        if kind == "min":
            return T.min(a, b)
        return a + b

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), out_dtype)):
        with T.Kernel(M, threads=threads) as bx:
            raw = T.alloc_local((vec,), dtype)
            acc = T.alloc_local((1,), "float32")
            part = T.alloc_fragment((1, threads), "float32")
            total = T.alloc_fragment((1,), "float32")
            for t in T.Parallel(threads):
                acc[0] = init
                for p in walk(steps):
                    if (p * threads + t) * vec < N:
                        raw[T.Ramp(0, 1, vec)] = X[bx, T.Ramp((p * threads + t) * vec, 1, vec)]
                        for v in T.unroll(vec):
                            acc[0] = fold(acc[0], T.cast(raw[v], "float32"))
                part[0, t] = acc[0]
            reducer(part, total, dim=1)
            for t in T.Parallel(threads):
                if t == 0:
                    Y[bx] = T.cast(total[0] * scale, out_dtype)

    return main


def cross_entropy_vector(problem: dict, config: dict, fallback):
    """loss[i] = logsumexp(x[i, :]) - x[i, label[i]] (0 where label is ignore_index or out of
    range), one row per block: the row's maximum and sum of exponentials as in softmax."""
    launch = vector_launch(problem, config)
    if launch is None:
        return fallback(problem, config)
    M, N, dtype, ignore = problem["M"], problem["N"], problem["dtype"], problem["ignore_index"]
    vec, threads, per = launch

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Labels: T.Tensor((M,), "int64"), Loss: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=threads) as bx:
            raw = T.alloc_local((per * vec,), dtype)
            acc = T.alloc_local((1,), "float32")
            part = T.alloc_fragment((1, threads), "float32")
            row_max = T.alloc_fragment((1,), "float32")
            row_sum = T.alloc_fragment((1,), "float32")
            for t in T.Parallel(threads):
                acc[0] = -T.infinity("float32")
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        raw[T.Ramp(p * vec, 1, vec)] = X[bx, T.Ramp((p * threads + t) * vec, 1, vec)]
                        for v in T.unroll(vec):
                            acc[0] = T.max(acc[0], T.cast(raw[p * vec + v], "float32"))
                part[0, t] = acc[0]
            T.reduce_max(part, row_max, dim=1)
            for t in T.Parallel(threads):
                acc[0] = 0.0
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        for v in T.unroll(vec):
                            acc[0] = acc[0] + T.exp2((T.cast(raw[p * vec + v], "float32") - row_max[0]) * LOG2E)
                part[0, t] = acc[0]
            T.reduce_sum(part, row_sum, dim=1)
            for t in T.Parallel(threads):
                if t == 0:
                    label = Labels[bx]
                    if label == ignore or label < 0 or label >= N:
                        Loss[bx] = 0.0
                    else:
                        Loss[bx] = T.log(row_sum[0]) + row_max[0] - T.cast(X[bx, T.cast(label, "int32")], "float32")

    return main


def quantize_vector(problem: dict, config: dict, fallback, qmax: float):
    """Per-row absmax scaling: scale = max(|x|) / qmax, q = x / scale (rounded for int8)."""
    launch = vector_launch(problem, config)
    if launch is None:
        return fallback(problem, config)
    M, N, dtype, qdtype = problem["M"], problem["N"], problem["dtype"], problem["qdtype"]
    integer = qdtype == "int8"
    vec, threads, per = launch

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), qdtype), Scale: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=threads) as bx:
            raw = T.alloc_local((per * vec,), dtype)
            q = T.alloc_local((vec,), qdtype)
            acc = T.alloc_local((1,), "float32")
            part = T.alloc_fragment((1, threads), "float32")
            amax = T.alloc_fragment((1,), "float32")
            for t in T.Parallel(threads):
                acc[0] = 0.0
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        raw[T.Ramp(p * vec, 1, vec)] = X[bx, T.Ramp((p * threads + t) * vec, 1, vec)]
                        for v in T.unroll(vec):
                            acc[0] = T.max(acc[0], T.abs(T.cast(raw[p * vec + v], "float32")))
                part[0, t] = acc[0]
            T.reduce_max(part, amax, dim=1)
            for t in T.Parallel(threads):
                for p in T.unroll(per):
                    if (p * threads + t) * vec < N:
                        for v in T.unroll(vec):
                            if integer:
                                q[v] = T.cast(T.clamp(T.round(T.cast(raw[p * vec + v], "float32")
                                                              / (T.max(amax[0], 1e-12) * (1.0 / qmax))), -qmax, qmax),
                                              qdtype)
                            else:
                                q[v] = T.cast(T.clamp(T.cast(raw[p * vec + v], "float32")
                                                      / (T.max(amax[0], 1e-12) * (1.0 / qmax)), -qmax, qmax), qdtype)
                        Q[bx, T.Ramp((p * threads + t) * vec, 1, vec)] = q[T.Ramp(0, 1, vec)]
                if t == 0:
                    Scale[bx] = T.max(amax[0], 1e-12) * (1.0 / qmax)

    return main


def cumsum_vector(problem: dict, config: dict, fallback):
    """Inclusive prefix sums of each row (from the end when `reverse`), one row per block, in
    float32. The row is read in segments of threads x 16 bytes: thread t scans its own 16-byte
    piece t of the segment in registers, a scan of the threads' piece totals in shared memory
    (log2(threads) doubling steps) gives each piece the sum before it, and a running carry in
    a register joins the segments. One read and one write of the row, both 16 bytes a thread.
    Rows that are no whole number of pieces take `fallback`."""
    from ..ir import dtype_bytes

    M, N, dtype, reverse = problem["M"], problem["N"], problem["dtype"], problem["reverse"]
    vec = max(1, config["vector_bytes"] // dtype_bytes(dtype))
    if N % vec:
        return fallback(problem, config)
    pieces = N // vec
    threads = 32
    while threads < config["max_threads"] and threads < pieces:
        threads *= 2
    segments = -(-pieces // threads)
    steps = threads.bit_length() - 1
    last = steps % 2  # the half of `part` holding the scanned totals

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as bx:
            raw = T.alloc_local((vec,), dtype)
            xf = T.alloc_local((vec,), "float32")
            carry = T.alloc_local((1,), "float32")
            part = T.alloc_shared((2, threads), "float32")
            for t in T.Parallel(threads):
                carry[0] = 0.0
            for s in T.serial(segments):
                seg = (segments - 1 - s) if reverse else s
                for t in T.Parallel(threads):
                    if (seg * threads + t) * vec < N:
                        raw[T.Ramp(0, 1, vec)] = X[bx, T.Ramp((seg * threads + t) * vec, 1, vec)]
                        for v in T.unroll(vec):
                            xf[v] = T.cast(raw[v], "float32")
                        for v in T.unroll(vec - 1):
                            if reverse:
                                xf[vec - 2 - v] = xf[vec - 2 - v] + xf[vec - 1 - v]
                            else:
                                xf[v + 1] = xf[v + 1] + xf[v]
                        part[0, t] = xf[0] if reverse else xf[vec - 1]
                    else:
                        part[0, t] = 0.0
                for d in T.unroll(steps):
                    for t in T.Parallel(threads):
                        if reverse:
                            part[(d + 1) % 2, t] = part[d % 2, t] + T.if_then_else(
                                t + (1 << d) < threads, part[d % 2, T.min(t + (1 << d), threads - 1)], 0.0)
                        else:
                            part[(d + 1) % 2, t] = part[d % 2, t] + T.if_then_else(
                                t >= (1 << d), part[d % 2, T.max(t - (1 << d), 0)], 0.0)
                for t in T.Parallel(threads):
                    if (seg * threads + t) * vec < N:
                        for v in T.unroll(vec):
                            # the pieces before this one: the scanned total less this piece's own
                            raw[v] = T.cast(xf[v] + carry[0] + part[last, t] - (xf[0] if reverse else xf[vec - 1]),
                                            dtype)
                        Y[bx, T.Ramp((seg * threads + t) * vec, 1, vec)] = raw[T.Ramp(0, 1, vec)]
                    carry[0] = carry[0] + part[last, 0 if reverse else threads - 1]

    return main
