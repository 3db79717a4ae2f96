"""`JITFunction`: what `@tilelang.jit` returns, one compiled kernel per specialization.

Three kinds of decorated object, told apart when decorated:
- a lazy-style factory (returns a `T.prim_func` built from its Python arguments): calling
  it, or `.compile(...)`, returns the kernel for those arguments;
- an eager-style function (declares its parameters in its body, see `jit/eager.py`):
  `.compile(**values)` returns the kernel for compile-time arguments and `T.const` values,
  and calling it with tensors compiles from their shapes (once per distinct set) and runs;
- a `T.prim_func`: calling it with tensors compiles it once and runs.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .eager import EagerProgram, EagerStyleError, _freeze, is_eager_style

__all__ = ["JITFunction"]


class JITFunction:
    """A decorated kernel function plus its compile options and compiled specializations."""

    def __init__(self, func: Any, *, out_idx: int | Sequence[int] | None = None, target: Any = None,
                 pass_configs: dict[str, Any] | None = None, execution_backend: str | None = None,
                 verbose: bool = False, **compile_kwargs: Any) -> None:
        from tvm import tirx as tir

        self.orig_func = func
        self.out_idx = out_idx
        self.target = target
        self.pass_configs = pass_configs
        self.execution_backend = execution_backend
        self.verbose = verbose
        self.compile_kwargs = compile_kwargs
        self.is_prim_func = isinstance(func, tir.PrimFunc)
        self.is_eager = not self.is_prim_func and is_eager_style(func)
        # an eager function that cannot become a kernel (a stub with no `with T.Kernel` yet)
        # decorates fine and raises when compiled or called, as in TileLang
        self._eager_problem: EagerStyleError | None = None
        self._eager_program: EagerProgram | None = None
        if self.is_eager:
            try:
                self._eager_program = EagerProgram(func)
            except EagerStyleError as exc:
                self._eager_problem = exc
        if self.is_eager and out_idx is not None:
            raise TypeError(f"@tilelang.jit(out_idx=...) on {func.__qualname__}: an eager-style function names its "
                            "outputs by returning its T.empty tensors; drop out_idx")
        from .api import KernelMemo

        self._kernels: dict[Any, Any] = KernelMemo()  # bounded like compile's memo
        if not self.is_prim_func:
            functools.update_wrapper(self, func)

    @property
    def _eager(self) -> EagerProgram:
        if self._eager_problem is not None:
            raise self._eager_problem
        return self._eager_program

    # -- the three entry points -------------------------------------------------------------

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        """The kernel IR (`T.prim_func`) for these arguments, not compiled."""
        from tvm import tirx as tir

        if self.is_prim_func:
            return self.orig_func
        if self.is_eager:
            compile_time, tensors, extra = self._eager.bind(args, kwargs)
            return self._eager.prim_func(compile_time, self._eager.const_values(compile_time, tensors, extra))
        prim = self.orig_func(*args, **kwargs)
        if not isinstance(prim, tir.PrimFunc):
            raise TypeError(f"@tilelang.jit function {self.orig_func.__qualname__} must return a T.prim_func, got "
                            f"{type(prim).__name__} (or declare its parameters in its body: the eager style)")
        return prim

    def compile(self, *args: Any, **kwargs: Any):
        """The compiled kernel for these arguments (memoized per distinct arguments)."""
        if self.is_eager:
            compile_time, tensors, extra = self._eager.bind(args, kwargs)
            return self._eager_kernel(compile_time, self._eager.const_values(compile_time, tensors, extra))
        key = (_freeze(args), _freeze(kwargs))
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = self._compile(self.get_tir(*args, **kwargs), self.out_idx)
        return kernel

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        """The device source of the kernel for these arguments (compiled if need be), before
        any call: `compile(*args, **kwargs).get_kernel_source()`."""
        return self.compile(*args, **kwargs).get_kernel_source()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.is_prim_func:
            return self.compile()(*args, **kwargs)
        if not self.is_eager:
            return self.compile(*args, **kwargs)
        compile_time, given, extra = self._eager.bind(args, kwargs)
        missing = [p for p in self._eager.tensor_params if p not in given]
        if missing:
            raise TypeError(f"{self.orig_func.__qualname__}: missing argument(s) {', '.join(missing)}; to compile "
                            f"without tensors use {self.orig_func.__name__}.compile(...)")
        kernel = self._eager_kernel(compile_time, self._eager.const_values(compile_time, given, extra))
        return kernel(*(given[p] for p in self._eager.tensor_params))

    # -- internals ----------------------------------------------------------------------------

    def _eager_kernel(self, compile_time: dict[str, Any], consts: dict[str, int]):
        key = (_freeze(compile_time), _freeze(consts))
        kernel = self._kernels.get(key)
        if kernel is None:
            prim = self._eager.prim_func(compile_time, consts)
            kernel = self._kernels[key] = self._compile(prim, self._eager.out_idx or None)
        return kernel

    def _compile(self, prim: Any, out_idx: Any):
        from .api import compile as compile_prim

        return compile_prim(prim, out_idx, self.target, self.pass_configs, self.execution_backend, self.verbose,
                            **self.compile_kwargs)

    def __repr__(self) -> str:
        style = "prim_func" if self.is_prim_func else "eager" if self.is_eager else "lazy"
        name = getattr(self.orig_func, "__qualname__", None) or getattr(self.orig_func, "__name__", "kernel")
        return f"<JITFunction {name} ({style}), {len(self._kernels)} compiled>"


def make_jit(func: Callable | None, **options: Any):
    """`@jit` and `@jit(...)`: wrap `func` now, or return the decorator."""
    if func is not None:
        return JITFunction(func, **options)
    return lambda f: JITFunction(f, **options)
