"""`T.import_source`, `T.access_ptr`, `T.dp4a` and `T.thread_binding` from the language to the
C-family printer: where each lives in the IR, what the printer makes of it, and the errors."""
from __future__ import annotations

import importlib.util

import pytest
import tvm
import tvm_ffi
from tvm import tirx
from tvm.script import tirx as TS

from tilelang_core import language as T
from tilelang_core.codegen import GPUCodegen
from tilelang_core.ir.imports import ATTR_IMPORT_SOURCE, hoist_import_sources, import_sources
from tilelang_core.language import KernelSyntaxError
from tilelang_core.language.bindings import bind_thread_loops

HELPER = "static inline float twice(float x) { return 2.0f * x; }"
OTHER = "static inline float thrice(float x) { return 3.0f * x; }"


def _nodes(func, cls, keep=lambda node: True) -> list:
    found = []
    tvm_ffi.structural_walk(func.body, ((cls, lambda node: found.append(node) if keep(node) else None),))
    return found


def _markers(func) -> list:
    return _nodes(func, tirx.AttrStmt, lambda s: s.attr_key == ATTR_IMPORT_SOURCE)


def importing(texts):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            T.import_source(texts[0])
            T.import_source(texts[1])
            T.import_source(texts[2])
            tx = T.get_thread_binding()
            B[tx] = T.call_extern("float32", "twice", A[tx])

    return main


def test_import_source_becomes_one_attribute_in_order_without_repeats():
    func = importing([HELPER, OTHER, HELPER])
    assert [str(t) for t in func.attrs[ATTR_IMPORT_SOURCE]] == [HELPER, OTHER]
    assert _markers(func) == []  # hoisted: no pass sees a marker
    assert import_sources(func) == [HELPER, OTHER]
    # the text is part of the printed IR, which is what the cache key hashes
    assert "twice" in func.script(show_meta=True) and "thrice" in func.script(show_meta=True)
    assert tvm_ffi.structural_equal(func, importing([HELPER, OTHER, HELPER]))
    assert not tvm_ffi.structural_equal(func, importing([OTHER, HELPER, HELPER]))


def test_none_imports_nothing_and_a_non_string_is_an_error():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            T.import_source(None)
            A[0] = T.float32(1)

    assert main.attrs is None or ATTR_IMPORT_SOURCE not in main.attrs

    def bad():
        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64) as bx:
                T.import_source(42)

    with pytest.raises(KernelSyntaxError, match=r"T.import_source: source must be a str.*got int"):
        bad()


def test_printed_ir_parses_back_with_the_attribute():
    func = importing([HELPER, OTHER, OTHER])
    again = tvm.script.from_source(func.script(show_meta=True))
    assert [str(t) for t in again.attrs[ATTR_IMPORT_SOURCE]] == [HELPER, OTHER]


# --- the printer ------------------------------------------------------------------------------


@TS.prim_func
def marked(A: TS.Buffer((64,), "float32"), B: TS.Buffer((64,), "float32")):
    TS.func_attr({ATTR_IMPORT_SOURCE: [HELPER]})
    tx = TS.launch_thread("threadIdx.x", 64)
    with TS.attr(0, ATTR_IMPORT_SOURCE, OTHER):
        TS.evaluate(0)
    with TS.attr(0, ATTR_IMPORT_SOURCE, HELPER):
        TS.evaluate(0)
    twice = TS.float32(0)  # a variable named like an imported function must not shadow it
    B[tx] = TS.call_extern("float32", "twice", A[tx]) + twice


def test_printer_puts_each_text_once_after_the_header_and_before_the_kernel():
    source = GPUCodegen().render(marked).source
    lines = source.split("\n")
    helper, other = lines.index(HELPER), lines.index(OTHER)
    kernel = next(n for n, line in enumerate(lines) if "void marked(" in line)
    assert helper < other < kernel  # the attribute first, then the markers left in the body
    assert source.count(HELPER) == 1 and source.count(OTHER) == 1
    assert "= twice(A[tx]) + twice_1;" in source  # the kernel's variable was renamed


def test_hoisting_a_hand_written_function_keeps_its_statements():
    hoisted = hoist_import_sources(marked)
    assert [str(t) for t in hoisted.attrs[ATTR_IMPORT_SOURCE]] == [HELPER, OTHER]
    assert _markers(hoisted) == []
    assert GPUCodegen().render(hoisted).source == GPUCodegen().render(marked).source


# --- T.access_ptr ---------------------------------------------------------------------------------


def _access_ptrs(func) -> list:
    return _nodes(func, tvm.ir.Call, lambda c: c.op.name == "tirx.tvm_access_ptr")


def test_access_ptr_forms():
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float16"), V: T.Tensor((32,), "int8")):
        with T.Kernel(1, threads=1) as bx:
            L = T.alloc_local((4,), "int32")
            T.call_extern("handle", "f", T.access_ptr(A[2, 3], "r"), T.access_ptr(A[1:3, 0:16], "w"),
                          T.access_ptr(A, "rw"), T.access_ptr(V[4], "r", 8), T.access_ptr(V, "w", offset=5, extent=3),
                          T.access_ptr(L, 2), T.access_ptr(A[2, 3], "r", ignore_last_ndim=1))

    ptrs = _access_ptrs(main)
    facts = [(str(p.args[1].args[0].source.name), [int(i) for i in p.args[1].args[0].indices],
              int(p.args[3]), int(p.args[4])) for p in ptrs]
    assert facts == [("A", [2, 3], 1, 1), ("A", [1, 0], 32, 2), ("A", [0, 0], 128, 3), ("V", [4], 8, 1),
                     ("V", [5], 3, 2), ("L", [0], 4, 2), ("A", [2, 0], 1, 1)]
    assert all(str(p.args[0].ty.dtype) in ("float16", "int8", "int32") for p in ptrs)


