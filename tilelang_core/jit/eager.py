"""The eager style of `@tilelang.jit`: a kernel whose signature is written in its body.

    @tilelang.jit
    def matmul(A, B, block_M: int, block_N: int):
        M, N, K = T.const("M, N, K")          # prologue: plain Python, run per specialization
        A: T.Tensor((M, K), T.float16)        # A and B become tensor parameters
        B: T.Tensor((K, N), T.float16)
        C = T.empty((M, N), T.float16)        # an output parameter
        with T.Kernel(...) as (bx, by):       # the kernel body: from the first `with` on
            ...
        return C                              # the returned outputs (out_idx)

`EagerProgram` reads the function's top-level statements once:
- the prologue is every statement before the first `with` except the declarations; it runs
  as Python with the compile-time arguments (the parameters that are not annotated);
- `p: <annotation>` on a parameter declares it: a `T.Tensor(...)` annotation makes a tensor
  parameter, a dtype (`T.int32`) a scalar one; `x = T.empty(shape, dtype)` declares an output;
- everything from the first `with` (or the first `x = T.alloc_global(...)` workspace, which
  belongs to the kernel) to the final `return` is the kernel body, parsed by TVMScript as the
  body of a `T.prim_func` whose signature is the declarations: the tensor and scalar
  parameters in the function's order, then the outputs in declaration order. The body may
  hold several launches (`with T.Kernel` one after another).

`T.const` names are learnt in two passes: the prologue first runs with symbolic vars, which
shows the dims of the annotated tensors each name appears in directly (`A: T.Tensor((M, K))`
ties `M` to `A.shape[0]`); the values then come from `.compile(M=...)` keywords or from the
tensors of the call, and the prologue runs again with them to give the specialized kernel.

The generated `prim_func` keeps the user's line numbers (the body's text is used verbatim), so
a `KernelSyntaxError` points at the user's file and line.
"""
from __future__ import annotations

import __future__
import ast
import inspect
import linecache
import textwrap
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["EagerProgram", "EagerStyleError", "is_eager_style"]


class EagerStyleError(TypeError):
    """An eager `@tilelang.jit` function that cannot be specialized: the message says which
    declaration or argument and what to do."""


def _function_ast(fn: Callable) -> tuple[ast.FunctionDef, str]:
    """The function's AST with the file's line numbers, and its file name."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as err:
        raise EagerStyleError(f"@tilelang.jit: cannot read the source of {fn.__qualname__} ({err}); define it in a file") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise EagerStyleError(f"@tilelang.jit decorates a function, got {type(node).__name__}")
    return node, inspect.getsourcefile(fn) or fn.__code__.co_filename


def _is_call_to(node: ast.AST, name: str) -> bool:
    """`T.name(...)` or `name(...)`."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == name) or (isinstance(f, ast.Name) and f.id == name)


def _body_without_docstring(node: ast.FunctionDef) -> list[ast.stmt]:
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def _declares(stmt: ast.stmt, params: set[str]) -> bool:
    annotated = isinstance(stmt, ast.AnnAssign) and stmt.value is None and isinstance(stmt.target, ast.Name) and stmt.target.id in params
    return annotated or _empty_target(stmt) is not None


