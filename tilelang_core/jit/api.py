"""`tilelang_core.compile` and `@tilelang_core.jit`: tile IR in, a callable kernel out."""
from __future__ import annotations

import collections
import dataclasses
import json
import threading
import time
from typing import Any, Callable, Sequence

from .. import env
from ..runtime.base import KernelMeta, ParamSpec
from ..runtime.kernel import Kernel
from ..transform.pass_context import ambient_configs
from .options import CompileOptions

# The plugin manager, the cache and TVM load on the first compile, keeping
# `import tilelang_core` cheap.

__all__ = ["compile", "jit", "JITKernel", "KernelMemo", "lower"]


class JITKernel(Kernel):
    """A kernel compiled in this process: adds the target, timings and the cache outcome.

    TileLang's constructor form `JITKernel(func, out_idx=None, target="auto", ...)` (a
    `T.prim_func` first) compiles it: it is `tilelang.compile(func, ...)` with the same keywords."""

    def __new__(cls, *args: Any, **kwargs: Any):
        func = args[0] if args else kwargs.get("func")
        if _is_program(func):
            kwargs.pop("func", None)
            return compile(func, *args[1:], **kwargs)
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if _is_program(args[0] if args else kwargs.get("func")):
            return  # built by __new__ through compile()
        super().__init__(*args, **kwargs)

    target: Any
    cache_hit: bool = False
    compile_seconds: float = 0.0
    # set by the autotuner on the kernel it returns (TileLang's names)
    config: dict[str, Any] | None = None
    latency: float | None = None
    ref_latency: float | None = None


class KernelMemo(collections.OrderedDict):
    """The in-process memo of `compile`: at most `capacity` kernels (default
    `TILELANG_KERNEL_MEMO_SIZE`), the least recently used dropped first, so tuning thousands of
    candidates does not keep every one loaded. A dropped kernel the caller no longer holds is
    freed, its loaded code with it; the disk cache still has it."""

    def __init__(self, capacity: int | None = None) -> None:
        super().__init__()
        self.capacity = capacity

    def get(self, key, default=None):
        if key in self:
            self.move_to_end(key)
            return self[key]
        return default

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        if self.capacity is None:
            from .. import env

            self.capacity = env.kernel_memo_size()
        while len(self) > self.capacity:
            self.popitem(last=False)


_MEMO: KernelMemo = KernelMemo()
_MEMO_LOCK = threading.Lock()


def _is_program(value: Any) -> bool:
    """A PrimFunc or an IRModule (what `compile` takes), not a kernel's metadata."""
    return type(value).__name__ in ("PrimFunc", "IRModule")


def _normalize_out_idx(out_idx, func) -> tuple[int, ...]:
    """`out_idx` as sorted positions of `func`'s tensor parameters; a clear error for anything
    else (not ints, out of range, a scalar parameter)."""
    from tvm import tirx as tir

    if out_idx is None:
        return ()
    params = list(func.params)
    names = ", ".join(f"{n}: {p.name}" for n, p in enumerate(params))
    items = [out_idx] if isinstance(out_idx, int) else out_idx
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        items = [items]
    out = []
    for i in items:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"out_idx: {i!r} is not a parameter position; pass an int or a list of ints "
                            f"(-1 is the last parameter; the parameters are {names})")
        j = i + len(params) if i < 0 else i
        if not 0 <= j < len(params):
            raise ValueError(f"out_idx {i} is out of range for a kernel with {len(params)} parameters ({names})")
        if not tir.is_buffer_var(params[j]):
            raise ValueError(f"out_idx {i} names the scalar parameter {params[j].name!r}; outputs are tensors "
                             f"the call allocates: name a tensor parameter ({names})")
        out.append(j)
    return tuple(sorted(set(out)))


