"""Block barriers the compiler places, and `tl.disable_thread_storage_sync`, which leaves them
to the kernel as in TileLang (TileLang's radix top-k places its own named barriers inside
`if tx < 256`: a block barrier there would hang). A condition every thread agrees on
(`Flag[bx]`) gets barriers inside."""
from __future__ import annotations

from tvm import ir, tirx

from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin.manager import get_plugin_manager
from tilelang_core.transform.irutil import walk


def _lowered(func, configs=None):
    return lower(func, get_plugin_manager().parse_target("cuda/sm_90a"), CompileOptions.from_pass_configs(configs))


def _syncs(node) -> int:
    found = []
    walk(node, lambda c: found.append(1) if getattr(c.op, "name", "") == "tl.sync_threads" else None, (ir.Call,))
    return len(found)


def _ifs(func, needle: str):
    found = []
    walk(func.body, lambda s: found.append(s) if needle in str(s.condition) else None, (tirx.IfThenElse,))
    return found


def prefix_scan(n=256, threads=512):
    """Threads below n scan a shared histogram among themselves (named barriers of their own)."""

    @T.prim_func
    def main(X: T.Tensor((n,), "int32"), Y: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding()
            hist = T.alloc_shared((n,), "int32")
            val = T.alloc_var("int32")
            T.copy(X, hist)
            if tx < n:
                for i in T.serial(8):
                    T.sync_threads(3, n)
                    if tx >= (1 << i):
                        val = hist[tx] + hist[T.max(tx - (1 << i), 0)]
                    T.sync_threads(3, n)
                    if tx >= (1 << i):
                        hist[tx] = val
            T.copy(hist, Y)

    return main


def claim_slots(n=1024, threads=256):
    """Each thread claims slots with an atomic's previous value and writes shared memory in a
    branch on it."""

    @T.prim_func
    def main(X: T.Tensor((n,), "int32"), Y: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding()
            count = T.alloc_shared((1,), "int32")
            out = T.alloc_shared((n,), "int32")
            pos = T.alloc_var("int32")
            T.fill(count, 0)
            T.fill(out, -1)
            for k in T.serial(n // threads):
                pos = T.atomic_add(count[0], 1, return_prev=True)
                if pos < n:
                    for j in T.serial(2):
                        out[pos] = X[k * threads + tx] + j
            T.copy(out, Y)

    return main


def flagged(n=128):
    """A branch every thread agrees on (a value at the block's index): its tile ops keep their
    barriers."""

    @T.prim_func
    def main(Flag: T.Tensor((4,), "int32"), X: T.Tensor((4, n), "float32"), Y: T.Tensor((4, n), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((n,), "float32")
            if Flag[bx] > 0:
                T.copy(X[bx, :], s)
                for i in T.Parallel(n):
                    Y[bx, i] = s[n - 1 - i]

    return main


def test_a_branch_every_thread_agrees_on_keeps_its_barriers():
    (branch,) = _ifs(_lowered(flagged()), "Flag")
    assert _syncs(branch) >= 1


def test_disable_thread_storage_sync_leaves_barriers_to_the_kernel():
    placed = _syncs(_lowered(flagged()).body)
    assert placed >= 1
    assert _syncs(_lowered(flagged(), {"tl.disable_thread_storage_sync": True}).body) == 0
    assert CompileOptions.from_pass_configs({"tl.disable_thread_storage_sync": True}).ignored == ()
