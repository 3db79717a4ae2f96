"""A compiled kernel as the caller sees it: checks the arguments, binds symbolic dims,
allocates outputs, launches. TVM-free, so exported kernels run without the compiler.

Every call checks the argument count, and per argument its kind, rank, shape, dtype, device
and contiguity (NumPy strides must be whole elements), every input before any output is
allocated, and that no tensor the kernel writes shares memory with another tensor argument
(unless the kernel was compiled with pass_configs={"tl.may_alias": True}). Two paths do it:
- the checked path builds a `TensorView` per argument, binds symbolic dims and words the
  errors (naming the parameter);
- a guard: after a call with `numpy.ndarray`s / `torch.Tensor`s and Python numbers passed
  the checked path, a function specialised to that call's argument types, dtype objects and
  devices is generated once (the way `dataclasses` generates `__init__`). It repeats the
  same checks as identity and equality tests on those objects (`type(x) is ndarray and
  x.dtype is float32 and x.flags.c_contiguous and x.shape == (n, 16)`, binding symbolic
  dims as it goes), ~0.3 us an argument against ~3 us. Any mismatch sends the call to the
  checked path, which then accepts or explains it.

A kernel of several launches (`KernelMeta.launches`) is called the same way: per call the
workspaces (`T.alloc_global`) are allocated like the outputs, in the array library and on the
device of the first tensor argument, and every device kernel is launched in order on one
stream (`LaunchSequence`). The workspaces are released when the call returns: on a GPU the
array library's stream-ordered allocator (torch's caching allocator) keeps the memory from
being handed out to other work before the launches on that stream are done.
"""
from __future__ import annotations

import operator
import re
from typing import Any, Sequence

from . import tensors
from .base import KernelCallError, KernelMeta, LoadedKernel, ParamSpec, Runtime, compile_launch_dims, compile_launch_expr
from .tensors import _contiguous_strides, array_library, is_contiguous, view_of

__all__ = ["Kernel"]

_MAX_GUARDS = 8
_INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")
# the values an integer scalar parameter takes: anything else would be truncated or wrapped
_INT_RANGES = {"bool": (0, 1), **{f"int{b}": (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)},
               **{f"uint{b}": (0, (1 << b) - 1) for b in (8, 16, 32, 64)}}
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38}
# Symbolic dims are int32 parameters and the element offsets computed from them are int32:
# a tensor with a symbolic dim holds at most this many elements.
INDEX_MAX = (1 << 31) - 1