@pytest.mark.parametrize("call,message", [
    ('T.access_ptr(A[0, 0], "x")', "access_type must be 'r', 'w', 'rw'"),
    ('T.access_ptr(A, "r", offset=1)', "offset= needs a 1-D buffer, A has 2 dims"),
    ('T.access_ptr(A, "r", 1, 2, 3)', "3 extents for the 2-D buffer A"),
    ('T.access_ptr(A[0, 0] + A[0, 1], "r")', "base must be a buffer, a region"),
    ("T.dp4a(A[0, 0], A[0, 4], C[0])", "T.dp4a: A must be int8, got A of float16"),
    ("T.dp4a(V[0], V[4], V[8])", "T.dp4a: C must be int32, got V of int8"),
])
def test_pointer_errors_name_the_argument_and_the_line(call, message, tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(
        "from tilelang_core import language as T\n\n"
        "@T.prim_func\n"
        "def main(A: T.Tensor((8, 16), 'float16'), V: T.Tensor((32,), 'int8'), C: T.Tensor((4,), 'int32')):\n"
        "    with T.Kernel(1, threads=1) as bx:\n"
        f"        T.evaluate({call})\n")
    spec = importlib.util.spec_from_file_location("kernel_under_test", path)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(KernelSyntaxError) as info:
        spec.loader.exec_module(module)
    assert message in str(info.value)
    assert f"{path}:6" in str(info.value)


def test_dp4a_is_a_builtin_over_three_pointers_and_prints_the_portable_helper():
    @T.prim_func
    def main(A: T.Tensor((16,), "int8"), B: T.Tensor((16,), "int8"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            acc = T.alloc_local((1,), "int32")
            acc[0] = 0
            for k in T.serial(4):
                T.dp4a(A[k * 4], B[k * 4], acc[0])
            C[0] = acc[0]

    calls = _nodes(main, tvm.ir.Call, lambda c: c.op.name == "tl.dp4a")
    assert len(calls) == 1
    masks = [int(p.args[4]) for p in calls[0].args]
    extents = [int(p.args[3]) for p in calls[0].args]
    assert masks == [1, 1, 3] and extents == [4, 4, 1]
    again = tvm.script.from_source(main.script(show_meta=True))  # T.tl.dp4a reads back
    assert tvm_ffi.structural_equal(again, main)


# --- T.thread_binding ---------------------------------------------------------------------------


def test_thread_binding_is_the_kernels_thread_index():
    @T.prim_func
    def main(A: T.Tensor((4, 32), "float32"), B: T.Tensor((4, 32), "float32")):
        with T.Kernel(1, threads=(32, 4)) as bx:
            kr = T.thread_binding(0, 32, thread="threadIdx.x")
            ni = T.thread_binding(0, 4, thread="threadIdx.y")
            A[ni, kr] = T.float32(1)
            for t in T.thread_binding(32, thread="threadIdx.x"):
                B[ni, t] = T.float32(2)

    assert _nodes(main, tirx.For) == []  # merged into the launches
    stores = _nodes(main, tirx.BufferStore)
    assert [[str(i) for i in s.indices] for s in stores] == [["ty", "tx"], ["ty", "tx"]]


def test_bind_thread_loops_refuses_a_loop_the_launch_cannot_hold():
    @TS.prim_func
    def loose(A: TS.Buffer((32,), "float32")):
        tx = TS.launch_thread("threadIdx.x", 32)
        for t in TS.thread_binding(16, thread="threadIdx.x"):
            A[t] = TS.float32(1)

    with pytest.raises(ValueError, match="T.thread_binding over t has extent 16, but the kernel launches threadIdx.x with 32"):
        bind_thread_loops(loose)


@pytest.mark.parametrize("binding,message", [
    ('T.thread_binding(0, 16, thread="threadIdx.x")', "threadIdx.x runs over 16 values here but T.Kernel launches 32"),
    ('T.thread_binding(0, 2, thread="threadIdx.z")', "thread='threadIdx.z' is not launched by the enclosing T.Kernel, "
                                                     "which launches threadIdx.x (32)"),
])
def test_thread_binding_errors(binding, message, tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(
        "from tilelang_core import language as T\n\n"
        "@T.prim_func\n"
        "def main(A: T.Tensor((32,), 'float32')):\n"
        "    with T.Kernel(1, threads=32) as bx:\n"
        f"        t = {binding}\n"
        "        A[t] = T.float32(1)\n")
    spec = importlib.util.spec_from_file_location("kernel_under_test", path)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(KernelSyntaxError) as info:
        spec.loader.exec_module(module)
    assert message in str(info.value)
    assert f"{path}:6" in str(info.value)
