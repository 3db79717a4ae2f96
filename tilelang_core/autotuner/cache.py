"""The autotuner's disk cache: the best config of a tuning run and its kernel, found again by
a later process without compiling or timing anything.

A record lives beside the kernel cache, in `<cache dir>/autotuner/<key[:2]>/<key>/`:
`result.json` (the best config, its latency, the reference latency, every candidate's
outcome) and `kernel/`, the best kernel exported (`Kernel.export`), loaded back with
`tilelang_core.load`. A record is written into a temporary directory and renamed into place,
so a reader never sees half of one.

The key (`tuning_key`) digests what decides the outcome: the package versions and a digest of
the core's files, the owning backend's cache-key parts, the tuned function (its module,
name, source and closure values), the arguments that are not tuned, the configs, the
target, the compile arguments and the profile arguments (reference and supply programs by
their source). A value with no stable identity (an object whose repr shows its address, a
function whose source cannot be read) makes the run uncacheable: it is tuned every time,
rather than risk handing back another program's result. Module-level globals the function
reads are not part of the key (nor are they in TileLang's): after changing one, remove the
`autotuner` directory of the cache (or point `TILELANG_CACHE_DIR` elsewhere).
"""
from __future__ import annotations

import enum
import functools
import hashlib
import inspect
import json
import os
import re
import shutil
import tempfile
import types
from pathlib import Path
from typing import Any

from .. import env
from .param import AutotuneResult

__all__ = ["TuningCache", "UnstableValue", "stable_value", "tuning_key"]

RESULT_FILE = "result.json"
KERNEL_DIR = "kernel"
_FORMAT = 1
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class UnstableValue(ValueError):
    """A value that cannot be named the same way in another process."""


def stable_value(value: Any) -> Any:
    """A JSON-able description of `value` that is the same in every process, or
    `UnstableValue`. Tensors are described by type, dtype, shape and device (not contents)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [stable_value(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", sorted(([str(k), stable_value(v)] for k, v in value.items()), key=lambda kv: kv[0])]
    if isinstance(value, (set, frozenset)):
        return ["set", sorted(json.dumps(stable_value(v)) for v in value)]
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a NumPy array or a torch tensor
        return ["tensor", type(value).__name__, str(value.dtype), [int(d) for d in value.shape],
                str(getattr(value, "device", "host"))]
    if isinstance(value, functools.partial):
        return ["partial", stable_value(value.func), stable_value(value.args), stable_value(value.keywords)]
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        return ["builtin", getattr(value, "__module__", None), value.__qualname__]
    if isinstance(value, types.FunctionType) or hasattr(value, "orig_func"):
        return _function_identity(getattr(value, "orig_func", value))
    text = repr(value)
    if _ADDRESS.search(text):
        raise UnstableValue(f"{type(value).__name__} value {text[:80]} has no stable identity (its repr shows an address)")
    return ["repr", type(value).__qualname__, text]


def _function_identity(fn: Any) -> list[Any]:
    """Module, qualified name, source text and closure values of a Python function."""
    if not isinstance(fn, types.FunctionType):
        return stable_value(fn)
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError) as err:
        raise UnstableValue(f"the source of {fn.__qualname__} cannot be read ({err})") from None
    cells = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell: bound later in the enclosing scope
            continue
        if isinstance(contents, types.FunctionType) and contents is fn:
            continue
        cells.append([name, stable_value(contents)])
    return ["function", fn.__module__, fn.__qualname__, source, cells]


def tuning_key(parts: dict[str, Any]) -> str | None:
    """The record key for these parts (see the module doc), or None when one has no stable
    identity. `parts` holds plain values; the versions are added here."""
    from .. import __version__
    from ..jit.cache import core_fingerprint

    try:
        described = {name: stable_value(value) for name, value in sorted(parts.items())}
    except UnstableValue:
        return None
    described["versions"] = [_FORMAT, __version__, core_fingerprint(), _tvm_version()]
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _tvm_version() -> str:
    import sys

    tvm = sys.modules.get("tvm")
    return str(getattr(tvm, "__version__", "")) if tvm is not None else ""


class TuningCache:
    """Records of finished tuning runs, one directory per key (see the module doc)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (Path(root) if root is not None else env.cache_dir()) / "autotuner"

    def path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def load(self, key: str, configs: list[dict[str, Any]]) -> AutotuneResult | None:
        """The stored result with its kernel loaded, or None (no record, or an unreadable one).
        The record names the best config by its index in `configs` (part of the key), so the
        config comes back as the very object the caller gave."""
        from ..jit.api import JITKernel
        from ..runtime.export import load

        path = self.path(key)
        try:
            record = json.loads((path / RESULT_FILE).read_text())
            config = configs[int(record["index"])]
            exported = load(path / KERNEL_DIR)
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return None
        kernel = JITKernel(exported.meta, exported.binary, exported.runtime, exported.source)
        from ..plugin import get_plugin_manager

        kernel.target = get_plugin_manager().parse_target(exported.meta.target)
        kernel.cache_hit = True
        kernel.config, kernel.latency, kernel.ref_latency = config, record["latency"], record["ref_latency"]
        return AutotuneResult(latency=record["latency"], config=config, ref_latency=record["ref_latency"],
                              libcode=kernel.get_kernel_source(), func=None, kernel=kernel, from_cache=True)

    def save(self, key: str, result: AutotuneResult, index: int) -> Path:
        """Store `result` (its kernel exported; its config is `configs[index]`) under `key`;
        a record another process stored first is kept."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=path.parent))
        try:
            result.kernel.export(tmp / KERNEL_DIR)
            record = {"index": index, "config": _json_config(result.config), "latency": result.latency, "ref_latency": result.ref_latency,
                      "candidates": [dict(o.to_json(), config=_json_config(o.config)) for o in result.outcomes]}
            (tmp / RESULT_FILE).write_text(json.dumps(record, indent=1, default=str))
            try:
                os.replace(tmp, path)
            except OSError:  # a complete record is already there: keep it
                pass
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return path


def _json_config(config: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(config, default=str))