class Kernel:
    """Callable kernel: `kernel(*inputs)` returns the outputs named by `out_idx`."""

    def __init__(self, meta: KernelMeta, binary: bytes | tuple[bytes, ...], runtime: Runtime,
                 source: str | None = None) -> None:
        """`binary` is the device binary, or one per launch (`meta.launches`) in order."""
        self.meta = meta
        self.binary = binary
        self.runtime = runtime
        self.source = source
        self._loaded: LoadedKernel | None = None
        self._takes_tensors = bool(getattr(runtime, "takes_tensors", False))
        self._tensor_params = [i for i, p in enumerate(meta.params) if p.kind == "tensor"]
        self._n_user = len(meta.params) - len(meta.symbols)
        # byte alignment the kernel assumes of every tensor (e.g. 16 for vector async copies)
        self._alignment = int(meta.extra.get("tensor_alignment", 1))
        self._inputs = [i for i in range(self._n_user) if i not in meta.out_idx]
        # per parameter: its shape when fully static (the fast path of the shape check)
        self._static_shapes = [tuple(p.shape) if all(isinstance(d, int) for d in p.shape) else None
                               for p in meta.params]
        # the tensor parameters the kernel writes (None: not recorded, e.g. an older export)
        written = meta.extra.get("written_params")
        self._written = None if written is None else {int(i) for i in str(written).split(",") if i}
        self._alias_pairs = _alias_pairs(meta, self._written, self._inputs)
        self._grid, self._block = compile_launch_dims(meta)
        # integer scalar parameters a launch dimension names (`T.Kernel(T.ceildiv(n, 128))`):
        # (position, name), their values join the symbols' at each call
        launch_text = " ".join(str(d) for m in (meta, *meta.launches) for d in (*m.grid, *m.block))
        self._launch_scalars = [(i, p.name) for i, p in enumerate(meta.params[:self._n_user])
                                if p.kind != "tensor" and p.dtype in _INT_RANGES
                                and re.search(rf"\b{re.escape(p.name)}\b", launch_text)]
        # per workspace: its dims as functions of the symbol values
        self._workspace_dims = [[compile_launch_expr(d) for d in w.shape] for w in meta.workspaces]
        self._init_guard()

    # -- public API ------------------------------------------------------------------------

    @property
    def loaded(self) -> LoadedKernel:
        if self._loaded is None:
            if self.meta.launches:
                from .launches import LaunchSequence

                self._loaded = LaunchSequence(self.runtime, self.meta, self.binary)
            else:
                self._loaded = self.runtime.load(self.binary, self.meta)
        return self._loaded

    @property
    def params(self) -> list[ParamSpec]:
        """The parameters as the caller sees them (outputs included, symbolic dims not)."""
        return list(self.meta.params[:self._n_user])

    def explain(self) -> str:
        """What layout inference decided for each fragment: its layout, registers per thread,
        replication, and where it lives (registers, or shared memory and why); and how storage
        planning placed the shared buffers (offsets, and which share bytes)."""
        import json

        notes = json.loads(self.meta.extra.get("lowering_notes", "[]") or "[]")
        return "\n".join([self._explain_fragments(), *self._explain_shared(),
                          *(f"fallback: {note}" for note in notes)])

    def _explain_shared(self) -> list[str]:
        import json

        plan = json.loads(self.meta.extra.get("shared_plan", "{}") or "{}")
        if not plan.get("buffers"):
            return []
        lines = [f"shared memory: {plan['total']} bytes as the core planned it (buffers whose lifetimes, in the "
                 f"kernel's top-level statements, do not overlap share bytes)"]
        for b in plan["buffers"]:
            live = "the whole kernel" if b["live"] is None else f"statements {b['live'][0]}..{b['live'][1]}"
            shares = [o["buffer"] for o in plan["buffers"] if o is not b and o["offset"] < b["offset"] + b["bytes"]
                      and b["offset"] < o["offset"] + o["bytes"]]
            lines.append(f"  {b['buffer']}: {b['bytes']} B at offset {b['offset']}, live in {live}"
                         + (f"; shares bytes with {', '.join(shares)}" if shares else ""))
        return lines

    def _explain_fragments(self) -> str:
        import json

        entries = json.loads(self.meta.extra.get("layout_report", "[]") or "[]")
        if not entries:
            return f"{self.meta.entry}: no fragments in registers on {self.meta.target} (block-serial or none declared)"
        lines = [f"{self.meta.entry} on {self.meta.target}: {len(entries)} fragment(s)"]
        for e in entries:
            shape = "x".join(str(d) for d in e["shape"])
            if e["placement"] == "registers":
                rep = f", replicated x{e['replicate']}" if (e.get("replicate") or 1) > 1 else ""
                lines.append(f"  {e['fragment']} [{shape} {e['dtype']}]: registers, {e['registers_per_thread']} per "
                             f"thread{rep}; layout {e['layout']} (from {e['origin'] or 'default'})")
            else:
                lines.append(f"  {e['fragment']} [{shape} {e['dtype']}]: SHARED MEMORY: {e['reason']}")
            for note in e.get("notes", []):
                lines.append(f"      note: {note}")
        return "\n".join(lines)

    def get_kernel_source(self) -> str:
        return self.source or ""

    def export(self, path, key: bytes | str | None = None) -> None:
        """Write this kernel to folder `path` for `tilelang_core.load`; with `key` (bytes or
        str, 16 bytes or more) the folder is signed with HMAC-SHA256 and `load(path, key=)`
        accepts it only unchanged (docs/security.md)."""
        from .export import export_kernel

        export_kernel(self, path, key=key)

    def get_profiler(self, tensor_supply_type: Any = None):
        """A `Profiler` for this kernel; its inputs come from `tensor_supply_type`
        (a `TensorSupplyType`, default Auto)."""
        from .profiler import Profiler

        return Profiler(self, tensor_supply_type)

    def __call__(self, *args: Any, stream: Any = None) -> Any:
        guard = self._guard
        if guard is not None:
            arranged = guard(args)
            if arranged is not None:
                # the workspaces stay referenced until the launches are issued
                outs, launch_args, grid, block, workspaces = arranged
                # stream None: the loaded kernel launches on its device's current stream
                self._launch(launch_args, grid, block, self.meta.shared_memory, stream)
                if not outs:
                    return None
                return outs[0] if len(outs) == 1 else tuple(outs)
        return self._call_checked(args, stream)

    # -- the guard -------------------------------------------------------------------------

    def _init_guard(self) -> None:
        self._guard = None
        self._guards: dict[tuple, Any] = {}

    def _make_guard(self, full: list[Any]) -> None:
        """Use the guard for calls shaped like `full` (this call's arguments in parameter order,
        outputs included), which just passed the checked path; generated once per shape of call
        (a few, for callers that alternate, e.g. NumPy and torch)."""
        signature = tuple((type(a), getattr(a, "dtype", None), getattr(a, "device", None)) for a in full)
        if self._takes_tensors:
            return  # the guard passes data pointers; such a runtime always takes the checked path
        if signature in self._guards:
            guard = self._guards[signature]
        elif len(self._guards) < _MAX_GUARDS:  # None too: a call shape no guard can take
            guard = self._guards[signature] = _build_guard(self, full)
        else:
            guard = None
        if guard is not None:
            self._launch = self.loaded.launch
            self._guard = guard

    # -- checked path ----------------------------------------------------------------------

    def _call_checked(self, args: Sequence[Any], stream: Any) -> Any:
        full = self._arrange(args)
        values = self._bind(full)
        launch_args = self._launch_args(full, values)
        self._check_aliasing(full)
        workspaces = self._allocate_workspaces(args, values)
        if workspaces:  # their pointers go between the user's parameters and the symbolic dims
            launch_args[self._n_user:self._n_user] = [w if self._takes_tensors else view_of(w).data_ptr
                                                      for w in workspaces]
        self._make_guard(full)
        grid = (self._grid[0](values), self._grid[1](values), self._grid[2](values))
        block = (self._block[0](values), self._block[1](values), self._block[2](values))
        self.loaded.launch(launch_args, grid, block, self.meta.shared_memory, stream)
        outs = [full[i] for i in self.meta.out_idx]
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    # -- argument handling -----------------------------------------------------------------

    def _arrange(self, args: Sequence[Any]) -> list[Any]:
        """Inputs in parameter order, with output slots filled by fresh allocations."""
        expected = len(self._inputs)
        if len(args) != expected:
            names = ", ".join(self.meta.params[i].name for i in self._inputs)
            outs = ", ".join(self.meta.params[i].name for i in self.meta.out_idx)
            raise KernelCallError(
                f"{self.meta.entry} takes {expected} argument(s) ({names}) but got {len(args)}"
                + (f"; outputs {outs} are allocated and returned (out_idx)" if outs else ""))
        full: list[Any] = [None] * self._n_user
        for slot, value in zip(self._inputs, args):
            full[slot] = value
        if self.meta.out_idx:
            values = self._bind(full, partial=True)
            for slot in self._inputs:  # every input is checked before an output is allocated
                param = self.meta.params[slot]
                if param.kind == "tensor":
                    self._check_tensor(slot, param, full[slot], values)
                else:
                    self._check_scalar(slot, param, full[slot])
            like = self._allocation_model(args, "outputs")
            for i in self.meta.out_idx:
                p = self.meta.params[i]
                shape = []
                for dim in p.shape:
                    if isinstance(dim, str):
                        if dim not in values:
                            raise KernelCallError(f"output {p.name} has symbolic dim {dim!r} that no input binds")
                        shape.append(values[dim])
                    else:
                        shape.append(int(dim))
                full[i] = self.runtime.allocate(like, shape, p.dtype)
        return full

    def _allocation_model(self, args: Sequence[Any], what: str) -> Any:
        """The first tensor argument: what new outputs and workspaces copy their array
        library and device from."""
        like = next((a for a in args if view_of(a) is not None), None)
        if like is not None:
            slot = self._inputs[next(n for n, a in enumerate(args) if a is like)]
            where = f"argument {self.meta.params[slot].name!r} (parameter {slot}) of {self.meta.entry}"
            problem = self._placement_error(where, view_of(like), like)
            if problem:
                raise KernelCallError(problem)
        if like is None:
            for slot, arg in zip(self._inputs, args):  # a tensor parameter given something else
                param = self.meta.params[slot]
                if param.kind == "tensor":
                    raise KernelCallError(
                        f"argument {param.name!r} (parameter {slot}) of {self.meta.entry}: expected a tensor "
                        f"(NumPy array or torch tensor), got {type(arg).__name__}; convert it first (np.asarray(x, "
                        f"dtype=np.{param.dtype}) or torch.tensor(...))")
            if what != "outputs" or any(self.meta.params[slot].kind == "tensor" for slot in self._inputs):
                raise KernelCallError(f"{self.meta.entry}: cannot allocate {what} without a tensor input to copy "
                                      "the array library and device from")
            # a kernel without tensor inputs (a random-number generator): its outputs live where
            # the runtime puts its inputs (torch on the current GPU, NumPy or torch on the host)
            import numpy as np

            like = self.runtime.from_numpy(np.empty(0, np.float32))
        return like

    def _allocate_workspaces(self, args: Sequence[Any], values: dict[str, int]) -> list[Any]:
        """A fresh tensor per workspace, like the first tensor argument."""
        if not self.meta.workspaces:
            return []
        like = self._allocation_model(args, "its workspaces (T.alloc_global)")
        return [self.runtime.allocate(like, [d(values) for d in dims], w.dtype)
                for w, dims in zip(self.meta.workspaces, self._workspace_dims)]

    def _bind(self, full: list[Any], partial: bool = False) -> dict[str, int]:
        values: dict[str, int] = {}
        for name, (p_index, dim) in self.meta.symbols.items():
            arg = full[p_index]
            if arg is None:
                if partial:
                    continue
                raise KernelCallError(f"symbolic dim {name!r} has no tensor to read it from")
            view = view_of(arg)
            if view is None or dim >= len(view.shape):
                continue  # reported by _launch_args with the parameter's name
            values[name] = int(view.shape[dim])
            if values[name] > INDEX_MAX:
                raise KernelCallError(
                    f"argument {self.meta.params[p_index].name!r} of {self.meta.entry}: its dim {dim} "
                    f"({name!r}) is {values[name]}, past the kernel's 32-bit index width (at most "
                    f"{INDEX_MAX}: symbolic dims and element offsets are int32); split the tensor into "
                    f"pieces of at most {INDEX_MAX} elements and call the kernel on each")
        for index, name in self._launch_scalars:
            if not isinstance(full[index], bool):
                try:
                    values[name] = operator.index(full[index])
                except TypeError:
                    pass  # not an integer: _launch_args reports it with the parameter's name
        return values

    def _launch_args(self, full: list[Any], values: dict[str, int]) -> list[int | float]:
        out: list[int | float] = []
        for i, (param, arg) in enumerate(zip(self.meta.params, full)):
            if param.kind == "tensor":
                out.append(self._check_tensor(i, param, arg, values))
            else:
                out.append(self._check_scalar(i, param, arg))
        # the trailing parameters are the symbolic dims, in parameter order (the symbols
        # mapping is a dict whose order does not survive a JSON round trip)
        for param in self.meta.params[self._n_user:]:
            out.append(values[param.name])
        return out

    def _check_tensor(self, index: int, param, arg: Any, values: dict[str, int]) -> int:
        where = f"argument {param.name!r} (parameter {index}) of {self.meta.entry}"
        view = view_of(arg)
        if view is None:
            raise KernelCallError(f"{where}: expected a tensor (NumPy array or torch tensor), got {type(arg).__name__}; "
                                  f"convert it first (np.asarray(x, dtype=np.{param.dtype}) or torch.tensor(...))")
        if (view.shape == self._static_shapes[index] and view.dtype == param.dtype
                and view.device_type == self.runtime.dlpack_device_type
                and (param.strides is not None or view.strides == _contiguous_strides(view.shape))):
            self._check_writable(index, where, arg)
            return self._tensor_arg(where, arg, view)
        if len(view.shape) != len(param.shape):
            raise KernelCallError(f"{where}: expected rank {len(param.shape)} with shape {_fmt(param.shape)}, got rank {len(view.shape)} {view.shape}")
        for dim, (want, got) in enumerate(zip(param.shape, view.shape)):
            want_value = values.get(want) if isinstance(want, str) else want
            if want_value is not None and int(want_value) != int(got):
                raise KernelCallError(f"{where}: expected shape {_fmt(param.shape)}, got {view.shape} (dim {dim}: expected {want_value}, got {got})")
        if view.dtype != param.dtype:
            raise KernelCallError(f"{where}: expected dtype {param.dtype}, got {view.dtype}")
        problem = self._placement_error(where, view, arg)
        if problem:
            raise KernelCallError(problem)
        if any(type(s) is not int for s in view.strides):
            raise KernelCallError(f"{where}: its strides are not whole elements ({view.strides} elements of "
                                  f"{param.dtype}: a byte stride that is no multiple of the element size, e.g. a "
                                  "view of reinterpreted bytes); pass np.ascontiguousarray(x)")
        if param.strides is None and not is_contiguous(view):
            raise KernelCallError(f"{where}: expected a contiguous row-major tensor, got strides {view.strides}; pass .contiguous() / np.ascontiguousarray(...)")
        self._check_writable(index, where, arg)
        if self._static_shapes[index] is None:
            size = 1
            for d in view.shape:
                size *= int(d)
            if size > INDEX_MAX:
                raise KernelCallError(
                    f"{where}: the tensor holds {size} elements, past the kernel's 32-bit index width "
                    f"(at most {INDEX_MAX}: symbolic dims and element offsets are int32); split it into "
                    f"pieces of at most {INDEX_MAX} elements and call the kernel on each")
        return self._tensor_arg(where, arg, view)

    def _check_aliasing(self, full: list[Any]) -> None:
        """A tensor the kernel writes may not share memory with another tensor argument (the
        result would depend on the order the kernel's blocks run), unless the kernel was
        compiled with pass_configs={"tl.may_alias": True}."""
        for written, other in self._alias_pairs:
            a, b = view_of(full[written]), view_of(full[other])
            if a is None or b is None:
                continue
            (a_lo, a_hi), (b_lo, b_hi) = _byte_range(a), _byte_range(b)
            if a_lo < a_hi and b_lo < b_hi and a_lo < b_hi and b_lo < a_hi:
                names = self.meta.params[written].name, self.meta.params[other].name
                raise KernelCallError(
                    f"arguments {names[0]!r} (parameter {written}) and {names[1]!r} (parameter {other}) of "
                    f"{self.meta.entry} share memory, and the kernel writes {names[0]!r}: the result would depend on "
                    f"the order its blocks run; pass separate tensors (e.g. {names[1]}.copy() / .clone()), or compile "
                    "the kernel with pass_configs={'tl.may_alias': True} if it is written for in-place use")

    def _tensor_arg(self, where: str, arg: Any, view) -> Any:
        """What the launch receives for a checked tensor: its (aligned) data pointer, or the
        tensor itself for a runtime that `takes_tensors`."""
        pointer = self._aligned(where, view.data_ptr)
        return arg if self._takes_tensors else pointer

    def _placement_error(self, where: str, view, arg: Any = None) -> str | None:
        """Why the kernel cannot use the memory of `view`: no storage, or another device
        (named as the array library names it, e.g. 'meta')."""
        device = getattr(arg, "device", None)
        named = f" (device {str(device)!r})" if device is not None and not isinstance(device, (int, str)) else ""
        if str(device) == "meta" or (not view.data_ptr and all(view.shape)):
            return (f"{where}: the tensor{named or ' (e.g. a torch meta tensor)'} has no storage (a 'meta' tensor "
                    f"holds only a shape); pass a tensor with data on the device of {self.meta.target}")
        if view.device_type != self.runtime.dlpack_device_type:
            return (f"{where}: the kernel runs on {self.meta.target} and needs a tensor on its device "
                    f"(DLPack device type {self.runtime.dlpack_device_type}), got one{named} with DLPack device "
                    f"type {view.device_type}; move it there first (e.g. tensor.to(device))")
        return None

    def _check_writable(self, index: int, where: str, arg: Any) -> None:
        """A tensor the kernel writes must accept writes (a read-only NumPy array, one over
        `bytes`, is refused rather than written through)."""
        if self._written is not None and index not in self._written:
            return
        flags = getattr(arg, "flags", None)
        if flags is not None and not getattr(flags, "writeable", True):
            raise KernelCallError(
                f"{where}: the kernel writes this tensor, but the array is read-only (writeable=False, "
                f"e.g. a view of bytes or a broadcast); pass a writable copy (np.array(x) / x.copy())")

    def _aligned(self, where: str, pointer: int) -> int:
        if pointer % self._alignment:
            raise KernelCallError(
                f"{where}: the kernel reads tensors with {self._alignment}-byte vector accesses, but "
                f"this one starts at address {pointer:#x} (not a multiple of {self._alignment}); pass "
                f"a tensor that starts on a {self._alignment}-byte boundary (e.g. .clone() a sliced view)")
        return pointer

    def _check_scalar(self, index: int, param, arg: Any) -> int | float:
        """The value passed for a scalar parameter: exactly the argument, or an error (never
        truncated, wrapped or rounded to infinity)."""
        where = f"argument {param.name!r} (parameter {index}) of {self.meta.entry}"
        if type(arg).__module__ == "numpy" and getattr(arg, "ndim", None) == 0:
            arg = arg.item()  # a NumPy scalar (np.int64(7), np.float32(0.5)) as the Python number
        if view_of(arg) is not None or isinstance(arg, (str, bytes)):
            raise KernelCallError(f"{where}: expected a {param.dtype} scalar, got {type(arg).__name__}")
        if param.dtype in _INT_RANGES:
            try:
                value = operator.index(arg)  # int, bool, NumPy integers
            except TypeError:
                try:
                    number = float(arg)
                except (TypeError, ValueError):
                    raise KernelCallError(f"{where}: expected a {param.dtype} scalar, got {type(arg).__name__}") from None
                except OverflowError:
                    raise KernelCallError(f"{where}: {arg!r} is too large for any float, let alone the parameter's "
                                          f"dtype {param.dtype}; pass a value in range") from None
                if not number.is_integer():
                    raise KernelCallError(
                        f"{where}: the parameter is {param.dtype} and {arg!r} is not an integer (it would be "
                        f"truncated); pass an int, e.g. round({arg!r}) or int({arg!r}) if truncation is meant") from None
                value = int(number)
            low, high = _INT_RANGES[param.dtype]
            if not low <= value <= high:
                raise KernelCallError(
                    f"{where}: {value} does not fit the parameter's dtype {param.dtype} (range {low}..{high}; it "
                    f"would wrap); pass a value in range, or declare the parameter wider (e.g. T.int64)")
            return value
        try:
            value = float(arg)
        except (TypeError, ValueError):
            raise KernelCallError(f"{where}: expected a {param.dtype} scalar, got {type(arg).__name__}") from None
        except OverflowError:
            raise KernelCallError(f"{where}: {_short(arg)} is past the largest {param.dtype} (it cannot be converted "
                                  "to a float at all); pass a smaller value") from None
        limit = _FLOAT_MAX.get(param.dtype)
        if limit is not None and abs(value) > limit and value not in (float("inf"), float("-inf")):
            raise KernelCallError(
                f"{where}: {value!r} is past the largest finite {param.dtype} ({limit:g}; it would become "
                f"infinity); pass a smaller value, or declare the parameter float64")
        return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)"


