"""split_launches: a function of several `with T.Kernel(...)` launches, one PrimFunc per launch.

Before: tile IR from the parser whose body holds, at its top level, launches (the
`thread_extent` attributes `T.Kernel` opens) one after another, and `T.alloc_global`
workspaces (`AllocBuffer` in scope "global") declared before them.
After: a `LaunchPlan` with one PrimFunc per launch, named `<function>_launch<i>`. Each takes
the function's parameters, then every workspace as a tensor parameter, and holds that launch
alone, so the pipeline and the code generators see ordinary single-launch kernels; the
runtime allocates the workspaces per call and runs the launches in order on one stream
(`runtime/launches.py`). A function of one launch and no workspace is not split (None).

At the top level, besides launches and workspaces, definitions (`DeclBuffer`: a tensor view;
`Bind`: a scalar) are repeated in front of each later launch; any other statement would run
on the host between launches, which no backend does: it is an error naming its line. A
function with workspaces but no `T.Kernel` (a CPU-style body) is one launch of that body.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import ir
from tvm import tirx as tir

from ..ir import source_of
from ..runtime.base import ParamSpec
from .errors import TileLangCompileError
from .finalize import symbolic_dims
from .irutil import seq, walk

__all__ = ["LaunchPlan", "split_launches", "workspace_specs"]


@dataclass(frozen=True)
class LaunchPlan:
    """A multi-launch function taken apart: its launches (PrimFuncs over the function's
    parameters followed by the workspaces) and its workspaces (buffer vars, in order)."""

    name: str
    launches: tuple[tir.PrimFunc, ...]
    workspaces: tuple[tir.Var, ...]


def _is_launch(stmt) -> bool:
    return isinstance(stmt, tir.AttrStmt) and stmt.attr_key == "thread_extent"


def _is_workspace(stmt) -> bool:
    return isinstance(stmt, tir.AllocBuffer) and (str(stmt.buffer.ty.storage_scope) or "global") == "global"


def _is_no_op(stmt) -> bool:
    return isinstance(stmt, tir.Evaluate) and isinstance(stmt.value, tir.IntImm)


def split_launches(func: tir.PrimFunc) -> LaunchPlan | None:
    """The launches and workspaces of `func`; None for one launch without workspaces."""
    body = func.body
    stmts = list(body.seq) if isinstance(body, tir.SeqStmt) else [body]
    n_launches = sum(1 for s in stmts if _is_launch(s))
    if not any(_is_workspace(s) for s in stmts) and n_launches <= 1:
        return None
    name = str(func.attrs["global_symbol"]) if func.attrs is not None and "global_symbol" in func.attrs else "main"
    workspaces: list[tir.Var] = []
    definitions: list[tir.Stmt] = []
    launch_bodies: list[tir.Stmt] = []
    for stmt in stmts:
        if _is_workspace(stmt):
            workspaces.append(stmt.buffer)
        elif _is_launch(stmt) or not n_launches:
            launch_bodies.append(seq([*definitions, stmt]))
        elif isinstance(stmt, (tir.DeclBuffer, tir.Bind)):
            definitions.append(stmt)
        elif not _is_no_op(stmt):
            raise TileLangCompileError(
                f"{name}: this statement stands between the `with T.Kernel(...)` launches of a function of "
                f"{n_launches} launches, where it would run on the host; only T.alloc_global workspaces may stand "
                "there: move it into a kernel", source_of(stmt) or source_of(func))
    if not n_launches:  # a body without T.Kernel: one launch (the check pass gives it its frame)
        launch_bodies = [seq(launch_bodies)]
    _check_workspace_shapes(func, name, workspaces, stmts)
    params = list(func.params) + workspaces
    launches = tuple(
        tir.PrimFunc(params, launch_body, func.ret_type, func.attrs, func.span).with_attr("global_symbol", f"{name}_launch{i}")
        for i, launch_body in enumerate(launch_bodies))
    return LaunchPlan(name, launches, tuple(workspaces))


def _check_workspace_shapes(func: tir.PrimFunc, name: str, workspaces: list[tir.Var], stmts: list) -> None:
    """A workspace's shape may use the symbolic dims of tensor parameters (known at call time
    before anything runs), nothing else."""
    known = {var.__chandle__() for var, _, _ in symbolic_dims(func).values()}
    for stmt, workspace in zip([s for s in stmts if _is_workspace(s)], workspaces):
        for dim in workspace.shape:
            unknown: list[str] = []

            def visit(node):
                if isinstance(node, tir.Var) and node.__chandle__() not in known:
                    unknown.append(node.name)

            walk(dim, visit, (tir.Var,))
            if unknown:
                raise TileLangCompileError(
                    f"{name}: workspace {workspace.name} (T.alloc_global) has a dim {dim} that uses "
                    f"{', '.join(sorted(set(unknown)))}, which is not a symbolic dim of a tensor parameter; a workspace "
                    "is allocated before the launches, from the tensor arguments' shapes only",
                    source_of(stmt) or source_of(func))


def workspace_specs(func: tir.PrimFunc, plan: LaunchPlan) -> tuple[ParamSpec, ...]:
    """The workspaces as the runtime allocates them: dims as ints or launch expressions over
    the names of the function's symbolic dims."""
    from ..codegen.analysis import launch_expr

    names = {var: symbol for symbol, (var, _, _) in symbolic_dims(func).items()}
    specs = []
    for workspace in plan.workspaces:
        dtype = workspace.ty.dtype
        dtype = str(dtype.dtype) if isinstance(dtype, ir.PrimType) else str(dtype)
        specs.append(ParamSpec(workspace.name, "tensor", dtype, tuple(launch_expr(d, names) for d in workspace.shape)))
    return tuple(specs)
