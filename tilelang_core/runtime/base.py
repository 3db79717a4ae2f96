"""The contract between the core and a backend's runtime: what a compiled kernel is made of.

Nothing here imports TVM or a driver: an exported kernel is loaded and launched on a machine
that has only the backend's runtime dependencies.
"""
from __future__ import annotations

import abc
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

__all__ = [
    "ParamSpec",
    "KernelMeta",
    "KernelSource",
    "LoadedKernel",
    "Runtime",
    "CompileError",
    "KernelCallError",
    "eval_launch_expr",
    "compile_launch_expr",
    "WallTimer",
]


class CompileError(RuntimeError):
    """The device toolchain rejected generated code: carries its log and a repro command."""


class KernelCallError(TypeError):
    """A kernel was called with arguments that do not match its parameters."""


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter as the caller sees it.

    `kind` is "tensor" or "scalar". A tensor's `shape` holds ints and names of symbolic
    dimensions (bound from the arguments at call time); `strides` is None for contiguous
    row-major tensors.
    """

    name: str
    kind: str
    dtype: str
    shape: tuple[int | str, ...] = ()
    strides: tuple[int | str, ...] | None = None


@dataclass(frozen=True)
class KernelMeta:
    """Everything a runtime needs to launch a compiled kernel, and to check a call.

    `grid` and `block` hold ints or expressions (strings) over symbolic dimension names, in
    the small language of `eval_launch_expr`. `symbols` maps each symbolic name to the
    (parameter index, dimension) it is read from. `shared_memory` is the dynamic shared memory
    in bytes (0 when the target has none).

    A function of several launches (`with T.Kernel` one after another, sharing global scratch
    buffers from `T.alloc_global`) keeps this contract for the caller (`params`, `symbols`,
    `out_idx`) and adds:
    - `workspaces`: the scratch buffers, allocated per call like outputs (never returned); a
      dim is an int or a launch expression over the symbols;
    - `launches`: one `KernelMeta` per device kernel, run in order on one stream. Each takes
      the user's parameters, then the workspaces, then the symbolic dims, and names its own
      binary file (`binary_name`); the top level's `grid`, `block` and `shared_memory` are
      unused.
    """

    target: str
    entry: str
    params: tuple[ParamSpec, ...]
    grid: tuple[int | str, ...] = (1, 1, 1)
    block: tuple[int | str, ...] = (1, 1, 1)
    shared_memory: int = 0
    symbols: dict[str, tuple[int, int]] = field(default_factory=dict)
    out_idx: tuple[int, ...] = ()
    binary_name: str = "kernel.bin"
    extra: dict[str, Any] = field(default_factory=dict)
    format_version: int = 2
    workspaces: tuple[ParamSpec, ...] = ()
    launches: tuple["KernelMeta", ...] = ()

    @property
    def binary_names(self) -> tuple[str, ...]:
        """The files the device code is stored in: one per launch, or `binary_name`."""
        return tuple(m.binary_name for m in self.launches) if self.launches else (self.binary_name,)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("workspaces", "launches"):  # absent when empty: single-launch JSON as before
            if not data[key]:
                del data[key]
        if self.launches:
            data["launches"] = [m.to_dict() for m in self.launches]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> "KernelMeta":
        return KernelMeta.from_dict(json.loads(text))

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "KernelMeta":
        data = dict(data)
        data["params"] = tuple(_param_from_dict(p) for p in data["params"])
        data["workspaces"] = tuple(_param_from_dict(p) for p in data.get("workspaces", ()))
        data["launches"] = tuple(KernelMeta.from_dict(m) for m in data.get("launches", ()))
        data["grid"] = tuple(data["grid"])
        data["block"] = tuple(data["block"])
        data["out_idx"] = tuple(data["out_idx"])
        data["symbols"] = {k: tuple(v) for k, v in data["symbols"].items()}
        return KernelMeta(**data)


def _param_from_dict(p: dict[str, Any]) -> ParamSpec:
    return ParamSpec(
        name=p["name"],
        kind=p["kind"],
        dtype=p["dtype"],
        shape=tuple(p["shape"]),
        strides=None if p.get("strides") is None else tuple(p["strides"]),
    )


@dataclass(frozen=True)
class KernelSource:
    """What `tilelang_codegen` returns: device source plus what the launcher needs."""

    source: str
    entry: str
    language: str  # the source dialect, as the backend names it
    grid: tuple[int | str, ...] = (1, 1, 1)
    block: tuple[int | str, ...] = (1, 1, 1)
    shared_memory: int = 0
    # generated line number -> (python file, python line), where known
    line_map: dict[int, tuple[str, int]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


# Generous bounds on a launch expression (a grid dim is `ceildiv(m, 128)` or so): a manifest
# with a longer or deeper one is damaged or hostile, and gets a clear error instead of a
# RecursionError or minutes of parsing.
MAX_LAUNCH_EXPR_CHARS = 4096
MAX_LAUNCH_EXPR_NODES = 256


def compile_launch_dims(meta: "KernelMeta") -> tuple[list, list]:
    """(grid, block) of one launch as three functions of the symbol values each (missing
    trailing dims are 1)."""
    return ([compile_launch_expr(g) for g in (tuple(meta.grid) + (1, 1, 1))[:3]],
            [compile_launch_expr(b) for b in (tuple(meta.block) + (1, 1, 1))[:3]])


def compile_launch_expr(expr: int | str):
    """A function of the symbol values computing a launch dimension: an int, or an integer
    expression over symbol names using + - * // % ( ) and ceildiv, min, max. Parsed once,
    evaluated without Python's `eval`."""
    if isinstance(expr, int):
        return lambda values: expr
    import ast

    text = str(expr)
    if len(text) > MAX_LAUNCH_EXPR_CHARS:
        raise ValueError(f"launch expression of {len(text)} characters is past the limit of {MAX_LAUNCH_EXPR_CHARS} "
                         f"(a kernel's grid and block need a few dozen); it starts {text[:40]!r}")
    count = [0]

    def build(node: ast.AST):
        count[0] += 1
        if count[0] > MAX_LAUNCH_EXPR_NODES:
            raise ValueError(f"launch expression {text[:40]!r}... has more than {MAX_LAUNCH_EXPR_NODES} terms")
        if isinstance(node, ast.Expression):
            return build(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            value = node.value
            return lambda v: value
        if isinstance(node, ast.Name):
            name = node.id

            def lookup(v):
                if name not in v:
                    raise KernelCallError(f"launch dimension {expr!r} needs symbol {name!r}")
                return int(v[name])

            return lookup
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = build(node.operand)
            return lambda v: -inner(v)
        if isinstance(node, ast.BinOp):
            a, b = build(node.left), build(node.right)
            ops = {ast.Add: lambda v: a(v) + b(v), ast.Sub: lambda v: a(v) - b(v),
                   ast.Mult: lambda v: a(v) * b(v), ast.FloorDiv: lambda v: a(v) // b(v),
                   ast.Mod: lambda v: a(v) % b(v)}
            if type(node.op) in ops:
                return ops[type(node.op)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = [build(a) for a in node.args]
            fns = {"ceildiv": lambda v: -(-args[0](v) // args[1](v)),
                   "min": lambda v: min(f(v) for f in args), "max": lambda v: max(f(v) for f in args)}
            if node.func.id in fns:
                return fns[node.func.id]
        raise ValueError(f"unsupported launch expression {expr!r}")

    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, MemoryError, RecursionError) as err:  # nested past the parser's own limit
        raise ValueError(f"unsupported launch expression {text[:40]!r}: {type(err).__name__}") from None
    return build(tree)


def eval_launch_expr(expr: int | str, values: dict[str, int]) -> int:
    """Evaluate one launch dimension (see `compile_launch_expr`)."""
    return compile_launch_expr(expr)(values)


class LoadedKernel(abc.ABC):
    """A kernel binary loaded into the runtime, ready to launch."""

    @abc.abstractmethod
    def launch(
        self,
        args: Sequence[int | float],
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_memory: int,
        stream: Any = None,
    ) -> None:
        """Launch once. `args` follow `KernelMeta.params`: a device pointer (int) per tensor,
        a Python number per scalar. `stream` None means the current stream (the caller's
        current torch stream on GPUs) of the device the kernel was loaded on."""


class Runtime(abc.ABC):
    """A backend's loader and launcher (the result of `tilelang_runtime`).

    `dlpack_device_type` is the DLPack device type of the tensors it accepts (a number from
    the DLPack standard, 1 for host memory); the core checks every tensor argument against it.
    `takes_tensors` says whether launches get the tensors themselves instead of their data
    pointers (default: pointers).
    """

    dlpack_device_type: int = 1
    # True: `LoadedKernel.launch` receives each tensor argument itself (checked as usual), not
    # its data pointer, for runtimes whose launch API takes tensors (torch.mps's compiled
    # shaders, where a tensor's data_ptr names a device buffer object, not an address).
    takes_tensors: bool = False

    @abc.abstractmethod
    def load(self, binary: bytes, meta: KernelMeta) -> LoadedKernel:
        """Load a binary produced by `tilelang_compile` for this target."""

    def check_binary(self, binary: bytes, meta: KernelMeta) -> None:
        """Raise `ValueError` (saying why) unless `binary` is a device binary of this runtime
        that itself defines the function `meta.entry`; called before the binary is mapped
        (by `load` of an export, and by the runtime's own `load`). Default: no check."""

    def current_stream(self, device_index: int = 0) -> Any:
        """The stream launches go to (the caller's current torch stream on GPUs)."""
        return None

    def synchronize(self) -> None:
        """Wait for all work launched so far."""

    def allocate(self, like: Any, shape: Sequence[int], dtype: str) -> Any:
        """An uninitialized output tensor in the same array library (and device) as `like`."""
        raise NotImplementedError

    def from_numpy(self, array: Any) -> Any:
        """A tensor on this runtime's device holding `array` (inputs for `do_bench` and the
        profiler). On the host: a torch CPU tensor sharing `array`'s memory when torch is
        installed (TileLang's profiler hands torch tensors to reference programs, which call
        torch methods on them), else `array` itself."""
        try:
            import torch
        except ImportError:
            return array
        return torch.from_numpy(array)

    def make_timer(self) -> Any:
        """An object with start(), stop() and elapsed_ms() for `do_bench`."""
        raise NotImplementedError

    def flush_l2(self) -> None:
        """Evict the last-level cache between timed runs (no-op where not meaningful)."""


class WallTimer:
    """Wall-clock timer (`time.perf_counter`) with the interface of a GPU event timer, for
    runtimes whose launches finish before they return (`Runtime.make_timer`)."""

    def __init__(self) -> None:
        self._start = self._stop = 0.0

    def start(self) -> None:
        self._start = time.perf_counter()

    def stop(self) -> None:
        self._stop = time.perf_counter()

    def elapsed_ms(self) -> float:
        return (self._stop - self._start) * 1e3