_ITEMSIZE = {"bool": 1, "bfloat16": 2}


def _itemsize(dtype: str) -> int:
    """Bytes per element of a dtype name (float8_e4m3fn: 1, float32: 4)."""
    size = _ITEMSIZE.get(dtype)
    if size is None:
        digits = "".join(c for c in dtype.split("_")[0] if c.isdigit())
        size = _ITEMSIZE[dtype] = max(1, int(digits or 8) // 8)
    return size


def _byte_range(view) -> tuple[int, int]:
    """The addresses [low, high) a tensor's elements occupy (empty for an empty tensor)."""
    if not all(view.shape):
        return view.data_ptr, view.data_ptr
    low = high = 0
    for dim, stride in zip(view.shape, view.strides):
        reach = (dim - 1) * int(stride)
        low, high = low + min(reach, 0), high + max(reach, 0)
    size = _itemsize(view.dtype)
    return view.data_ptr + low * size, view.data_ptr + (high + 1) * size


def _alias_pairs(meta: KernelMeta, written: set[int] | None, inputs: list[int]) -> list[tuple[int, int]]:
    """(written, other) pairs of tensor parameters the caller passes that must not share
    memory: every tensor the kernel writes against every other passed tensor. Empty when
    the kernel declares it may alias (`may_alias`) or did not record what it writes."""
    if written is None or meta.extra.get("may_alias"):
        return []
    tensors_in = [i for i in inputs if meta.params[i].kind == "tensor"]
    pairs = []
    for w in tensors_in:
        if w in written:
            pairs += [(w, o) for o in tensors_in if o != w and not (o in written and o < w)]
    return pairs


def _fmt(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _numpy_pointer(name: str, env: dict) -> str:
    """Code reading the data pointer of ndarray `name` (see `tensors.numpy_data_ptr`)."""
    if tensors._data_offset_ok:
        env["read_pointer"], env["OFFSET"] = tensors._read_pointer, tensors._DATA_OFFSET
        return f"read_pointer(id({name}) + OFFSET).value"
    env["numpy_data_ptr"] = tensors.numpy_data_ptr
    return f"numpy_data_ptr({name})"


def _build_guard(kernel: "Kernel", full: list[Any]):
    """A function `guard(args) -> (outputs, launch args, grid, block, workspaces) | None` accepting exactly
    calls like `full`: as many arguments, each of the same type (`numpy.ndarray`,
    `torch.Tensor`, `int`, `float`), dtype object and torch device, of the parameter's shape
    (static dims equal, each symbolic dim equal wherever it occurs), and contiguous where the
    parameter requires it. None when `full` holds something a guard cannot check."""
    meta, inputs = kernel.meta, kernel._inputs
    env: dict[str, Any] = {"allocate": kernel.runtime.allocate, "grid": kernel._grid, "block": kernel._block}
    position = {slot: n for n, slot in enumerate(inputs)}
    libraries = [array_library(type(full[slot])) for slot in inputs]
    like = next((f"x{n}" for n, library in enumerate(libraries) if library is not None), None)
    like_library = next((library for library in libraries if library is not None), None)
    symbols: dict[str, str] = {}  # symbolic dim name -> local variable holding its value
    lines = ["def guard(args):", f"    if len(args) != {len(inputs)}:", "        return None"]
    if inputs:
        lines.append(f"    {', '.join(f'x{n}' for n in range(len(inputs)))}{',' if len(inputs) == 1 else ''} = args")

    def fail_unless(conditions: list[str]) -> None:
        if conditions:
            lines.extend([f"    if not ({' and '.join(conditions)}):", "        return None"])

    def shape_of(param) -> str | None:
        """The shape as a Python tuple expression over bound symbols; None if one is unbound."""
        dims = [str(d) if isinstance(d, int) else symbols.get(d) for d in param.shape]
        return None if None in dims else "(" + "".join(f"{d}, " for d in dims) + ")"

    pointers, outs, outputs = [], [], []
    aliased = {i for pair in kernel._alias_pairs for i in pair}
    extents: dict[int, str] = {}  # aliased parameter -> expression of its size in bytes
    for index, (param, arg) in enumerate(zip(meta.params[:kernel._n_user], full)):
        tp, library = type(arg), array_library(type(arg))
        env[f"T{index}"] = tp
        if index not in position:  # an output: allocated after every input passed its checks
            if like is None or param.kind != "tensor" or library is None:
                return None
            name = f"out{index}"
            outputs.append((index, param, name))
            outs.append(name)
            pointers.append(f"{name}.data_ptr()" if library == "torch" else _numpy_pointer(name, env))
            continue
        name = f"x{position[index]}"
        if param.kind != "tensor":
            if param.dtype in _INT_RANGES:
                if tp is not int:  # floats and bools take the checked path (integral? 0 or 1?)
                    return None
                low, high = _INT_RANGES[param.dtype]
                fail_unless([f"type({name}) is T{index}", f"{low} <= {name} <= {high}"])
                pointers.append(name)
                continue
            if tp not in (int, float):
                return None
            checks = [f"type({name}) is T{index}"]
            if param.dtype in _FLOAT_MAX:  # past it (or inf, nan): the checked path decides
                checks.append(f"-{_FLOAT_MAX[param.dtype]!r} <= {name} <= {_FLOAT_MAX[param.dtype]!r}")
            fail_unless(checks)
            pointers.append(f"float({name})")
            continue
        if library is None or any(isinstance(d, str) and d not in meta.symbols for d in param.shape):
            return None
        env[f"D{index}"] = arg.dtype
        checks = [f"type({name}) is T{index}", f"{name}.dtype is D{index}"]
        if library == "numpy":
            if param.strides is None:
                checks.append(f"{name}.flags.c_contiguous")
            if kernel._written is None or index in kernel._written:
                checks.append(f"{name}.flags.writeable")
            tensors.numpy_data_ptr(arg)  # checks the struct offset on the process's first array
            pointers.append(_numpy_pointer(name, env))
        else:
            if param.strides is None:
                checks.append(f"{name}.is_contiguous()")
            # get_device() is an int (-1 on the host): cheaper than building a device object
            env[f"V{index}"] = arg.get_device()
            checks.append(f"{name}.get_device() == V{index}")
            if env[f"V{index}"] < 0:  # 'meta' tensors report -1 too, and have no storage
                checks.append(f"not {name}.is_meta")
            pointers.append(f"{name}.data_ptr()")
        if kernel._alignment > 1:
            checks.append(f"({pointers[-1]}) % {kernel._alignment} == 0")
        if index in aliased:
            if param.strides is not None:
                return None  # a strided tensor's extent: the checked path measures it
            static = kernel._static_shapes[index]
            if static is not None:
                size = _itemsize(param.dtype)
                for d in static:
                    size *= d
                extents[index] = str(size)
            else:
                extents[index] = f"{name}.nbytes" if library == "numpy" else f"{name}.numel() * {_itemsize(param.dtype)}"
        fresh = [d for d in dict.fromkeys(param.shape) if isinstance(d, str) and d not in symbols]
        if any(isinstance(d, str) for d in param.shape):  # within the 32-bit index width
            checks.append(f"{name}.{'size' if library == 'numpy' else 'numel()'} <= {INDEX_MAX}")
        if not fresh:
            checks.append(f"{name}.shape == {shape_of(param)}")
            fail_unless(checks)
            continue
        checks.append(f"len({name}.shape) == {len(param.shape)}")
        fail_unless(checks)
        compare = []
        for d, dim in enumerate(param.shape):  # bind each new symbol at its first dim, compare the rest
            if dim in fresh and dim not in symbols:
                symbols[dim] = f"v{len(symbols)}"
                lines.append(f"    {symbols[dim]} = {name}.shape[{d}]")
                compare.append(f"{symbols[dim]} <= {INDEX_MAX}")
            else:
                compare.append(f"{name}.shape[{d}] == {dim if isinstance(dim, int) else symbols[dim]}")
        fail_unless(compare)
    if kernel._alias_pairs:  # pointer comparisons: overlapping memory takes the checked path, which explains
        for index in sorted(aliased):
            null = " or 0" if "read_pointer" in pointers[index] else ""  # ctypes reads NULL as None
            lines.append(f"    p{index} = {pointers[index]}{null}")
            pointers[index] = f"p{index}"
        # [pw, pw + Nw) and [po, po + No) overlap exactly when -Nw < pw - po < No
        fail_unless([f"not -{extents[w]} < p{w} - p{o} < {extents[o]}" for w, o in kernel._alias_pairs])
    for index, param, name in outputs:
        shape = shape_of(param)
        if shape is None:
            return None
        lines.append(f"    {name} = allocate({like}, {shape}, {param.dtype!r})")
        fail_unless([f"type({name}) is T{index}"])
    scalars = {name: f"x{position[index]}" for index, name in kernel._launch_scalars if index in position}
    if symbols or scalars:
        lines.append("    values = {" + ", ".join([f"{n!r}: {v}" for n, v in symbols.items()]
                                              + [f"{n!r}: {v}" for n, v in scalars.items()]) + "}")
    workspaces = []
    for index, workspace in enumerate(meta.workspaces):  # allocated like the outputs, never returned
        if like is None:
            return None
        dims = []
        for d, (dim, fn) in enumerate(zip(workspace.shape, kernel._workspace_dims[index])):
            if isinstance(dim, int) or dim in symbols:
                dims.append(str(dim) if isinstance(dim, int) else symbols[dim])
            elif not symbols:
                return None
            else:  # an expression over the symbols
                env[f"W{index}_{d}"] = fn
                dims.append(f"W{index}_{d}(values)")
        name = f"ws{index}"
        lines.append(f"    {name} = allocate({like}, ({''.join(f'{d}, ' for d in dims)}), {workspace.dtype!r})")
        workspaces.append(name)
        pointers.append(f"{name}.data_ptr()" if like_library == "torch" else _numpy_pointer(name, env))
    pointers += [symbols[p.name] for p in meta.params[kernel._n_user:]]
    if symbols or scalars:
        launch = "(grid[0](values), grid[1](values), grid[2](values)), (block[0](values), block[1](values), block[2](values))"
    else:
        env["GRID"] = tuple(g({}) for g in kernel._grid)
        env["BLOCK"] = tuple(b({}) for b in kernel._block)
        launch = "GRID, BLOCK"
    lines.append(f"    return [{', '.join(outs)}], [{', '.join(pointers)}], {launch}, [{', '.join(workspaces)}]")
    code = "\n".join(lines)
    exec(code, env)  # noqa: S102 - code built above from parameter positions and dtype names
    guard = env["guard"]
    guard.source = code  # for reading: kernel._guard.source
    return guard