def _param_specs(func) -> list[ParamSpec]:
    from tvm import tirx as tir

    specs = []
    for p in func.params:
        if tir.is_buffer_var(p):
            shape = tuple(int(d) if isinstance(d, tir.IntImm) else str(d) for d in p.shape)
            strides = tuple(int(s) if isinstance(s, tir.IntImm) else str(s) for s in p.strides) or None
            specs.append(ParamSpec(p.name, "tensor", str(p.dtype), shape, strides))
        else:
            specs.append(ParamSpec(p.name, "scalar", str(p.ty.dtype)))
    return specs


def lower(func, target, options: CompileOptions, facts: dict | None = None):
    """Run the pass pipeline (with the backend's edits) and return the lowered PrimFunc."""
    from ..plugin import hooks_for
    from ..transform.pipeline import PassContext, default_pipeline

    from ..transform.errors import LowerAgain

    hooks = hooks_for(target)
    pipeline = default_pipeline()
    hooks.pipeline(pipeline)
    dump = None
    if options.debug_dump:
        def dump(name, f):  # noqa: E306
            print(f"# ---- after {name} ----\n{f.script()}")
    notes: list[str] = []
    for _ in range(4):  # each LowerAgain changes an option; a few at most
        ctx = PassContext(target=target, options=options, hooks=hooks)
        try:
            lowered = pipeline.run(func, ctx, dump)
            break
        except LowerAgain as again:
            changed = dataclasses.replace(options, **again.changes)
            if changed == options:
                raise RuntimeError(f"a pass asked to lower again without changing an option: {again.reason}") from None
            notes.append(again.reason)
            options = changed
    else:
        raise RuntimeError(f"lowering did not settle after {len(notes)} fallbacks: {'; '.join(notes)}")
    if facts is not None:
        facts.update(ctx.facts)
        if notes:
            facts["lowering_notes"] = notes
    return lowered


def _build(func, target, options: CompileOptions, out_idx: tuple[int, ...]):
    """(meta, binary, source) of `func`: one device kernel, or one per launch of a function of
    several launches (see `transform/launches.py`)."""
    from ..transform.launches import split_launches

    plan = split_launches(func)
    if plan is not None:
        return _build_launches(func, plan, target, options, out_idx)
    facts: dict = {}
    meta, binary, source = _build_one(func, target, options, facts)
    meta = dataclasses.replace(meta, out_idx=out_idx, extra={
        **meta.extra,
        # what layout inference and storage planning decided, for Kernel.explain() (JSON: it
        # travels with exports)
        "layout_report": json.dumps(facts.get("layout_report", [])),
        "shared_plan": json.dumps(facts.get("shared_plan", {})),
        # forms the compiler fell back from, with the reason (transform.errors.LowerAgain)
        "lowering_notes": json.dumps(facts.get("lowering_notes", [])),
        **({"may_alias": True} if options.may_alias else {})})
    return meta, binary, source


def _build_one(func, target, options: CompileOptions, facts: dict):
    """Lower, generate and compile one launch: its meta (no outputs), binary and source."""
    from ..plugin import hooks_for
    from .postproc import postprocess

    hooks = hooks_for(target)
    lowered = lower(func, target, options, facts)
    source = postprocess(target, hooks.codegen(lowered, options))
    binary = hooks.compile(source, options)
    symbols = facts.get("symbols", {})
    extra = dict(source.extra)
    if "tensor_alignment" in facts:  # vector accesses to global memory (transform/vectorize*.py)
        extra["tensor_alignment"] = max(int(extra.get("tensor_alignment", 1)), int(facts["tensor_alignment"]))
    params = _param_specs(func) + [ParamSpec(name, "scalar", "int32") for name in symbols]
    meta = KernelMeta(
        target=str(target),
        entry=source.entry,
        params=tuple(params),
        grid=tuple(source.grid),
        block=tuple(source.block),
        shared_memory=int(source.shared_memory),
        symbols={k: tuple(v) for k, v in symbols.items()},
        extra={"language": source.language, **{k: v for k, v in extra.items() if isinstance(v, (str, int, float, bool))}},
    )
    return meta, binary, source.source


