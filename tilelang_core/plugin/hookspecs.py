"""The plugin contract: every hook a backend may implement, in the order a kernel meets them.

Each docstring gives, in this order: a summary, whether the first non-None result wins, the
parameters, the result, and when the core calls it. Implementations may take fewer arguments
than the spec names (pluggy passes only what they ask for), so a spec can grow new, opt-in
arguments without breaking a backend.

Hooks that take a `target` are *per-target*: the core calls them only on the plugin that
declared the target's kind, so an implementation never checks which target it was handed.
"""
from __future__ import annotations

import pluggy

__all__ = ["hookspec", "hookimpl", "PER_TARGET_HOOKS", "PROJECT_NAME"]

PROJECT_NAME = "tilelang"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

# Hooks dispatched only to the plugin that owns the target's kind.
PER_TARGET_HOOKS = (
    "tilelang_pipeline",
    "tilelang_lower_tile_op",
    "tilelang_infer_layout",
    "tilelang_codegen",
    "tilelang_check_source",
    "tilelang_compile",
    "tilelang_runtime",
    "tilelang_cache_key",
    "tilelang_conformance_expectations",
    "tilelang_op_config",
)

# ---------------------------------------------------------------------------------------------
# Discovery: which targets exist, which are present on this machine
# ---------------------------------------------------------------------------------------------


@hookspec
def tilelang_register_targets(registry):
    """Declare target kinds, their arch tags and capability tables.

    All implementations are called; results are ignored.

    :param registry: the `TargetRegistry`; call `registry.add_kind(TargetKind(...))` once per
        kind this backend owns, then `registry.add_spelling(name, meaning)` once per name other
        tools give these targets (TileLang's and TVM's short target names), so that
        `target="..."` written for TileLang resolves through this backend and no other.
    :returns: None.

    Called once, when the plugin manager loads the backends.
    """


@hookspec
def tilelang_detect_targets():
    """Report the targets usable on this machine: a device found, a toolchain found, or neither.

    All implementations are called; their lists are concatenated.

    :returns: a list of `Detection` (kind, arch, device found, toolchain found, reason, and the
        capability table refined with what the driver reports, when a device is present).

    Called by `tilelang backends`, by `Target.parse("auto")` and by the conformance runner.
    Must not raise when hardware or toolchains are missing: say so in `reason` instead.
    """


# ---------------------------------------------------------------------------------------------
# Compilation: passes, tile-op lowering, layouts
# ---------------------------------------------------------------------------------------------


@hookspec
def tilelang_pipeline(target, pipeline):
    """Insert or replace passes at named points of the core pipeline for this target.

    Per-target; all results are ignored (the hook edits `pipeline` in place).

    :param target: the `Target` being compiled for.
    :param pipeline: the `Pipeline`; use `pipeline.insert_after(point, name, pass_fn)`,
        `pipeline.insert_before(...)` or `pipeline.replace(name, pass_fn)`.
    :returns: None.

    Called once per compilation, before the first pass runs.
    """


@hookspec(firstresult=True)
def tilelang_lower_tile_op(target, op, ctx):
    """Lower one tile op (a `T.copy`, `T.gemm`, ...) with the target's own instructions.

    Per-target; the first non-None result wins.

    :param target: the `Target`.
    :param op: the tile op being lowered (its name, operands and source line).
    :param ctx: the `LowerContext`: thread count, layouts inferred so far, helpers that build IR.
    :returns: the lowered statement, or None to take the core's portable lowering.

    Called by the core's tile-op lowering pass, once per tile op in the program.
    """


