"""T.Kernel: launch_thread AttrStmts, names, thread bindings; parameters and allocations."""
import pytest
from tvm import tirx

from tilelang_core import language as T
from tilelang_core.ir import SCOPE_FRAGMENT, SCOPE_GLOBAL, SCOPE_LOCAL, SCOPE_SHARED, SCOPE_VAR

from . import programs
from .helpers import allocations, ints, stmts_of, thread_extents, vars_in


def test_kernel_opens_block_then_thread_dims_with_user_names():
    func = programs.matmul(1024, 512, 256, 128, 64, 32)
    assert [(tag, name) for tag, name, _ in thread_extents(func)] == [
        ("blockIdx.x", "bx"),
        ("blockIdx.y", "by"),
        ("threadIdx.x", "tx"),
    ]
    assert ints(extent for _, _, extent in thread_extents(func)) == [512 // 64, 1024 // 128, 128]
    # the kernel is the function body itself: lowering finds the thread count there
    assert isinstance(func.body, tirx.AttrStmt) and func.body.attr_key == "thread_extent"


def test_one_dim_grid_binds_a_single_var():
    func = programs.elementwise_add(4096, block=256)
    assert [(tag, name, int(e)) for tag, name, e in thread_extents(func)] == [
        ("blockIdx.x", "bx", 16),
        ("threadIdx.x", "tx", 256),
    ]


def test_three_dim_grid_and_thread_tuple():
    func = programs.atomic_accumulate(256, 128, 32)
    assert [tag for tag, _, _ in thread_extents(func)] == [
        "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x"]
    assert [name for _, name, _ in thread_extents(func)][:3] == ["bx", "by", "bz"]

    func = programs.matmul_transposed(256, 256, 256, 64, 64, 32)
    assert [(tag, name, int(e)) for tag, name, e in thread_extents(func)][2:] == [
        ("threadIdx.x", "tx", 32),
        ("threadIdx.y", "ty", 4),
    ]


def test_user_names_for_block_vars_and_default_threads():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(2, 3) as (pid_n, pid_m):
            A[pid_n + pid_m] = T.float32(0)

    assert [(tag, name, int(e)) for tag, name, e in thread_extents(main)] == [
        ("blockIdx.x", "pid_n", 2),
        ("blockIdx.y", "pid_m", 3),
        ("threadIdx.x", "tx", 128),  # TileLang's default block size
    ]


def test_get_thread_binding_is_the_kernel_thread_var():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=(64, 2)) as bx:
            A[T.get_thread_binding(0) + T.get_thread_binding(1) * 64] = T.float32(1)
            A[T.get_block_binding(0)] = T.float32(2)

    launch = {s.node.thread_tag: s.node.var for s in stmts_of(main, tirx.AttrStmt)}
    first, second = stmts_of(main, tirx.BufferStore)
    used = vars_in(first.indices[0])
    assert any(v.same_as(launch["threadIdx.x"]) for v in used)
    assert any(v.same_as(launch["threadIdx.y"]) for v in used)
    assert second.indices[0].same_as(launch["blockIdx.x"])


def test_get_thread_binding_outside_a_kernel_is_an_error():
    with pytest.raises(RuntimeError, match="only valid inside"):
        T.get_thread_binding()


def test_tensor_params_are_global_buffers_and_symbolic_dims_are_int32_vars():
    func = programs.symbolic_copy()
    a, b = func.params
    assert a.scope() == SCOPE_GLOBAL and str(a.dtype) == "float16"
    m = a.shape[0]
    assert isinstance(m, tirx.Var) and m.name == "m" and str(m.ty) == "int32"
    assert b.shape[0].same_as(m)
    assert int(a.shape[1]) == 64


def test_allocation_scopes():
    func = programs.matmul(256, 256, 256, 64, 64, 32)
    allocs = allocations(func)
    assert allocs["A_shared"].scope() == SCOPE_SHARED
    assert allocs["C_local"].scope() == SCOPE_FRAGMENT
    assert str(allocs["C_local"].dtype) == "float32"  # "float" means float32
    assert ints(allocs["A_shared"].shape) == [64, 32]

    local = allocations(programs.loop_kinds(16))["L"]
    assert local.scope() == SCOPE_LOCAL and ints(local.shape) == [8]


def test_alloc_var_is_a_unit_buffer_used_as_a_scalar():
    func = programs.scalar_vars(8)
    allocs = allocations(func)
    for name in ("total", "count"):
        assert allocs[name].scope() == SCOPE_VAR
        assert ints(allocs[name].shape) == [1] and str(allocs[name].dtype) == "int32"
    stores = stmts_of(func, tirx.BufferStore)
    init = stores[0]
    assert init.buffer.name == "total" and int(init.value) == 0 and ints(init.indices) == [0]
    # `total = total + A[i]` stores into total[0]
    accumulate = [s for s in stores if s.buffer.name == "total" and isinstance(s.value, tirx.Add)]
    assert accumulate and "total[0]" in str(accumulate[0].value)


def test_math_and_tirx_names_are_available():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "int32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(16):
                x = A[i]
                A[i] = (T.exp(x) + T.exp2(x) + T.log(x) + T.log2(x) + T.sqrt(x) + T.rsqrt(x)
                        + T.sin(x) + T.cos(x) + T.tanh(x) + T.floor(x) + T.ceil(x) + T.pow(x, x)
                        + T.sigmoid(x) + T.abs(x) + T.max(x, 0) + T.min(x, 1.0))
                A[i] = T.if_then_else(x > 0, x, -T.infinity("float32"))
                B[i] = T.cast(x, "int32") + T.Cast("int32", x) + T.int32(1)
            T.evaluate(T.call_extern("int32", "external_fn", B[0]))

    text = main.script()
    for name in ("T.exp2(", "T.sigmoid(", "T.if_then_else(", "T.call_extern(", "T.tanh("):
        assert name in text, name
