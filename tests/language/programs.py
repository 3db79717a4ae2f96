"""TileLang programs the language tests parse: written as for TileLang, imports changed."""
import tilelang_core as tilelang  # noqa: F401  (as a TileLang user would import it)
from tilelang_core import language as T


def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)  # marker: copy A
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)  # marker: gemm
            for i, j in T.Parallel(block_M, block_N):  # marker: parallel
                C_local[i, j] = T.max(C_local[i, j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def matmul_transposed(M, N, K, block_M, block_N, block_K):
    """C = A^T @ B^T, with A stored (K, M) and B stored (N, K)."""

    @T.prim_func
    def main(A: T.Tensor((K, M), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=(32, 4)) as (bx, by):
            A_shared = T.alloc_shared((block_K, block_M), "float16")
            B_shared = T.alloc_shared((block_N, block_K), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2, order=[0, 1, 2], stage=[0, 0, 1]):
                T.copy(A[ko * block_K, by * block_M], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=True, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def softmax(M, N, block_M):
    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp2((x[i, j] - row_max[i]) * scale)
            T.reduce_sum(x, row_sum, dim=-1, clear=False)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


def elementwise_add(N, block=256):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


def symbolic_copy(block=32):
    m = T.symbolic("m")

    @T.prim_func
    def main(A: T.Tensor((m, 64), "float16"), B: T.Tensor((m, 64), "float16")):
        with T.Kernel(T.ceildiv(m, block), threads=128) as bx:
            S = T.alloc_shared((block, 64), "float16")
            T.copy(A[bx * block, 0], S)
            T.copy(S, B[bx * block:bx * block + block, 0:64])

    return main


def atomic_accumulate(M, N, block):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((block, block), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), 2, threads=128) as (bx, by, bz):
            tile = T.alloc_fragment((block, block), "float32")
            T.copy(A[by * block, bx * block], tile)
            for i, j in T.Parallel(block, block):
                T.atomic_add(C[i, j], tile[i, j])  # marker: atomic_elem
            T.atomic_max(C[0, 0], tile)
            T.atomic_min(C[0:block, 0:block], tile)

    return main


def debug_ops(N):
    @T.prim_func
    def main(A: T.Tensor((N, N), "float32"), B: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_fragment((N, N), "float32")
            T.copy(A, tile)
            tx = T.get_thread_binding(0)
            T.device_assert(tx < 128, "too many threads")
            T.print(tile, msg="tile")
            T.print(tx)
            T.cumsum(tile, dim=1)
            T.cumsum(tile, B, dim=-2, reverse=True)

    return main


def scalar_vars(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), B: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            total = T.alloc_var("int32", init=0)
            count = T.alloc_var(T.int32)
            count = 0
            for i in T.serial(N):
                total = total + A[i]
                count += 1
            if total > 0:
                B[0] = total * count

    return main


def layouts():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            R = T.alloc_shared((64, 64), "float16")
            T.annotate_layout({
                S: T.make_swizzled_layout(S),
                R: T.Layout((64, 64), lambda i, j: (i, j ^ (i % 8))),
            })
            T.copy(A, S)
            T.copy(S, R)
            T.copy(R, B)

    return main


def loop_kinds(N):
    @T.prim_func
    def main(A: T.Tensor((N, N), "float32"), n: T.int32):
        with T.Kernel(1, threads=128) as bx:
            L = T.alloc_local((8,), "float32")
            for i in T.unroll(8):
                L[i] = T.float32(0)
            for i in T.vectorized(8):
                L[i] = L[i] + T.float32(1.0)
            for i, j in T.grid(4, 4):
                A[i, j] = L[i]
            for k in T.Pipelined(1, n, num_stages=2):
                A[k, 0] = T.cast(k, "float32")
            for i in T.serial(0, N, 2):
                A[i, 1] = T.if_then_else(i > 2, A[i, 0], T.infinity("float32"))

    return main


ALL_PROGRAMS = {
    "matmul": lambda: matmul(1024, 1024, 1024, 128, 128, 32),
    "matmul_transposed": lambda: matmul_transposed(256, 256, 256, 64, 64, 32),
    "softmax": lambda: softmax(256, 128, 16),
    "elementwise_add": lambda: elementwise_add(4096),
    "symbolic_copy": symbolic_copy,
    "atomic_accumulate": lambda: atomic_accumulate(256, 256, 32),
    "debug_ops": lambda: debug_ops(16),
    "scalar_vars": lambda: scalar_vars(128),
    "layouts": layouts,
    "loop_kinds": lambda: loop_kinds(64),
}


def line_of(marker: str) -> int:
    """The line of this file that holds `marker`."""
    with open(__file__) as source:
        hits = [n for n, text in enumerate(source, 1) if marker in text]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]