@hookspec(firstresult=True)
def tilelang_infer_layout(target, op, ctx):
    """Layout constraints a tile op imposes on its fragments on this target (e.g. MMA layouts).

    Per-target; the first non-None result wins.

    :param target: the `Target`.
    :param op: the tile op whose operands need layouts.
    :param ctx: the `LayoutContext`: layouts decided so far (`ctx.layouts.get(buffer)`), the
        block's thread count.
    :returns: a mapping from fragment buffer to `tilelang_core.layout.Fragment` (e.g. a matrix
        instruction's accumulator layout, or its A-operand layout when A is a fragment), or
        None. The op's lowering then reads and writes the fragment through
        `LowerContext.register_buffer` inside `LowerContext.per_thread`.

    Called by the core's layout inference on SIMT targets, once per tile op in program order,
    before propagation. A layout that does not cover the fragment over the block's threads is
    ignored; one that contradicts a layout given earlier is noted in the kernel's layout report
    (the op's lowering sees `LowerContext.layout_of` and takes a path that needs none); one
    that contradicts the user's `T.Fragment` annotation is a compile error naming both lines.
    Everything else (elementwise loops, reductions, copies) follows from the core's inference.
    """


# ---------------------------------------------------------------------------------------------
# Code generation, device compilation, running
# ---------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def tilelang_codegen(target, module, options):
    """Render the lowered program as device source (and host glue if the target needs it).

    Per-target; the first non-None result wins.

    :param target: the `Target`.
    :param module: the lowered `PrimFunc` after every pass of the pipeline.
    :param options: the frozen `CompileOptions`.
    :returns: a `KernelSource` (source text, entry name, launch metadata).

    Called once per compilation; must not import a driver (rendering runs without a device).
    """


@hookspec(firstresult=True)
def tilelang_check_source(target, source):
    """Check generated source without the vendor's compiler (the conformance suite's codegen
    level), as strongly as this machine allows: e.g. a syntax check by clang against a header
    that declares the target language's types and functions.

    Per-target; the first non-None result wins. Optional: a backend without such a check
    leaves it out, and the codegen level then checks only that the source defines its entry
    and that its brackets balance.

    :param target: the `Target`.
    :param source: the `KernelSource` from `tilelang_codegen`.
    :returns: a short description of the check that passed (e.g. "clang-19 -fsyntax-only
        against the MSL declarations"), or None when the backend has no such check or the
        tool it needs is missing here (its `tilelang_detect_targets` reason should say so).
    :raises Exception: one naming what failed, the tool's log, and a command that reproduces it.

    Called by the conformance runner at the codegen and compile levels, after `tilelang_codegen`.
    """


@hookspec(firstresult=True)
def tilelang_compile(target, source, options):
    """Turn device source into a binary the runtime loads.

    Per-target; the first non-None result wins.

    :param target: the `Target`.
    :param source: the `KernelSource` from `tilelang_codegen`.
    :param options: the frozen `CompileOptions`.
    :returns: the binary as bytes (cubin, code object, shared library, ...).
    :raises CompileError: with the toolchain's log, the generated file and a command that
        reproduces the failure.

    Called on a cache miss only.
    """


@hookspec(firstresult=True)
def tilelang_runtime(target):
    """The loader and launcher for this target's binaries.

    Per-target; the first non-None result wins.

    :param target: the `Target`.
    :returns: a `Runtime` (load a binary, launch on a stream, allocate outputs, time with
        events). It must import neither TVM nor the compiler, so exported kernels load on a
        machine that has only the runtime's dependencies.

    Called when a kernel is first called, and by `tilelang_core.load`.
    """


@hookspec
def tilelang_cache_key(target, options):
    """What must enter the cache key besides the source: toolchain versions, flags.

    Per-target; all results are collected, in registration order.

    :param target: the `Target`.
    :param options: the frozen `CompileOptions`.
    :returns: a string, or None when nothing beyond the source and target matters.

    Called once per compilation, before the disk cache is looked up.
    """


# ---------------------------------------------------------------------------------------------
# Conformance
# ---------------------------------------------------------------------------------------------


@hookspec
def tilelang_conformance_expectations(target):
    """Known gaps of this target in the shared conformance suite, as strict xfails.

    Per-target; all results are collected and merged.

    :param target: the `Target`.
    :returns: a mapping from conformance case name to the reason it is expected to fail.

    Called by the conformance runner before it runs the cases for `target`.
    """


