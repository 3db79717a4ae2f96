"""Kernels the run tests execute on the CPU backend: one per language construct."""
from tilelang_core import language as T


def gemm(M, N, K, bM, bN, bK, in_dtype, acc_dtype, out_dtype, trans_a=False, trans_b=False, stages=2):
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (bK, bM) if trans_a else (bM, bK)
    b_tile = (bN, bK) if trans_b else (bK, bN)

    @T.prim_func
    def main(A: T.Tensor(a_shape, in_dtype), B: T.Tensor(b_shape, in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared(a_tile, in_dtype)
            B_s = T.alloc_shared(b_tile, in_dtype)
            C_f = T.alloc_fragment((bM, bN), acc_dtype)
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if trans_a:
                    T.copy(A[ko * bK, by * bM], A_s)
                else:
                    T.copy(A[by * bM, ko * bK], A_s)
                if trans_b:
                    T.copy(B[bx * bN, ko * bK], B_s)
                else:
                    T.copy(B[ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def reduce(M, N, kind, dim, clear, block_M=8):
    out_n = block_M if dim == 1 else N
    out_shape = (M,) if dim == 1 else (T.ceildiv(M, block_M), N)
    fn = {"max": T.reduce_max, "min": T.reduce_min, "sum": T.reduce_sum,
          "abssum": T.reduce_abssum, "absmax": T.reduce_absmax}[kind]

    if dim == 1:
        @T.prim_func
        def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M,), "float32")):
            with T.Kernel(T.ceildiv(M, block_M), threads=32) as bx:
                x = T.alloc_fragment((block_M, N), "float32")
                y = T.alloc_fragment((block_M,), "float32")
                T.copy(X[bx * block_M, 0], x)
                T.copy(Y[bx * block_M], y)
                fn(x, y, dim=1, clear=clear)
                T.copy(y, Y[bx * block_M])
        return main

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor(out_shape, "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=32) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            y = T.alloc_fragment((N,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.copy(Y[bx, 0], y)
            fn(x, y, dim=0, clear=clear)
            T.copy(y, Y[bx, 0])
    return main


def cumsum(M, N, dim, reverse):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_shared((M, N), "float32")
            y = T.alloc_shared((M, N), "float32")
            T.copy(X, x)
            T.cumsum(x, y, dim=dim, reverse=reverse)
            T.copy(y, Y)
    return main


def atomic_split_k(M, N, K, bM, bN, bK, splits):
    """C += A @ B with K split over blocks, combined by T.atomic_add."""
    k_per = K // splits

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), splits, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((bM, bK), "float32")
            B_s = T.alloc_shared((bK, bN), "float32")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for ko in T.serial(T.ceildiv(k_per, bK)):
                T.copy(A[by * bM, bz * k_per + ko * bK], A_s)
                T.copy(B[bz * k_per + ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(bM, bN):
                if by * bM + i < M and bx * bN + j < N:
                    T.atomic_add(C[by * bM + i, bx * bN + j], C_f[i, j])
    return main


def symbolic_scale(block=64):
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor((n, 4), "float32"), Y: T.Tensor((n, 4), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            for i, j in T.Parallel(block, 4):
                if bx * block + i < n:
                    Y[bx * block + i, j] = X[bx * block + i, j] * 3.0 + 1.0
    return main


def elementwise(N, dtype, block=256):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            a = T.alloc_fragment((block,), dtype)
            b = T.alloc_fragment((block,), dtype)
            T.copy(A[bx * block], a)
            T.copy(B[bx * block], b)
            for i in T.Parallel(block):
                a[i] = a[i] * b[i] + a[i]
            T.copy(a, C[bx * block])
    return main


def copy_region(M, N):
    """Copy a slice region into a shared tile, then out transposed through T.Parallel."""
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((N, M), "float32")):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((M, N), "float32")
            T.copy(X[0:M, 0:N], s)
            for i, j in T.Parallel(N, M):
                Y[i, j] = s[j, i]
    return main


def math_ops(N, block=128):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Y[bx * block + i] = (T.exp(X[bx * block + i]) + T.log(T.abs(X[bx * block + i]) + 1.0)
                                         + T.sqrt(T.abs(X[bx * block + i])) + T.rsqrt(X[bx * block + i] * X[bx * block + i] + 1.0)
                                         + T.if_then_else(X[bx * block + i] > 0, 1.0, -1.0)
                                         + T.min(X[bx * block + i], 0.5) + T.exp2(X[bx * block + i]))
    return main


def alloc_var_count(N):
    """A per-block counter in T.alloc_var, run serially."""
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_var("float32")
            acc = 0.0
            for i in T.serial(N):
                if X[i] > 0:
                    acc = acc + X[i]
            Y[0] = acc
    return main


def printing(N):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((N,), "float32")
            T.copy(X, s)
            T.print(s, msg="tile")
            T.device_assert(s[0] < 1000.0, "value out of range")
            T.copy(s, Y)
    return main
