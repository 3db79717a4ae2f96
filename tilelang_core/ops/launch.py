"""How an operator call becomes a kernel launch: the target of the inputs' device, the kernel
for (operator, problem, config, target) compiled once and kept, arrays reshaped on the host.

Arrays are NumPy arrays or torch tensors; outputs are allocated by the kernel's runtime in the
same library and on the same device as the inputs (the `out_idx` of `tilelang_core.compile`).
"""
from __future__ import annotations

import functools
import json
import threading
from typing import Any, Mapping, Sequence

from .. import env
from ..plugin import get_plugin_manager, hooks_for
from ..runtime.tensors import array_library, dtype_name, numpy_data_ptr, torch_device, view_of
from ..utils.tensor import map_torch_type, numpy_dtype
from .registry import Operator, resolve_config

__all__ = ["filled", "OpError", "target_for", "kernel_for", "contiguous", "aligned", "library", "dtype_of", "check_dtype",
           "tuned_configs", "store_tuned", "explain", "capture", "Captured", "pass_configs"]


class OpError(ValueError):
    """An operator was called with arguments it cannot take; the message says which and why."""


def library(x: Any) -> str:
    found = array_library(type(x))  # a type lookup for exactly ndarray / Tensor
    if found is not None:
        return found
    view = view_of(x)
    if view is None:
        raise OpError(f"expected a NumPy array or a torch tensor, got {type(x).__name__}")
    return view.library


_DTYPE_NAMES: dict[Any, str] = {}


def dtype_of(x: Any) -> str:
    """Our name of `x`'s dtype (kept per dtype object: naming one costs microseconds)."""
    dtype = x.dtype
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        name = _DTYPE_NAMES[dtype] = dtype_name(dtype)
        return name
    except TypeError:  # an unhashable dtype-like object
        return dtype_name(dtype)


def contiguous(x: Any) -> Any:
    """`x` laid out row-major (a copy only where it is not)."""
    if library(x) == "torch":
        return x.contiguous()
    import numpy as np

    return np.ascontiguousarray(x)


def filled(like: Any, shape: Sequence[int], value: float = 0.0, dtype: str | None = None) -> Any:
    """A new array of `shape` in the array library and on the device of `like`, of `like`'s
    dtype (or the dtype named `dtype`, e.g. "int64"), every element `value`: the result of
    an op on empty inputs, as torch gives it (no kernel launches over zero blocks)."""
    if library(like) == "torch":
        import torch

        kind = like.dtype if dtype is None else map_torch_type(dtype)
        return torch.full(tuple(shape), value, dtype=kind, device=like.device)
    import numpy as np

    return np.full(tuple(shape), value, dtype=like.dtype if dtype is None else numpy_dtype(dtype))


def _data_ptr(x: Any) -> int:
    kind = array_library(type(x))
    if kind == "numpy":
        return numpy_data_ptr(x)
    if kind == "torch":
        return int(x.data_ptr())
    return view_of(x).data_ptr


def aligned(x: Any) -> Any:
    """`x` row-major with a 16-byte aligned data pointer (the 16-byte accesses of the vector
    kernels need it): `x` itself, or a copy of an offset view."""
    x = contiguous(x)
    if _data_ptr(x) % 16:
        x = x.clone() if hasattr(x, "clone") else x.copy()
    return x


def check_dtype(op: str, arg: str, x: Any, allowed: Sequence[str]) -> str:
    dtype = dtype_of(x)
    if dtype not in allowed:
        raise OpError(f"{op}: argument {arg!r} has dtype {dtype}; {op} takes {', '.join(allowed)}. "
                      f"Cast it first (e.g. x.float()).")
    return dtype


_TARGETS: dict[tuple[int, str], Any] = {}
_PARSED: dict[str, tuple[Any, Any]] = {}  # target string -> (plugin manager, target)


def _device(x: Any) -> tuple[int, int] | None:
    """(DLPack device type, index) of an array; None for what is no array."""
    kind = array_library(type(x))
    if kind == "numpy":
        return (1, 0)
    if kind == "torch":
        return torch_device(x)
    view = view_of(x)
    return None if view is None else (view.device_type, view.device_index)


def target_for(arrays: Sequence[Any], target: Any = None, op: str = "op"):
    """The target the operator runs on: `target` when given, else the usable target whose
    runtime takes tensors of the first array's device (DLPack device type), the highest
    priority first. All arrays must live on one device.

    Kept per (device type, TILELANG_TARGET) and per target string: a call after the first
    reads each array's device (a type lookup) and the environment, nothing more."""
    manager = get_plugin_manager()
    if target is not None:
        if not isinstance(target, str):
            return manager.parse_target(target)
        kept = _PARSED.get(target)
        if kept is None or kept[0] is not manager:  # parsed by this plugin manager only
            kept = _PARSED[target] = (manager, manager.parse_target(target))
        return kept[1]
    devices = {d for d in map(_device, [a for a in arrays if a is not None]) if d is not None}
    if len(devices) > 1:
        raise OpError(f"{op}: the arrays live on different devices {sorted(devices)}; move them to one device")
    device_type = next(iter(devices))[0] if devices else 1
    key = (device_type, env.default_target())
    found = _TARGETS.get(key)
    if found is None:
        found = _TARGETS[key] = _target_of_device(manager, device_type, op)
    return found


