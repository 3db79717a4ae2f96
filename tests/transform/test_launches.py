"""split_launches: a function of several `with T.Kernel` launches and `T.alloc_global`
workspaces, taken apart into single-launch PrimFuncs; and the errors for what cannot be."""
from __future__ import annotations

import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.language.parser import KernelSyntaxError
from tilelang_core.runtime.base import ParamSpec
from tilelang_core.transform.errors import TileLangCompileError
from tilelang_core.transform.launches import split_launches, workspace_specs


def two_launches(n=16, s=4):
    @T.prim_func
    def main(A: T.Tensor((n, s), "float32"), B: T.Tensor((n,), "float32")):
        ws = T.alloc_global((n, s), "float32")
        with T.Kernel(n, s, threads=32) as (bx, by):
            ws[bx, by] = A[bx, by] * 2.0
        with T.Kernel(n, threads=16) as bx:
            acc = T.alloc_var("float32", init=0.0)
            for k in T.serial(s):
                acc = acc + ws[bx, k]
            B[bx] = acc
    return main


def param_names(func):
    return [p.name for p in func.params]


def launch_tags(func):
    """thread tag -> extent of every launch attribute of `func`."""
    from tvm import tirx

    from tilelang_core.transform.irutil import walk

    found = {}

    def visit(node):
        if node.attr_key == "thread_extent":
            found[str(node.node.thread_tag)] = int(node.value)

    walk(func.body, visit, (tirx.AttrStmt,))
    return found


def test_each_launch_becomes_a_function_of_the_parameters_then_the_workspaces():
    plan = split_launches(two_launches())
    assert plan.name == "main"
    assert [w.name for w in plan.workspaces] == ["ws"]
    assert [str(f.attrs["global_symbol"]) for f in plan.launches] == ["main_launch0", "main_launch1"]
    for f in plan.launches:
        assert param_names(f) == ["A", "B", "ws"]
        assert "ws = T.alloc_buffer" not in f.script()  # the workspace is a parameter now
    assert launch_tags(plan.launches[0]) == {"blockIdx.x": 16, "blockIdx.y": 4, "threadIdx.x": 32}
    assert launch_tags(plan.launches[1]) == {"blockIdx.x": 16, "threadIdx.x": 16}


def test_one_launch_without_workspaces_is_not_split():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                A[i] = A[i] + 1.0

    assert split_launches(main) is None


def test_one_launch_with_a_workspace_is_a_plan_of_one():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        ws = T.alloc_global((16,), "float32")
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                ws[i] = A[i]
            for i in T.Parallel(16):
                A[i] = ws[15 - i]

    plan = split_launches(main)
    assert len(plan.launches) == 1 and param_names(plan.launches[0]) == ["A", "ws"]


def test_workspace_shapes_are_read_from_the_symbolic_dims():
    n = T.symbolic("n")

    @T.prim_func
    def main(A: T.Tensor((n, 4), "float16"), B: T.Tensor((n,), "float16")):
        ws = T.alloc_global((n, 4), "float32")
        padded = T.alloc_global(((n + 7) // 8 * 8,), "int32")
        with T.Kernel(n, threads=4) as bx:
            ws[bx, 0] = T.float32(A[bx, 0])
            padded[bx] = 1
        with T.Kernel(n, threads=4) as bx:
            B[bx] = T.float16(ws[bx, 0] + T.float32(padded[bx]))

    plan = split_launches(main)
    specs = workspace_specs(main, plan)
    assert specs[0] == ParamSpec("ws", "tensor", "float32", ("n", 4))
    assert specs[1].dtype == "int32" and specs[1].shape == ("(n + 7) // 8 * 8",)


def test_a_statement_between_launches_is_rejected_with_its_line():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                A[i] = A[i] + 1.0
        A[0] = 0.0
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                A[i] = A[i] * 2.0

    with pytest.raises(TileLangCompileError) as err:
        tilelang.compile(main, target="cpu")
    message = str(err.value)
    assert "stands between the `with T.Kernel(...)` launches" in message
    assert "test_launches.py" in message and "A[0] = 0.0" in message


def test_a_workspace_shape_needs_the_tensor_arguments_only():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), m: T.int32):
        ws = T.alloc_global((m,), "float32")
        with T.Kernel(1, threads=16) as bx:
            ws[0] = A[0]
        with T.Kernel(1, threads=16) as bx:
            A[1] = ws[0]

    with pytest.raises(TileLangCompileError, match="workspace ws .* uses m, which is not a symbolic dim"):
        tilelang.compile(main, target="cpu")


def test_alloc_global_inside_a_kernel_is_rejected():
    with pytest.raises(KernelSyntaxError, match="declare it before the first `with T.Kernel"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=16) as bx:
                ws = T.alloc_global((16,), "float32")
                ws[0] = A[0]


def test_alloc_global_allocates_in_global_scope_only():
    with pytest.raises(KernelSyntaxError, match="scope 'global'"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            ws = T.alloc_global((16,), "float32", scope="shared")
            with T.Kernel(1, threads=16) as bx:
                ws[0] = A[0]


def test_parsed_back_from_the_printed_script_it_splits_the_same():
    from tvm.script import from_source

    func = two_launches()
    again = from_source(func.script(show_meta=True))
    plan = split_launches(again)
    assert [w.name for w in plan.workspaces] == ["ws"] and len(plan.launches) == 2