# ---------------------------------------------------------------------------------------------
# Ready operators (`tilelang_core.ops`)
# ---------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def tilelang_op_config(target, op, problem, config):
    """This target's own choice of kernel and tile config for one ready operator.

    Per-target; the first non-None result wins.

    :param target: the `Target` the operator runs on.
    :param op: the operator's name (`tilelang ops` lists them: "softmax", "gemm", ...).
    :param problem: the problem the kernel is specialised to: shapes, dtypes and flags
        (e.g. `{"M": 4096, "N": 1024, "dtype": "float16"}` for "softmax").
    :param config: the config the core's table chose for this target (a copy; e.g.
        `{"kernel": "rows", "block_M": 1, "warps": 4}`).
    :returns: a mapping of the config entries to change (only keys the operator's table
        uses, plus "kernel": the name of one of the operator's kernels or a callable
        `build(problem, config) -> PrimFunc` the backend ships), or None to keep the table's.
        An unknown key is an error that lists the valid ones.

    Called once per operator, problem and target, before the kernel is compiled; the result
    is cached with the kernel. A config found by `tilelang_core.ops.tune` overrides it.
    """


# ---------------------------------------------------------------------------------------------
# Source compatibility with TileLang
# ---------------------------------------------------------------------------------------------


@hookspec
def tilelang_compat_modules():
    """TileLang module paths this backend stands in for, when a TileLang program runs through
    `tilelang run` (the import aliasing of `tilelang_core.compat`).

    All implementations are called; their mappings are merged. A path claimed by two backends
    is given to neither, and the import error says so.

    :returns: a mapping from a TileLang module path (`"tilelang.carver.arch.driver"`) to the
        import path of this backend's module that provides the same names with the same
        meanings, or to None for a TileLang path that belongs to this backend's hardware but
        is not provided yet (importing it then fails naming this backend). A path covers its
        submodules: `X.sub` resolves to `MODULE.sub` (or, for None, fails the same way).

    Called the first time a program run through the aliasing imports a TileLang module that
    the core does not provide; must not import a driver or probe a device.
    """


@hookspec
def tilelang_language_keywords():
    """Keywords this backend adds to calls of the core's language, for its own hardware
    (Moore Threads' TileLang port: `T.copy(..., force_async_copy=True)`,
    `T.Kernel(..., producer_threads=128)`).

    All implementations are called; their mappings are merged. The core's own keywords always
    win; a keyword of one call offered by two backends is given to neither, and passing it says
    so. A keyword no installed backend offers is refused (a TypeError naming the call).

    The core records what a program passes (`TileOp.hints` of a `T.copy`, `kernel_hints(func)`
    for `T.Kernel`). The rule for the other backends: an extension keyword only steers how the
    backend that offers it generates code, never what a kernel computes, so every other
    backend compiles the program as if the keyword were absent.

    :returns: a mapping from a core call name (`"copy"`, `"Kernel"`) to a mapping from a
        keyword to a function that checks a value and returns what the core records (a bool,
        int, float or str), raising TypeError or ValueError with the reason.

    Called the first time a program passes a keyword the core does not define; must not import
    a driver or probe a device.
    """


@hookspec
def tilelang_language_names():
    """Names this backend adds to the kernel language, so that `T.<name>` finds them: the
    instructions TileLang's language offers for this backend's hardware and its programs call
    directly (TileLang's `T.ptx_mma` and `T.ptx_ldmatrix` on NVIDIA GPUs).

    All implementations are called; their mappings are merged. The core's own names always
    win; a name offered by two backends is given to neither, and reading it says so.

    :returns: a mapping from a name to the object `T.<name>` gives (typically a function that
        builds a call of a builtin this backend's printer prints; other targets reject the
        call at code generation, naming it).

    Called the first time a kernel reads a `T.<name>` that the core does not define; must not
    import a driver or probe a device.
    """