def _target_of_device(manager, device_type: int, op: str):
    """The first usable target (TILELANG_TARGET, then detected devices by priority) whose
    runtime takes tensors of `device_type`."""
    candidates = []
    preferred = env.default_target()
    if preferred != "auto":
        candidates.append(manager.parse_target(preferred))
    for det in sorted(manager.detections(), key=lambda d: -d.priority):
        if det.device and det.kind in manager.registry.kinds:
            candidates.append(manager.parse_target(f"{det.kind}/{det.arch}"))
    for tgt in candidates:
        try:
            runtime_type = hooks_for(tgt).runtime().dlpack_device_type
        except Exception:  # noqa: BLE001 - a backend without a working runtime cannot take it
            continue
        if runtime_type == device_type:
            return tgt
    raise OpError(f"{op}: no usable target runs on tensors of DLPack device type {device_type}; "
                  f"`tilelang backends` lists what is installed and usable here, or pass target=")


_KERNELS: dict[tuple, tuple[Any, dict, str]] = {}
# the same entries under (operator, target object, the problem's items): no freezing, no str()
_RECENT: dict[tuple, tuple[Any, dict, str]] = {}
_LOCK = threading.Lock()
_CAPTURE = threading.local()


class Captured(Exception):
    """Raised inside an operator call run by `capture`: the call stopped before its launch."""


class _Recorder:
    def __init__(self, op: Operator, target, problem: Mapping[str, Any]) -> None:
        self.op, self.target, self.problem, self.inputs = op, target, dict(problem), None

    def __call__(self, *inputs: Any) -> Any:
        self.inputs = inputs
        raise Captured()


def capture(call, *args: Any, **kwargs: Any) -> _Recorder:
    """Run an operator call up to its kernel launch: what it would launch (operator, target,
    problem) and with which inputs, without launching (for `tune`)."""
    _CAPTURE.recorder = None
    _CAPTURE.active = True
    try:
        call(*args, **kwargs)
    except Captured:
        pass
    finally:
        _CAPTURE.active = False
    if _CAPTURE.recorder is None or _CAPTURE.recorder.inputs is None:
        raise OpError(f"{getattr(call, '__name__', call)} launched no kernel to capture")
    return _CAPTURE.recorder


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def kernel_for(op: Operator, target, problem: Mapping[str, Any]):
    """The compiled kernel of `op` for `problem` on `target` (compiled on first use, then kept
    in memory; the kernel cache keeps the binary on disk), with its config and the config's
    source. Under `capture`, a recorder that stops the call at its launch."""
    if getattr(_CAPTURE, "active", False):
        _CAPTURE.recorder = _Recorder(op, target, problem)
        return _CAPTURE.recorder, {}, "capture"
    try:  # a problem of scalars, built in one order by its operator: its items are the key
        fast = (op.name, target, tuple(problem.items()))
        hit = _RECENT.get(fast)
    except TypeError:  # a list or a dict among the values
        fast, hit = None, None
    if hit is not None:
        return hit
    key = (op.name, str(target), _freeze(problem))
    with _LOCK:
        hit = _KERNELS.get(key)
    if hit is not None:
        if fast is not None:
            _RECENT[fast] = hit
        return hit
    from ..jit.api import compile as compile_kernel

    tuned = tuned_configs().get(_tuned_key(op.name, target, problem))
    config, source = resolve_config(op, target, problem, tuned)
    build = config["kernel"] if callable(config["kernel"]) else op.kernels[config["kernel"]]
    func = build(dict(problem), config)
    kernel = compile_kernel(func, out_idx=list(op.outputs), target=target, pass_configs=pass_configs(config))
    entry = (kernel, config, source)
    with _LOCK:
        _KERNELS[key] = entry
    if fast is not None:
        _RECENT[fast] = entry
    return entry


def pass_configs(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The compile options a config asks for: "fast_math" (approximate exp2/division where the
    backend's fast math keeps inf and NaN) turns on `tl.enable_fast_math`."""
    return {"tl.enable_fast_math": True} if config.get("fast_math") else None


def explain() -> list[dict[str, Any]]:
    """The kernels built in this process: operator, target, problem, config and its source."""
    rows = []
    for (name, target, problem), (_, config, source) in list(_KERNELS.items()):
        kernel = config["kernel"]
        rows.append({"op": name, "target": target, "problem": dict(problem), "source": source,
                     "config": {**config, "kernel": kernel if isinstance(kernel, str) else getattr(kernel, "__name__", "custom")}})
    return rows


# -- tuned configs, kept on disk beside the kernel cache ----------------------------------


def _tuned_key(name: str, target, problem: Mapping[str, Any]) -> str:
    return json.dumps([name, str(target), _freeze(problem)], default=str)


def _tuned_path():
    from pathlib import Path

    return Path(env.cache_dir()) / "ops" / "tuned.json"


@functools.lru_cache(maxsize=1)
def _tuned_store() -> dict[str, dict]:
    path = _tuned_path()
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def tuned_configs() -> dict[str, dict]:
    return _tuned_store()


def store_tuned(name: str, target, problem: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    """Keep a tuned config for (operator, target, problem); a later process finds it."""
    store = _tuned_store()
    store[_tuned_key(name, target, problem)] = dict(config)
    path = _tuned_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(store, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError as exc:
        import warnings

        warnings.warn(f"tuned config for {name} not kept on disk ({exc}); it holds for this process", stacklevel=2)
    with _LOCK:
        for key in [k for k in _KERNELS if k[0] == name and k[1] == str(target) and k[2] == _freeze(problem)]:
            del _KERNELS[key]
        _RECENT.clear()
