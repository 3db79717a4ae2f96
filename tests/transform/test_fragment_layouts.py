"""Backend-imposed fragment layouts (`tilelang_infer_layout` -> `infer_layout` -> SIMT
placement): nests follow the layout, fragments adopt it or leave registers on a conflict, and
a lowering's per-thread register array survives its fragment moving to shared memory.

A toy backend imposes a *blocked* layout (thread t holds elements t*S .. t*S+S-1 in row-major
order) through fake hooks, on a SIMT target, so nothing here depends on a real backend."""
from __future__ import annotations

import re

from tvm import tirx as tir

from tilelang_core import language as T
from tilelang_core.jit.options import CompileOptions
from tilelang_core.layout import Fragment
from tilelang_core.plugin import get_plugin_manager
from tilelang_core.transform import layout_inference, lower_tile_ops, simt
from tilelang_core.transform.pipeline import PassContext

M, N, THREADS = 16, 32, 64
SLOTS = M * N // THREADS


def blocked() -> Fragment:
    def element_of(thread, slot):
        flat = thread * SLOTS + slot
        return [flat // N, flat % N]

    return Fragment((M, N), THREADS, SLOTS, element_of, "toy.blocked")


class ToyHooks:
    """Imposes `blocked()` on the destination of every T.fill; lowers T.fill per thread into
    the register array when the layout held, else portably."""

    def infer_layout(self, op, ctx):
        if op.name == "fill":
            return {op.regions[0].buffer: blocked()}
        return None

    def lower_tile_op(self, op, ctx):
        if op.name != "fill" or ctx.layout_of(op.regions[0].buffer) != blocked():
            return None
        reg = ctx.register_buffer(op.regions[0].buffer)
        value = op.args[1]

        def body(thread):
            slot = tir.Var("s", "int32")
            return tir.For(slot, tir.const(0, "int32"), tir.const(SLOTS, "int32"), tir.ForKind.SERIAL,
                           tir.BufferStore(reg, tir.Cast(str(reg.dtype), value) + tir.Cast(str(reg.dtype), thread), [slot]))

        return ctx.per_thread(body)


def placed(func, hooks=None):
    target = get_plugin_manager().parse_target("hip/gfx90a")  # any SIMT target
    ctx = PassContext(target=target, options=CompileOptions(), hooks=hooks or ToyHooks())
    func = layout_inference.infer_layout(func, ctx)
    func = lower_tile_ops.lower_tile_ops(func, ctx)
    return simt.partition_over_threads(func, ctx).script()


def test_layout_is_checked_bijection():
    blocked().check()


def test_nests_run_in_the_imposed_layout_and_a_partner_adopts_it():
    @T.prim_func
    def main(Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=THREADS) as bx:
            acc = T.alloc_fragment((M, N), "float32")
            out = T.alloc_fragment((M, N), "float32")
            T.fill(acc, 1.0)
            for i, j in T.Parallel(M, N):
                out[i, j] = acc[i, j] * 2.0
            T.copy(out, Y)

    text = placed(main)
    assert f"acc_reg = T.alloc_local(({SLOTS},))" in text and f"out_reg = T.alloc_local(({SLOTS},))" in text
    assert "shared" not in text
    # the fill wrote every slot per thread; the epilogue and the copy walk (tx, r) -> element
    assert f"for r in T.unroll({SLOTS}" in text
    assert re.search(r"Y\[\(tx \* 8 \+ r\) // 32, \(tx \* 8 \+ r\) % 32\] = out_reg\[r\]", text)
    assert "out_reg[r] = acc_reg[r] * T.float32(2.0)" in text


def strided() -> Fragment:
    def element_of(thread, slot):
        flat = slot * THREADS + thread
        return [flat // N, flat % N]

    return Fragment((M, N), THREADS, SLOTS, element_of, "toy.strided")


def test_fragments_of_two_layouts_in_one_nest():
    class TwoLayouts(ToyHooks):
        def infer_layout(self, op, ctx):
            if op.name == "fill":
                return {op.regions[0].buffer: blocked() if float(op.args[1].value) == 1.0 else strided()}
            return None

    @T.prim_func
    def main(Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=THREADS) as bx:
            a = T.alloc_fragment((M, N), "float32")
            b = T.alloc_fragment((M, N), "float32")
            T.fill(a, 1.0)
            T.fill(b, 2.0)
            for i, j in T.Parallel(M, N):
                Y[i, j] = a[i, j] + b[i, j]

    text = placed(main, TwoLayouts())
    # the nest runs in a's layout; b cannot follow, so it leaves registers (its fill then
    # runs portably, as the lowering finds its layout unusable)
    assert "a_reg = T.alloc_local((8,))" in text
    assert 'b = T.alloc_buffer((16, 32), scope="shared.dyn")' in text
    assert re.search(r"Y\[\(tx \* 8 \+ r\) // 32, \(tx \* 8 \+ r\) % 32\] = a_reg\[r\] \+ b\[", text)


def test_register_array_of_a_fragment_in_shared_memory_is_loaded_and_stored():
    @T.prim_func
    def main(Y: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=THREADS) as bx:
            acc = T.alloc_fragment((M, N), "float32")
            T.fill(acc, 1.0)
            Y[0] = acc[3, 5]  # outside T.Parallel: every thread needs that element

    text = placed(main)
    assert 'acc = T.alloc_buffer((16, 32), scope="shared.dyn")' in text
    # the lowering's per-thread region works on a copy of the thread's elements of acc
    assert re.search(r"acc_reg\[7\] = acc\[\(tx \* 8 \+ 7\) // 32, \(tx \* 8 \+ 7\) % 32\]", text), text
    assert re.search(r"acc\[\(tx \* 8 \+ 7\) // 32, \(tx \* 8 \+ 7\) % 32\] = acc_reg\[7\]", text), text


def test_a_row_reduction_stays_in_registers_with_a_replicated_result():
    @T.prim_func
    def main(Y: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=THREADS) as bx:
            acc = T.alloc_fragment((M, N), "float32")
            row = T.alloc_fragment((M,), "float32")
            T.fill(acc, 1.0)
            T.reduce_sum(acc, row, dim=1)
            T.copy(row, Y)

    text = placed(main)
    assert "shared" not in text, text
    # blocked: thread t holds row t // 4 (its 8 slots); the row's 4 threads combine by shuffles
    assert "T.tl.shfl_xor(sum_acc, 1)" in text and "T.tl.shfl_xor(sum_acc, 2)" in text
    assert "tx & 3 == 0" in text  # one replica of the row stores it
