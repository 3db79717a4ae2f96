"""When IKET instruments: `enable()` / `disable()` (nested: the outermost pair counts), the
runtime-payload switch, and `session(...)`, which sets all of it for a `with` block and puts
everything back after (the CUDA post-processing callback that was registered before, the
output directory, the payload switch, the kernel cache switch)."""
from __future__ import annotations

import os
import threading
from typing import Any

from tilelang_core import env
from tilelang_core.jit import register_postproc, registered_postproc, unregister_postproc

from . import paths
from .codegen import instrument
from .frontend import reset

__all__ = ["enable", "disable", "is_enabled", "enable_runtime_payloads", "disable_runtime_payloads",
           "runtime_payloads_enabled", "session"]

_KIND = "cuda"
_lock = threading.RLock()
_depth = 0
_previous: Any = None
_runtime_payloads = False


def enable_runtime_payloads() -> None:
    """Record payload values (a second 32-bit store per payload event) in kernels compiled from now on."""
    global _runtime_payloads
    with _lock:
        _runtime_payloads = True


def disable_runtime_payloads() -> None:
    """Payload events record as plain events in kernels compiled from now on."""
    global _runtime_payloads
    with _lock:
        _runtime_payloads = False


def runtime_payloads_enabled() -> bool:
    with _lock:
        return _runtime_payloads


def _postprocess(source: str, target: Any) -> str:
    return instrument(source, str(getattr(target, "arch", "") or ""), runtime_payloads_enabled())


def enable(*, override: bool = True) -> None:
    """Instrument CUDA kernels compiled from now on (they bypass the kernel cache meanwhile)."""
    global _depth, _previous
    with _lock:
        if _depth == 0:
            previous = registered_postproc(_KIND)
            register_postproc(_KIND, _postprocess, override=override)
            _previous = previous
        _depth += 1


def disable(*, restore: bool = True) -> None:
    """End one `enable()`; the outermost one puts back the callback registered before it."""
    global _depth, _previous
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth:
            return
        previous, _previous = _previous, None
        if restore and previous is not None:
            register_postproc(_KIND, previous, override=True)
        else:
            unregister_postproc(_KIND)


def is_enabled() -> bool:
    with _lock:
        return _depth > 0


class _Session:
    def __init__(self, reset_events: bool, override: bool, disable_on_exit: bool,
                 output_dir: str | os.PathLike | None, runtime_payloads: bool | None, disable_cache: bool) -> None:
        self.reset_events, self.override, self.disable_on_exit = reset_events, override, disable_on_exit
        self.output_dir, self.runtime_payloads, self.disable_cache = output_dir, runtime_payloads, disable_cache
        self._saved: tuple | None = None
        self._enabled = False

    def __enter__(self) -> "_Session":
        if self._saved is not None:
            raise RuntimeError("an iket.session object is already open; make a new one to nest")
        self._saved = (paths.snapshot(), runtime_payloads_enabled(), env.is_cache_enabled())
        try:
            if self.output_dir is not None:
                paths.set_output_dir(self.output_dir)
            if self.runtime_payloads is not None:
                (enable_runtime_payloads if self.runtime_payloads else disable_runtime_payloads)()
            if self.disable_cache:
                env.CacheState.disable()
            enable(override=self.override)
            self._enabled = True
            if self.reset_events:
                reset()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> bool:
        try:
            if self._enabled and self.disable_on_exit:
                disable(restore=True)
        finally:
            self._enabled = False
            (directory, payloads, cache), self._saved = self._saved, None
            paths.restore(directory)
            (enable_runtime_payloads if payloads else disable_runtime_payloads)()
            if self.disable_cache:
                (env.CacheState.enable if cache else env.CacheState.disable)()
        return False


def session(*, reset_events: bool = True, override: bool = True, disable_on_exit: bool = True,
            output_dir: str | os.PathLike | None = None, runtime_payloads: bool | None = None,
            disable_cache: bool = True) -> _Session:
    """A `with` block in which CUDA kernels compiled are instrumented: events numbered afresh
    (`reset_events`), exports under `output_dir`, payload values recorded when
    `runtime_payloads` (None: as before), the kernel cache off (`disable_cache`)."""
    return _Session(reset_events, override, disable_on_exit, output_dir, runtime_payloads, disable_cache)