def _empty_target(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and _is_call_to(stmt.value, "empty"):
        return stmt.targets[0].id
    return None


def _allocates_workspace(stmt: ast.stmt) -> bool:
    """`x = T.alloc_global(...)`: a statement of the kernel body, not of the prologue."""
    return isinstance(stmt, ast.Assign) and _is_call_to(stmt.value, "alloc_global")


def is_eager_style(fn: Callable) -> bool:
    """True when the body declares its kernel (a parameter annotation, `T.empty`, or a top-level
    `with`) rather than returning a `T.prim_func` (the lazy style)."""
    try:
        node, _ = _function_ast(fn)
    except (EagerStyleError, SyntaxError):
        return False
    params = {a.arg for a in node.args.args + node.args.kwonlyargs}
    return any(_declares(s, params) or isinstance(s, ast.With) for s in _body_without_docstring(node))


@dataclass
class Specialization:
    """The prologue's result for one set of compile-time arguments and `T.const` values."""

    namespace: dict[str, Any]
    consts: dict[str, Any]          # name -> value (a tirx.Var when the value is not known yet)
    params: dict[str, Any]          # declared parameter -> its evaluated annotation


class EagerProgram:
    """An eager-style function, read once; `prim_func(...)` specializes it."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.signature = inspect.signature(fn)
        node, self.filename = _function_ast(fn)
        params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        self.annotations: dict[str, ast.expr] = {}
        self.empties: dict[str, ast.Call] = {}
        prologue: list[ast.stmt] = []
        kernel: list[ast.stmt] = []
        self.returned: list[str] = []
        body = _body_without_docstring(node)
        for i, stmt in enumerate(body):
            last = i == len(body) - 1
            if isinstance(stmt, ast.Return):
                if not last:
                    raise EagerStyleError(self._where(stmt, "`return` must be the last statement of an eager @tilelang.jit function"))
                self.returned = self._returned_names(stmt)
            elif kernel:
                if _declares(stmt, set(params)):
                    raise EagerStyleError(self._where(stmt, "declare parameters and T.empty outputs before the first `with`"))
                kernel.append(stmt)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is None and isinstance(stmt.target, ast.Name) and stmt.target.id in params:
                self.annotations[stmt.target.id] = stmt.annotation
            elif _empty_target(stmt) is not None:
                self.empties[_empty_target(stmt)] = stmt.value
            elif isinstance(stmt, ast.With) or _allocates_workspace(stmt):
                kernel.append(stmt)
            else:
                prologue.append(stmt)
        if not kernel:
            raise EagerStyleError(f"{fn.__qualname__}: an eager @tilelang.jit function needs a kernel body (`with T.Kernel(...)`)")
        for name in self.returned:
            if name not in self.empties:
                raise EagerStyleError(f"{fn.__qualname__} returns {name!r}, which is not declared with `{name} = T.empty(shape, dtype)`")
        # parameters in the function's order, then the outputs in declaration order
        self.tensor_params = [p for p in params if p in self.annotations]
        self.compile_time = [p for p in params if p not in self.annotations]
        self.kernel_params = self.tensor_params + list(self.empties)
        self.out_idx = [self.kernel_params.index(n) for n in self.returned]
        self._prologue = self._compile_prologue(node, prologue, params)
        self._kernel_lines = (kernel[0].lineno, kernel[-1].end_lineno)
        self._matchers: dict[tuple, dict[str, tuple[str, int]]] = {}

    # -- reading the function ------------------------------------------------------------------

    def _where(self, stmt: ast.stmt, message: str) -> str:
        line = linecache.getline(self.filename, stmt.lineno).strip()
        return f"{self.filename}:{stmt.lineno}: {message}\n    {line}"

    def _returned_names(self, stmt: ast.Return) -> list[str]:
        value = stmt.value
        items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else ([] if value is None else [value])
        if not all(isinstance(v, ast.Name) for v in items):
            raise EagerStyleError(self._where(stmt, "an eager @tilelang.jit function returns the names of its T.empty outputs"))
        return [v.id for v in items]

    def _compile_prologue(self, node: ast.FunctionDef, prologue: list[ast.stmt], params: list[str]) -> Callable:
        """The prologue as a function of every parameter that returns its locals."""
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], kwonlyargs=[], kw_defaults=[],
                             defaults=[], vararg=None, kwarg=None)
        ret = ast.Return(value=ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]))
        fdef = ast.FunctionDef(name=f"{node.name}__prologue", args=args, body=[*prologue, ret], decorator_list=[],
                               returns=None, type_params=[])
        ast.copy_location(fdef, node)
        ast.copy_location(ret, node)
        module = ast.fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))
        namespace = self._globals()
        exec(compile(module, self.filename, "exec"), namespace)  # noqa: S102 - the user's own code
        return namespace[fdef.name]

    def _globals(self) -> dict[str, Any]:
        namespace = dict(self.fn.__globals__)
        closure = self.fn.__closure__ or ()
        for name, cell in zip(self.fn.__code__.co_freevars, closure):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is bound later in the enclosing scope
                pass
        return namespace

    # -- specializing ---------------------------------------------------------------------------

    def bind(self, args: tuple, kwargs: dict) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """Split a call into (compile-time arguments, tensor/scalar parameters given, extra
        keywords: `T.const` values by name)."""
        params = self.signature.parameters
        extra = {k: v for k, v in kwargs.items() if k not in params}
        try:
            bound = self.signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in params})
        except TypeError as err:
            raise EagerStyleError(f"{self.fn.__qualname__}: {err}") from None
        bound.apply_defaults()
        given = dict(bound.arguments)
        compile_time = {p: given[p] for p in self.compile_time if p in given}
        missing = [p for p in self.compile_time if p not in given]
        if missing:
            raise EagerStyleError(f"{self.fn.__qualname__}: missing compile-time argument(s) {', '.join(missing)}")
        declared = {p: given[p] for p in self.tensor_params if p in given}
        return compile_time, declared, extra

    def run_prologue(self, compile_time: dict[str, Any], consts: dict[str, Any], fresh: Any = None) -> Specialization:
        from ..language.eager import ConstScope

        with ConstScope(consts, fresh) as scope:
            local = self._prologue(**compile_time, **{p: None for p in self.tensor_params})
            namespace = {**self._globals(), **local}
            for p in self.tensor_params:
                namespace.pop(p, None)
            params = {p: self._eval(self.annotations[p], namespace) for p in self.tensor_params}
        return Specialization(namespace, dict(scope.declared), params)

    def _eval(self, expr: ast.expr, namespace: dict[str, Any]) -> Any:
        code = compile(ast.fix_missing_locations(ast.Expression(body=expr)), self.filename, "eval")
        return eval(code, namespace)  # noqa: S307 - the user's own annotation

    def const_sources(self, compile_time: dict[str, Any]) -> dict[str, tuple[str, int]]:
        """`T.const` name -> (tensor parameter, dim) its value is read from (memoized per
        compile-time arguments)."""
        key = _freeze(compile_time)
        found = self._matchers.get(key)
        if found is None:
            try:
                spec = self.run_prologue(compile_time, {})
                same = lambda dim, value: dim.same_as(value)  # noqa: E731
            except Exception as symbolic_error:  # noqa: BLE001 - the prologue needs numbers (`assert n % 128 == 0`)
                try:
                    spec = self.run_prologue(compile_time, {}, fresh=_sentinel)
                except Exception:  # noqa: BLE001 - not that: the first error is the one to report
                    raise symbolic_error from None
                same = lambda dim, value: _int_or_none(dim) == value  # noqa: E731
            found = {}
            for name, var in spec.consts.items():
                for p, ann in spec.params.items():
                    dims = [i for i, d in enumerate(getattr(ann, "shape", ())) if same(d, var)]
                    if dims:
                        found[name] = (p, dims[0])
                        break
            found = {n: found.get(n) for n in spec.consts}
            self._matchers[key] = found
        return found

    def const_values(self, compile_time: dict[str, Any], tensors: dict[str, Any], extra: dict[str, Any]) -> dict[str, int]:
        values = {}
        for name, source in self.const_sources(compile_time).items():
            if name in extra:
                values[name] = extra[name]
            elif source is not None and source[0] in tensors:
                values[name] = int(tensors[source[0]].shape[source[1]])
            else:
                hint = f" or a tensor for {source[0]!r} (its dim {source[1]})" if source else ""
                raise EagerStyleError(f"{self.fn.__qualname__}: no value for T.const {name!r}: pass {name}=<int>{hint}")
        unknown = sorted(set(extra) - set(values))
        if unknown:
            raise EagerStyleError(f"{self.fn.__qualname__}: unexpected keyword(s) {', '.join(unknown)}; "
                                  f"parameters: {', '.join(self.signature.parameters)}; T.const names: {', '.join(values) or 'none'}")
        return values

    def prim_func(self, compile_time: dict[str, Any], consts: dict[str, int]) -> Any:
        """The `T.prim_func` for these compile-time arguments and `T.const` values."""
        from ..language import Tensor
        from ..language.parser import _parse

        spec = self.run_prologue(compile_time, consts)
        first, last = self._kernel_lines
        signature = [f"{p}: {ast.unparse(self.annotations[p])}" for p in self.tensor_params]
        for name, call in self.empties.items():  # an output is a tensor parameter of T.empty's shape and dtype
            arguments = [ast.unparse(a) for a in call.args] + [f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords]
            signature.append(f"{name}: __tl_Tensor({', '.join(arguments)})")
        body = [linecache.getline(self.filename, n) for n in range(first, last + 1)]
        header = f"@__tl_prim_func\ndef {self.fn.__name__}({', '.join(signature)}):\n"
        text = "\n" * max(first - 3, 0) + header + "".join(body)  # the body keeps its line numbers
        filename = f"{self.filename} (eager kernel {self.fn.__qualname__})"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace = {**spec.namespace, "__tl_Tensor": Tensor, "__tl_prim_func": _marked_for_tvmscript}
        flags = __future__.annotations.compiler_flag
        exec(compile(text, filename, "exec", flags=flags, dont_inherit=True), namespace)  # noqa: S102
        return _parse(namespace[self.fn.__name__], [], True)


def _marked_for_tvmscript(fn: Callable) -> Callable:
    """The generated kernel's decorator: TVMScript reads its dispatch token; running it does nothing."""
    return fn


_marked_for_tvmscript.dispatch_token = "tirx"  # type: ignore[attr-defined]


def _freeze(values: Any) -> Any:
    """A hashable key for compile-time arguments (lists, dicts and sets included)."""
    if isinstance(values, dict):
        return tuple(sorted(((k, _freeze(v)) for k, v in values.items()), key=lambda kv: repr(kv[0])))
    if isinstance(values, (list, tuple)):
        return (type(values).__name__, tuple(_freeze(v) for v in values))
    if isinstance(values, set):
        return ("set", tuple(sorted(map(repr, values))))
    try:
        hash(values)
    except TypeError:
        raise EagerStyleError(f"compile-time argument {values!r} is not hashable; pass a tuple or a number") from None
    return values


def _sentinel(name: str, dtype: str, index: int) -> int:
    """A stand-in value for the index-th `T.const` while learning which tensor dim it names,
    for prologues that compute with it: distinct per name, and a multiple of 2**16, so the
    usual `assert seq_len % block_M == 0` holds."""
    return (2 * index + 3) << 16


def _int_or_none(dim: Any) -> int | None:
    try:
        return int(dim)
    except (TypeError, ValueError):
        value = getattr(dim, "value", None)
        return int(value) if isinstance(value, int) else None
