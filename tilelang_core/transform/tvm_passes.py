"""TileLang's passes that are TVM's, under TileLang's names (`tilelang.transform.Simplify`, ...).

TileLang keeps a fork of TVM and exposes some of its standard TIR passes under
`tilelang.transform`; each is the pass of the same name in TVM, with TileLang's fixes. Here
each name returns apache-tvm 0.27's pass of that name: the same transformation on the same
IR (a `tvm.transform.Pass` over an IRModule), for a kernel author who applies one to read or
compare IR. The core's own pipeline (`transform.pipeline`) does not run them: it lowers tile
IR with its own passes.

| name | apache-tvm 0.27 pass | before -> after |
|---|---|---|
| `Simplify()` | `tirx.transform.StmtSimplify` (after inlining trivial `Bind`s) | index and condition arithmetic simplified |
| `FlattenBuffer()` | `tirx.transform.FlattenBuffer` | multi-dimensional buffers flattened to 1-D |
| `VectorizeLoop(enable_vectorize)` | `tirx.transform.VectorizeLoop` | vectorized loops as vector ops (or serial) |
| `UnrollLoop()` | `tirx.transform.UnrollLoop` | unrolled loops (and those under the config) expanded |
| `MakePackedAPI()` | `tirx.transform.MakePackedAPI` | host functions take packed arguments |
| `SplitHostDevice()` | `tirx.transform.SplitHostDevice` | device regions outlined into kernels |
| `LowerOpaqueBlock()` | `s_tir.transform.LowerOpaqueBlock` | opaque blocks removed, allocations placed |
| `InjectSoftwarePipeline()` | `s_tir.transform.InjectSoftwarePipeline` | annotated loops pipelined |
| `ThreadSync(storage_scope)` | `s_tir.transform.ThreadSync` | barriers where threads share `storage_scope` |

Where TileLang's fork differs from TVM's pass (an option TVM lacks, an intrinsic only the
fork knows), the result is TVM's; an option TVM's pass lacks raises.
"""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm.ir.transform import Pass

__all__ = ["FlattenBuffer", "InjectSoftwarePipeline", "LowerOpaqueBlock", "MakePackedAPI", "Simplify",
           "SplitHostDevice", "ThreadSync", "UnrollLoop", "VectorizeLoop", "inline_trivial_binds"]


def Simplify(simplify_arguments: bool = False) -> Pass:  # noqa: N802 - TileLang's pass names
    """Arithmetic simplification of every PrimFunc (TVM's `StmtSimplify`), after TileLang's let
    inlining: a `Bind` of a constant or a variable is substituted into the statements after it
    and dropped (so `n = 10; for i < n: if i < 12` proves the condition), unless the entered
    `PassContext` sets `tl.Simplify`'s `enable_simplify_let_inline` to False. The options of
    `tl.Simplify` that TVM's simplifier has reach it through the `PassContext` (see
    `pass_context`). TileLang's `simplify_arguments=True` (also drop unused parameters) is not
    provided and raises."""
    if simplify_arguments:
        raise NotImplementedError("tilelang.transform.Simplify(simplify_arguments=True): removing unused "
                                  "parameters is TileLang's own extension, not provided by tilelang-core; "
                                  "call Simplify() to simplify the statements")
    from tvm.ir.transform import Sequential

    from .pass_context import SIMPLIFY_KEY, ambient_configs

    def inline(func, _mod, _ctx):
        options = ambient_configs().get(SIMPLIFY_KEY) or {}
        if not options.get("enable_simplify_let_inline", True):
            return func
        return func.with_body(inline_trivial_binds(func.body))

    return Sequential([tirx.transform.prim_func_pass(inline, opt_level=0, name="tl.InlineTrivialBinds"),
                       tirx.transform.StmtSimplify()], name="tl.Simplify")


def inline_trivial_binds(stmt):
    """`stmt` with each `Bind(var, value)` whose value is a constant or a variable substituted
    into the statements after it in its sequence, and removed."""
    from .irutil import map_stmts, seq, substitute

    def flatten(node):
        kept, mapping = [], {}
        for child in node.seq:
            if isinstance(child, tirx.Bind) and isinstance(child.value, (tirx.IntImm, tirx.FloatImm, tirx.Var)):
                mapping[child.var] = substitute(child.value, mapping)
                continue
            kept.append(substitute(child, mapping))
        return seq(kept) if mapping else node

    return map_stmts(stmt, (tirx.SeqStmt,), flatten)


def FlattenBuffer() -> Pass:  # noqa: N802
    """Multi-dimensional buffer accesses flattened to one dimension (TVM's pass)."""
    return tirx.transform.FlattenBuffer()


def VectorizeLoop(enable_vectorize: bool = True) -> Pass:  # noqa: N802
    """Loops marked vectorized become vector operations; with `enable_vectorize=False`, serial
    loops (TVM's pass)."""
    return tirx.transform.VectorizeLoop(enable_vectorize)


def UnrollLoop() -> Pass:  # noqa: N802
    """Loops marked unrolled (and those `tirx.UnrollLoop`'s pass config selects) expanded."""
    return tirx.transform.UnrollLoop()


def MakePackedAPI() -> Pass:  # noqa: N802
    """Host-side PrimFuncs rewritten to take TVM's packed arguments (TVM's pass)."""
    return tirx.transform.MakePackedAPI()


def SplitHostDevice() -> Pass:  # noqa: N802
    """Device regions (under a target's thread launches) outlined into device PrimFuncs."""
    return tirx.transform.SplitHostDevice()


def LowerOpaqueBlock() -> Pass:  # noqa: N802
    """Opaque blocks removed; their allocations placed where the block was (TVM's pass)."""
    return s_tir.transform.LowerOpaqueBlock()


def InjectSoftwarePipeline() -> Pass:  # noqa: N802
    """Loops annotated with `software_pipeline_stage`/`order` rewritten as a software pipeline
    (prologue, steady state, epilogue; TVM's pass)."""
    return s_tir.transform.InjectSoftwarePipeline()


def ThreadSync(storage_scope: str) -> Pass:  # noqa: N802
    """Barriers inserted where threads of a block exchange data through `storage_scope`
    memory ("shared", "shared.dyn", "global"; TVM's pass)."""
    if not isinstance(storage_scope, str) or not storage_scope:
        raise TypeError(f"tilelang.transform.ThreadSync(storage_scope): a memory scope such as 'shared', "
                        f"got {storage_scope!r}")
    return s_tir.transform.ThreadSync(storage_scope)