def _build_launches(func, plan, target, options: CompileOptions, out_idx: tuple[int, ...]):
    """A function of several launches: each launch built alone (its parameters are the
    function's, then the workspaces), gathered under one meta with the caller's contract."""
    from ..transform.finalize import symbolic_dims
    from ..transform.launches import workspace_specs

    symbols = {name: (p, d) for name, (_, p, d) in symbolic_dims(func).items()}
    launches, binaries, sources, report = [], [], [], []
    for part in plan.launches:
        facts: dict = {}
        meta, binary, source = _build_one(part, target, options, facts)
        if list(meta.symbols) != list(symbols):
            raise RuntimeError(f"{plan.name}: launch {meta.entry} reads symbolic dims {list(meta.symbols)}, "
                               f"the function {list(symbols)} (a pass changed the parameters)")
        launches.append(dataclasses.replace(meta, binary_name=f"{meta.entry}.bin"))
        binaries.append(binary)
        sources.append(source)
        report.extend(facts.get("layout_report", []))
    alignments = [int(m.extra["tensor_alignment"]) for m in launches if "tensor_alignment" in m.extra]
    extra: dict[str, Any] = {"language": launches[0].extra.get("language", ""), "layout_report": json.dumps(report)}
    if all("written_params" in m.extra for m in launches):  # the user's parameters any launch writes
        written = {int(i) for m in launches for i in str(m.extra["written_params"]).split(",") if i}
        extra["written_params"] = ",".join(str(i) for i in sorted(written) if i < len(func.params))
    if alignments:
        extra["tensor_alignment"] = max(alignments)
    if options.may_alias:  # the call path then allows a written tensor to share memory with another
        extra["may_alias"] = True
    meta = KernelMeta(
        target=str(target),
        entry=plan.name,
        params=tuple(_param_specs(func) + [ParamSpec(name, "scalar", "int32") for name in symbols]),
        symbols=symbols,
        out_idx=out_idx,
        extra=extra,
        workspaces=workspace_specs(func, plan),
        launches=tuple(launches),
    )
    return meta, tuple(binaries), "\n\n".join(sources)


def _annotated_options(func) -> tuple[dict, tuple]:
    """The pass configs and compile flags a kernel's body annotated (function attributes of
    `T.annotate_pass_configs` / `T.annotate_compile_flags`), as Python values."""
    from ..language.eager import ATTR_COMPILE_FLAGS, ATTR_PASS_CONFIGS

    attrs = func.attrs or {}
    configs = {}
    for key, value in dict(attrs.get(ATTR_PASS_CONFIGS, {}) or {}).items():
        configs[str(key)] = value.value if hasattr(value, "value") else (str(value) if isinstance(value, str) else value)
    flags = tuple(str(f) for f in (attrs.get(ATTR_COMPILE_FLAGS, ()) or ()))
    return configs, flags


