"""A compiled kernel as the caller sees it: checks the arguments, binds symbolic dims,
allocates outputs, launches. TVM-free, so exported kernels run without the compiler."""
from __future__ import annotations

from typing import Any, Sequence

from .base import KernelCallError, KernelMeta, LoadedKernel, Runtime, compile_launch_expr
from .tensors import _contiguous_strides, is_contiguous, view_of

__all__ = ["Kernel"]

_INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")


class Kernel:
    """Callable kernel: `kernel(*inputs)` returns the outputs named by `out_idx`."""

    def __init__(self, meta: KernelMeta, binary: bytes, runtime: Runtime, source: str | None = None) -> None:
        self.meta = meta
        self.binary = binary
        self.runtime = runtime
        self.source = source
        self._loaded: LoadedKernel | None = None
        self._tensor_params = [i for i, p in enumerate(meta.params) if p.kind == "tensor"]
        self._n_user = len(meta.params) - len(meta.symbols)
        self._inputs = [i for i in range(self._n_user) if i not in meta.out_idx]
        # per parameter: its shape when fully static (the fast path of the shape check)
        self._static_shapes = [tuple(p.shape) if all(isinstance(d, int) for d in p.shape) else None
                               for p in meta.params]
        self._grid = [compile_launch_expr(g) for g in (tuple(meta.grid) + (1, 1, 1))[:3]]
        self._block = [compile_launch_expr(b) for b in (tuple(meta.block) + (1, 1, 1))[:3]]

    # -- public API ------------------------------------------------------------------------

    @property
    def loaded(self) -> LoadedKernel:
        if self._loaded is None:
            self._loaded = self.runtime.load(self.binary, self.meta)
        return self._loaded

    def get_kernel_source(self) -> str:
        return self.source or ""

    def export(self, path) -> None:
        from .export import export_kernel

        export_kernel(self, path)

    def get_profiler(self, tensor_supply_type: Any = None):
        from .profiler import Profiler

        return Profiler(self)

    def __call__(self, *args: Any, stream: Any = None) -> Any:
        full = self._arrange(args)
        values = self._bind(full)
        launch_args = self._launch_args(full, values)
        grid = (self._grid[0](values), self._grid[1](values), self._grid[2](values))
        block = (self._block[0](values), self._block[1](values), self._block[2](values))
        if stream is None:
            stream = self.runtime.current_stream()
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
            like = next((a for a in args if view_of(a) is not None), None)
            if like is None:
                raise KernelCallError(f"{self.meta.entry}: cannot allocate outputs without a tensor input to copy the device from")
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
        return values

    def _launch_args(self, full: list[Any], values: dict[str, int]) -> list[int | float]:
        out: list[int | float] = []
        for i, (param, arg) in enumerate(zip(self.meta.params, full)):
            if param.kind == "tensor":
                out.append(self._check_tensor(i, param, arg, values))
            else:
                out.append(self._check_scalar(i, param, arg))
        for name in self.meta.symbols:
            out.append(values[name])
        return out

    def _check_tensor(self, index: int, param, arg: Any, values: dict[str, int]) -> int:
        where = f"argument {param.name!r} (parameter {index}) of {self.meta.entry}"
        view = view_of(arg)
        if view is None:
            raise KernelCallError(f"{where}: expected a tensor (NumPy array or torch tensor), got {type(arg).__name__}")
        if (view.shape == self._static_shapes[index] and view.dtype == param.dtype
                and view.device_type == self.runtime.dlpack_device_type
                and (param.strides is not None or view.strides == _contiguous_strides(view.shape))):
            return view.data_ptr
        if len(view.shape) != len(param.shape):
            raise KernelCallError(f"{where}: expected rank {len(param.shape)} with shape {_fmt(param.shape)}, got rank {len(view.shape)} {view.shape}")
        for dim, (want, got) in enumerate(zip(param.shape, view.shape)):
            want_value = values.get(want) if isinstance(want, str) else want
            if want_value is not None and int(want_value) != int(got):
                raise KernelCallError(f"{where}: expected shape {_fmt(param.shape)}, got {view.shape} (dim {dim}: expected {want_value}, got {got})")
        if view.dtype != param.dtype:
            raise KernelCallError(f"{where}: expected dtype {param.dtype}, got {view.dtype}")
        if view.device_type != self.runtime.dlpack_device_type:
            raise KernelCallError(
                f"{where}: the kernel runs on {self.meta.target} and needs a tensor on its device "
                f"(DLPack device type {self.runtime.dlpack_device_type}), got one with DLPack device "
                f"type {view.device_type}; move it there first (e.g. tensor.to(device))")
        if param.strides is None and not is_contiguous(view):
            raise KernelCallError(f"{where}: expected a contiguous row-major tensor, got strides {view.strides}; pass .contiguous() / np.ascontiguousarray(...)")
        return view.data_ptr

    def _check_scalar(self, index: int, param, arg: Any) -> int | float:
        if view_of(arg) is not None or not isinstance(arg, (int, float, bool)):
            raise KernelCallError(f"argument {param.name!r} (parameter {index}) of {self.meta.entry}: expected a {param.dtype} scalar, got {type(arg).__name__}")
        return int(arg) if param.dtype in _INT_DTYPES else float(arg)


def _fmt(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
