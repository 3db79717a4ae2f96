"""The shared C-family printer, through the base class and a toy GPU-like dialect: launch
facts, dynamic shared memory packing, names, literals, precedence, errors, and a syntax check
of the output with the host C compiler (GPU qualifiers stubbed by a small shim)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
import tvm
from tvm import tirx
from tvm.script import tirx as T

from tilelang_core.codegen import CodegenError, CStyleCodegen, GPUCodegen, builtins
from tilelang_core.runtime import eval_launch_expr


class ToyGPUCodegen(GPUCodegen):
    """A dialect as a backend would write one: attributes first, one hook."""

    language = "toy"
    kernel_prefix = "__global__ "
    barrier = "__syncthreads();"
    math_ops = {**CStyleCodegen.math_ops, "rsqrt": {"float32": "rsqrtf({0})"}}

    def launch_bounds(self, launch):
        threads = 1
        for extent in launch.block:
            if not isinstance(extent, int):
                return ""
            threads *= extent
        return f"__launch_bounds__({threads}) "


SHIM = r"""
#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
typedef struct { int x, y, z; } toy_dim3;
static toy_dim3 blockIdx, threadIdx;
#define __global__
#define __shared__
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(n)
#define __syncthreads() ((void)0)
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define atomicAdd(p, v) (*(p) += (v))
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
"""


def syntax_check(source: str, tmp_path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler for the syntax check")
    (tmp_path / "shim.h").write_text(SHIM)
    (tmp_path / "k.c").write_text(source)
    proc = subprocess.run([cc, "-fsyntax-only", "-std=gnu11", "-Werror=implicit-function-declaration",
                           "-include", str(tmp_path / "shim.h"), str(tmp_path / "k.c")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + "\n" + source


# ---------------------------------------------------------------------------------------------


@T.prim_func
def tiled(A: T.Buffer((256, 64), "float32"), B: T.Buffer((256,), "float32"), C: T.Buffer((256, 64), "float32")):
    bx = T.launch_thread("blockIdx.x", 4)
    tx = T.launch_thread("threadIdx.x", 64)
    A_shared = T.alloc_buffer((64, 65), "float32", scope="shared.dyn")
    flags = T.alloc_buffer((3,), "int8", scope="shared.dyn")
    B_shared = T.alloc_buffer((64,), "float32", scope="shared.dyn")
    S = T.alloc_buffer((64,), "float32", scope="shared")
    acc = T.alloc_buffer((4,), "float32", scope="local")
    for i in range(64):
        A_shared[i, tx] = A[bx * 64 + i, tx]
    flags[0] = T.int8(1)
    B_shared[tx] = B[bx * 64 + tx]
    S[tx] = B_shared[tx]
    T.evaluate(T.call_intrin("int32", "tl.sync_threads"))
    for j in T.unroll(4):
        acc[j] = A_shared[tx, j] * T.rsqrt(S[j])
    for i in range(64):
        C[bx * 64 + i, tx] = acc[i % 4] + T.Cast("float32", flags[0])
    T.evaluate(T.call_intrin("float32", "tl.atomic_add", C[0, 0], T.float32(1)))


def test_launch_and_dynamic_shared_memory(tmp_path):
    ks = ToyGPUCodegen().render(tiled)
    assert ks.grid == (4, 1, 1) and ks.block == (64, 1, 1)
    offsets = ks.extra["dyn_shared_offsets"]
    assert offsets == {"A_shared": 0, "flags": 64 * 65 * 4, "B_shared": 16768}  # 16640 + 3 -> 16768
    assert all(off % 128 == 0 for off in offsets.values())
    assert ks.shared_memory == offsets["B_shared"] + 64 * 4
    src = ks.source
    assert "extern __shared__ __align__(128) unsigned char tl_dyn_smem[];" in src
    assert "float* A_shared = (float*)(tl_dyn_smem + 0);" in src
    assert "__shared__ float S[64];" in src
    assert "float acc[4];" in src
    assert "int32_t tx = threadIdx.x;" in src and "int32_t bx = blockIdx.x;" in src
    assert "__syncthreads();" in src and "#pragma unroll" in src
    assert "__launch_bounds__(64) __global__ void tiled(" in src
    assert "const float* __restrict__ A" in src and "float* __restrict__ C" in src
    assert "rsqrtf(S[j])" in src and "atomicAdd(&C[0], 1.0f)" in src
    syntax_check(src, tmp_path)


@T.prim_func
def symbolic(a: T.handle, b: T.handle, m: T.int32, n: T.int32):
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m, n), "float32")
    bx = T.launch_thread("blockIdx.x", (n + 31) // 32)
    by = T.launch_thread("blockIdx.y", T.max(T.min(m, 100) - 1, 1))
    bz = T.launch_thread("blockIdx.z", m % 3 + 1)
    tx = T.launch_thread("threadIdx.x", 32)
    if bx * 32 + tx < n and by < m:
        B[by, bx * 32 + tx] = A[by, bx * 32 + tx]


def test_symbolic_launch_expressions():
    ks = ToyGPUCodegen().render(symbolic)
    assert ks.grid[0] == "(n + 31) // 32"
    assert ks.extra["launch_params"] == {"m": 2, "n": 3}
    for m, n in [(1, 1), (7, 33), (100, 64), (250, 1000)]:
        values = {"m": m, "n": n}
        assert eval_launch_expr(ks.grid[0], values) == -(-n // 32)
        assert eval_launch_expr(ks.grid[1], values) == max(min(m, 100) - 1, 1)
        assert eval_launch_expr(ks.grid[2], values) == m % 3 + 1
    params = ks.extra["params"]
    assert params[0]["shape"] == ("m", "n") and params[2] == {"name": "m", "kind": "scalar", "dtype": "int32",
                                                             "shape": (), "strides": None}
    assert "B[bx * 32 + by * n + tx] = A[bx * 32 + by * n + tx];" in ks.source


@T.prim_func
def strided(A: T.Buffer((8, 8), "float32", strides=(16, 1), elem_offset=4), B: T.Buffer((8, 8), "float32")):
    bx = T.launch_thread("blockIdx.x", 8)
    for j in range(8):
        B[bx, j] = A[bx, j]


def test_strides_and_elem_offset():
    ks = ToyGPUCodegen().render(strided)
    assert "B[bx * 8 + j] = A[bx * 16 + j + 4];" in ks.source
    assert ks.extra["params"][0]["strides"] == (16, 1)


@T.prim_func
def keywords(int: T.Buffer((4,), "float32"), double: T.Buffer((4,), "float32"), register: T.int32):
    bx = T.launch_thread("blockIdx.x", 1)
    for i in range(2):
        int[i] = double[i]
    for i in range(2):
        int[i + 2] = double[i + 2] * T.Cast("float32", register)


def test_names_are_sanitized_and_unique(tmp_path):
    ks = ToyGPUCodegen().render(keywords)
    src = ks.source
    assert "int_1[i]" in src and "double_1[i]" in src and "int32_t register_1" in src
    assert "for (int32_t i = 0;" in src and "for (int32_t i_1 = 0;" in src
    syntax_check(src, tmp_path)


def test_name_table():
    from tilelang_core.codegen import NameTable

    names = NameTable(reserved=("blockIdx",))
    a, b, c = tirx.Var("x.y", "int32"), tirx.Var("x.y", "int32"), tirx.Var("tl_grid", "int32")
    assert names.get(a) == "x_y" and names.get(b) == "x_y_1" and names.get(a) == "x_y"
    assert names.get(c) == "utl_grid"
    assert names.fresh("blockIdx") == "blockIdx_1" and names.fresh("3d") == "v3d"


@T.prim_func
def literals(O: T.Buffer((8,), "float32"), D: T.Buffer((4,), "float64"), L: T.Buffer((4,), "int64"),
             S: T.Buffer((2,), "int32")):
    bx = T.launch_thread("blockIdx.x", 1)
    O[0] = T.float32(0.1)
    O[1] = T.float32(1e-30)
    O[2] = T.float32("inf")
    O[3] = T.float32("-inf")
    O[4] = T.float32("nan")
    O[5] = T.float32(3)
    D[0] = T.float64(0.1)
    D[1] = T.float64("-inf")
    L[0] = T.int64(-9223372036854775808)
    L[1] = T.int64(1) << T.int64(40)
    S[0] = T.int32(-2147483648)
    S[1] = T.int32(-5) - T.int32(-3) * S[0]
    T.evaluate(T.call_intrin("int32", "tl.printf", 'q"uote\\ tab\t nl\n ?? %d', S[1]))


def test_literals(tmp_path):
    src = ToyGPUCodegen().render(literals).source
    for text in ("O[0] = 0.100000001f;", "O[1] = 1e-30f;", "O[2] = ((float)INFINITY);",
                 "O[3] = -((float)INFINITY);", "O[4] = ((float)NAN);", "O[5] = 3.0f;",
                 "D[0] = 0.1;", "D[1] = -((double)INFINITY);",
                 "L[0] = (-9223372036854775807LL - 1);", "S[0] = (-2147483647 - 1);",
                 r'printf("q\"uote\\ tab\t nl\n \?\? %d", S[1]);'):
        assert text in src, text
    syntax_check(src, tmp_path)


X_VAR = tirx.Var("x", "int32")


def test_precedence():
    p = ToyGPUCodegen()
    p._reset()
    y, z = tirx.Var("y", "int32"), tirx.Var("z", "int32")
    for v in (X_VAR, y, z):
        p.var_names[v] = v.name
    x = X_VAR
    cases = {
        (x + y) * z: "(x + y) * z",
        x - (y - z): "x - (y - z)",
        (x - y) - z: "x - y - z",
        x * (y * z): "x * (y * z)",
        tirx.Div(x, y * z): "x / (y * z)",
        tirx.BitwiseAnd(x + y, z): "(x + y) & z",
        tirx.LShift(x, y + 1): "x << (y + 1)",
        tirx.BitwiseXor(tirx.LShift(x, y), z): "(x << y) ^ z",
        tirx.Or(tirx.And(x < y, y < z), x == z): "(x < y && y < z) || x == z",
        tirx.Not(x < y): "!(x < y)",
        tirx.And(x < y, tirx.Or(y < z, x == z)): "x < y && (y < z || x == z)",
        tirx.Select(x < y, x, tirx.Select(y < z, y, z)): "(x < y) ? x : (y < z) ? y : z",
        tirx.Cast("float32", x + y) * tirx.FloatImm("float32", 2.0): "(float)(x + y) * 2.0f",
        tirx.Sub(x, tirx.IntImm("int32", -3)): "x - -3",
        tirx.Min(x, y): "min(x, y)",
    }
    for e, text in cases.items():
        assert p.expr(e) == text, (e, p.expr(e), text)


@T.prim_func
def bad_scope(A: T.Buffer((4,), "float32")):
    bx = T.launch_thread("blockIdx.x", 1)
    W = T.alloc_buffer((4,), "float32", scope="global")
    W[0] = A[0]
    A[1] = W[0]


@T.prim_func
def bad_symbolic(a: T.handle):
    m = T.int32()
    A = T.match_buffer(a, (m,), "float32")
    bx = T.launch_thread("blockIdx.x", 1)
    A[0] = T.float32(1)


def test_errors_name_the_problem():
    with pytest.raises(CodegenError, match="scope 'global'.*supported scopes: shared, shared.dyn"):
        ToyGPUCodegen().render(bad_scope)
    with pytest.raises(CodegenError, match="uses 'm', which is not a parameter"):
        ToyGPUCodegen().render(bad_symbolic)
    with pytest.raises(CodegenError, match="dtype 'float16' has no C type"):
        CStyleCodegen().type_name("float16")


def test_line_map_points_at_the_python_source():
    ks = ToyGPUCodegen().render(tiled)
    lines = ks.source.split("\n")
    store = next(i for i, line in enumerate(lines, 1) if "S[tx] = B_shared[tx];" in line)
    path, line = ks.line_map[store]
    assert path == __file__
    with open(__file__) as f:
        assert "S[tx] = B_shared[tx]" in f.read().split("\n")[line - 1]


def test_builtins_are_registered_ops():
    for name in builtins.BUILTIN_OPS:
        assert tvm.ir.Op.get(name).get_attr("TCallEffectKind") == 3, name  # opaque
    buf = tirx.decl_buffer((4,), "float32", name="A")
    call = builtins.atomic_add(tirx.BufferLoad(buf, [0]), 1.0)
    assert str(call.op.name) == "tl.atomic_add" and len(call.args) == 2
    assert str(builtins.sync_threads().op.name) == "tl.sync_threads"
    assert str(builtins.printf("x=%d\n", 3).args[0].value) == "x=%d\n"
    assert str(builtins.device_assert(tirx.IntImm("bool", 1), "m").op.name) == "tl.device_assert"


class HalfGPUCodegen(ToyGPUCodegen):
    type_map = {**CStyleCodegen.type_map, "float16": "half"}
    math_ops = {**ToyGPUCodegen.math_ops, "sqrt": {**CStyleCodegen.math_ops["sqrt"], "float16": "hsqrt({0})"}}


@T.prim_func
def half_math(X: T.Buffer((4,), "float16"), Y: T.Buffer((4,), "float16")):
    bx = T.launch_thread("blockIdx.x", 1)
    for i in range(4):
        Y[i] = T.exp(X[i]) + T.sqrt(X[i])


def test_native_half_math_falls_back_to_float32_spellings():
    src = HalfGPUCodegen().render(half_math).source
    assert "Y[i] = ((half)(expf((float)(X[i])))) + hsqrt(X[i]);" in src


# -- the neutral base: no GPU spelling unless a dialect asks for it ----------------------------


@T.prim_func
def block_local(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    S = T.alloc_buffer((64,), "float32", scope="shared")
    D = T.alloc_buffer((16,), "float32", scope="shared.dyn")
    for i in T.unroll(4):
        D[i] = A[i]
    for i in range(64):
        S[i] = A[i] + D[i % 4]
    for i in range(64):
        B[i] = S[i]


@T.prim_func
def with_barrier(A: T.Buffer((64,), "float32")):
    A[0] = T.float32(1)
    T.evaluate(T.call_intrin("int32", "tl.sync_threads"))


def test_base_printer_is_neutral_c(tmp_path):
    src = CStyleCodegen().render(block_local).source
    for gpu_word in ("__shared__", "__global__", "__syncthreads", "blockIdx", "threadIdx", "__restrict__",
                     "#pragma unroll", "atomicAdd"):
        assert gpu_word not in src, gpu_word
    assert "unsigned char tl_dyn_smem[64] __attribute__((aligned(128)));" in src
    assert "float S[64];" in src and "float* restrict B" in src
    syntax_check(src, tmp_path)


@T.prim_func
def atomic_only(A: T.Buffer((4,), "float32")):
    T.evaluate(T.call_intrin("float32", "tl.atomic_add", A[0], T.float32(1)))


def test_base_printer_refuses_what_it_cannot_spell():
    with pytest.raises(CodegenError, match="binds bx to blockIdx.x, which the c dialect does not spell"):
        CStyleCodegen().render(bad_scope)
    with pytest.raises(CodegenError, match="tl.sync_threads.*no block barrier.*sets `barrier`"):
        CStyleCodegen().render(with_barrier)
    with pytest.raises(CodegenError, match="atomic add on float32 is not supported by the c dialect; supported: none"):
        CStyleCodegen().render(atomic_only)


# the defaults CStyleCodegen had before it became neutral (CUDA-like); GPUCodegen keeps them so
# that a dialect written against the old base moves by changing its base class
PRE_SPLIT_DEFAULTS = {
    "language": "c", "kernel_prefix": "", "kernel_return_type": "void", "restrict": "__restrict__",
    "preamble": (), "helper_qualifier": "static inline", "indent_unit": "  ", "barrier": "__syncthreads();",
    "thread_index": {f"{k}.{d}": f"{k}.{d}" for k in ("blockIdx", "threadIdx") for d in "xyz"},
    "shared_qualifier": "__shared__ ", "dyn_shared_name": "tl_dyn_smem",
    "dyn_shared_decl": "extern __shared__ __align__({align}) unsigned char {name}[];",
    "dyn_shared_alignment": 128, "local_array_suffix": "", "addressed_local_format": "",
    "unroll_pragma": "#pragma unroll", "vectorize_pragma": (), "parallel_pragma": (),
    "atomic_ops": {"add": "atomicAdd({0}, {1})", "max": "atomicMax({0}, {1})", "min": "atomicMin({0}, {1})"},
    "memory_orders": None, "printf_name": "printf", "eager_logic": False, "reinterpret_format": None,
    "shuffle_xor_format": None, "dp4a_format": None, "assert_format": "assert(({cond}) && {msg});",
    "reserved_names": ("blockIdx", "threadIdx", "blockDim", "gridDim", "printf", "min", "max", "assert"),
}


def test_the_gpu_layer_keeps_the_pre_split_defaults():
    for name, value in PRE_SPLIT_DEFAULTS.items():
        assert getattr(GPUCodegen, name) == value, name
    assert GPUCodegen.type_map is CStyleCodegen.type_map and GPUCodegen.math_ops is CStyleCodegen.math_ops


# -- stores of storage-only types (`GPUCodegen.visit_store`) ---------------------------------


class StorageGPUCodegen(ToyGPUCodegen):
    """float16 stored as a struct, computed in float32; stores take the short forms."""

    type_map = {**CStyleCodegen.type_map, "float16": "half_s"}
    storage_types = {"float16": {"value": "float32", "load": "to_f({0})", "store": "from_f({0})",
                                 "round": "round_h({0})"}}


@T.prim_func
def half_stores(X: T.Buffer((4,), "float16"), Y: T.Buffer((4,), "float16"), F: T.Buffer((4,), "float32"),
                D: T.Buffer((4,), "float64")):
    bx = T.launch_thread("blockIdx.x", 1)
    for i in range(4):
        Y[i] = X[i]
        Y[i] = T.Cast("float16", F[i] * T.float32(2))
        Y[i] = T.Cast("float16", D[i])
        Y[i] = X[i] + X[i]


def test_storage_stores_move_copies_and_round_casts_once():
    src = StorageGPUCodegen().render(half_stores).source
    assert "Y[i] = X[i];" in src  # the bits move: no trip through float
    assert "Y[i] = from_f(F[i] * 2.0f);" in src  # rounded once, not from_f(round_h(...))
    assert "Y[i] = from_f((float)(D[i]));" in src
    assert "Y[i] = from_f(to_f(X[i]) + to_f(X[i]));" in src  # computing stores as before