def compile(func, out_idx: int | Sequence[int] | None = None, target: Any = None,
            pass_configs: dict[str, Any] | None = None, execution_backend: str | None = None,
            verbose: bool = False, cache: bool = True, *, target_host: Any = None,
            compile_flags: str | Sequence[str] | None = None, debug_root_path: str | None = None) -> JITKernel:
    """Compile a `T.prim_func` for a target (default: `TILELANG_TARGET`, else `auto`).

    `out_idx` names the parameters that are outputs: they are allocated on each call, in the
    same array library and device as the inputs, and returned.

    TileLang's other keywords: `execution_backend` (TileLang's choice of host wrapper:
    "auto", "tvm_ffi", "cython", "nvrtc", "ctypes", "torch"...) is accepted and has no effect,
    since each backend has one launcher, its runtime; `target_host` likewise (the host side is
    the runtime's Python); `compile_flags` are extra flags for the device compiler (as the
    `extra_flags` pass config); `debug_root_path` is a directory the generated source is
    written to, as `<entry>.<source language>`; `verbose` prints the outcome.
    """
    try:
        import tvm_ffi
    except ModuleNotFoundError as exc:
        from .. import COMPILER_HINT

        raise ImportError(f"tilelang_core.compile needs the compiler half (TVM, module {exc.name!r}), which this "
                          f"install lacks: {COMPILER_HINT}") from exc

    from .. import __version__
    from ..plugin import get_plugin_manager, hooks_for
    from .cache import KernelCache, cache_key, core_fingerprint
    from .postproc import has_postproc

    from .artifact import single_prim_func

    func = single_prim_func(func, "compile")
    start = time.perf_counter()
    tgt = get_plugin_manager().parse_target(target)
    own_configs, own_flags = _annotated_options(func)  # T.annotate_pass_configs / _compile_flags
    # TileLang's keys set on an entered `PassContext` (the aliasing accepts them there), under ours
    ambient = ambient_configs()
    options = CompileOptions.from_pass_configs({**ambient, **own_configs, **(pass_configs or {})})
    flags = ((compile_flags,) if isinstance(compile_flags, str) else tuple(compile_flags or ())) + own_flags
    if flags:
        options = dataclasses.replace(options, extra_flags=options.extra_flags + flags)
    n_params = len(func.params)
    outs = _normalize_out_idx(out_idx, func)
    # a post-processing callback is arbitrary Python: no cache key can say what it does, so
    # its kernels neither come from nor go to the caches
    postprocessed = has_postproc(tgt)
    cache = cache and not postprocessed
    memo_key = (tvm_ffi.structural_hash(func), str(tgt), options, outs)
    with _MEMO_LOCK:
        hit = _MEMO.get(memo_key)
    if hit is not None and cache:
        return hit
    hooks = hooks_for(tgt)
    key = cache_key(__version__, core_fingerprint(), func.script(show_meta=True), str(tgt), repr(tgt.options), options.key(),
                    repr(outs), *hooks.cache_key(options))
    if cache:
        (meta, binary, source), was_hit = KernelCache().get_or_build(key, lambda: _build(func, tgt, options, outs))
    else:
        (meta, binary, source), was_hit = _build(func, tgt, options, outs), False
    kernel = JITKernel(meta, binary, hooks.runtime(), source)
    kernel.target = tgt
    kernel.cache_hit = was_hit
    kernel.compile_seconds = time.perf_counter() - start
    if verbose or env.print_on_compilation():
        print(f"tilelang: {meta.entry} for {tgt}: {'cache hit' if was_hit else 'compiled'} in {kernel.compile_seconds * 1e3:.1f} ms")
        if options.ignored:
            print(f"tilelang: pass configs with no effect on {tgt}: {', '.join(options.ignored)}")
    if debug_root_path:
        _write_debug_source(kernel, debug_root_path)
    if not postprocessed:
        with _MEMO_LOCK:
            _MEMO[memo_key] = kernel
    return kernel


def _write_debug_source(kernel: JITKernel, root: str) -> None:
    import os

    os.makedirs(root, exist_ok=True)
    ext = str(kernel.meta.extra.get("language") or "txt")
    with open(os.path.join(root, f"{kernel.meta.entry}.{ext}"), "w") as out:
        out.write(kernel.source or "")


def jit(func: Callable | None = None, *, out_idx: int | Sequence[int] | None = None,
        target: Any = None, pass_configs: dict[str, Any] | None = None,
        execution_backend: str | None = None, verbose: bool = False, **compile_kwargs: Any):
    """`@jit` / `@jit(out_idx=..., target=..., pass_configs=...)`: returns a `JITFunction`.

    On a lazy-style factory (returns a `T.prim_func`) a call returns the kernel for those
    arguments; on an eager-style function (declares its tensors in its body) a call with
    tensors compiles for their shapes and runs, `.compile(**values)` returns the kernel; on a
    `T.prim_func` a call compiles once and runs. Other keywords go to `compile` (see there).
    """
    from .function import make_jit

    return make_jit(func, out_idx=out_idx, target=target, pass_configs=pass_configs,
                    execution_backend=execution_backend, verbose=verbose, **compile_kwargs)
