"""Random numbers on the device: TileLang's `T.rng_init`, `T.rng_rand`, `T.rng_rand_float`.

`T.rng_init(seed, seq=None, off=0)` starts this thread's Philox4x32-10 stream (curand's
`curand_init(seed, seq, off, &state)` with `curandStatePhilox4_32_10_t`; `seq` defaults to
the thread's global index `tx + bx * threads`); `T.rng_rand()` is its next uint32,
`T.rng_rand_float(bit=32|64, dist="uniform"|"normal")` a float in (0, 1] or a standard normal
value, stepping the stream as curand does. The stream lives in a 16-word local buffer
the init call allocates where it stands; the calls after it in the same kernel use it.
Every C-family dialect that merges `codegen.PHILOX_FORMATS` prints them (CUDA, HIP, MUSA, the
CPU); only the Philox generator is provided.
"""
from __future__ import annotations

import threading
from typing import Any

from tvm import ir, tirx

from tilelang_core.codegen import builtins

from .allocate import alloc_local
from .extern import access_ptr
from .kernel import _current_kernel, get_block_binding, get_thread_binding, get_thread_extent

__all__ = ["rng_init", "rng_rand", "rng_rand_float"]

_PHILOX = "curandStatePhilox4_32_10_t"
_STATE_WORDS = 16
_states = threading.local()  # kernel -> its state buffer


def _u64(value: Any, what: str) -> ir.Expr:
    if isinstance(value, bool) or not isinstance(value, (int, ir.Expr)):
        raise TypeError(f"T.rng_init: {what} must be an int or an integer expression, got {value!r}")
    if isinstance(value, int):
        return tirx.const(value, "uint64")
    return value if str(value.ty.dtype) == "uint64" else tirx.Cast("uint64", value)


def _state(what: str) -> Any:
    kernel = _current_kernel(what)
    state = getattr(_states, "by_kernel", {}).get(id(kernel))
    if state is None or state[0] is not kernel:
        raise RuntimeError(f"T.{what}: call T.rng_init(seed) first in this kernel (it starts the stream)")
    return access_ptr(state[1], "rw", extent=_STATE_WORDS)


def rng_init(seed: Any, seq: Any = None, off: Any = 0, generator: str = _PHILOX) -> ir.Call:
    """Start this thread's Philox4x32-10 stream: `seed`, subsequence `seq` (default: the
    thread's global index), `off` values skipped."""
    if generator != _PHILOX:
        raise ValueError(f"T.rng_init: generator={generator!r}; only {_PHILOX!r} (Philox4x32-10) is provided")
    kernel = _current_kernel("rng_init")
    if seq is None:
        seq = get_thread_binding() + get_block_binding() * get_thread_extent()
    state = alloc_local((_STATE_WORDS,), "uint32")
    if not hasattr(_states, "by_kernel"):
        _states.by_kernel = {}
    _states.by_kernel[id(kernel)] = (kernel, state)
    return builtins.intrinsic("void", "rng_init", access_ptr(state, "rw", extent=_STATE_WORDS), _u64(seed, "seed"),
                              _u64(seq, "seq"), _u64(off, "off"))


def rng_rand() -> ir.Call:
    """The next uint32 of this thread's stream."""
    return builtins.intrinsic("uint32", "rng_rand", _state("rng_rand"))


def rng_rand_float(bit: int = 32, dist: str = "uniform") -> ir.Call:
    """The next float of this thread's stream: `bit` 32 or 64, `dist` "uniform" (in (0, 1])
    or "normal" (standard normal)."""
    if bit not in (32, 64):
        raise ValueError(f"T.rng_rand_float: bit must be 32 or 64, got {bit!r}")
    if dist not in ("uniform", "normal"):
        raise ValueError(f"T.rng_rand_float: dist must be 'uniform' or 'normal', got {dist!r}")
    return builtins.intrinsic(f"float{bit}", f"rng_rand_{dist}", _state("rng_rand_float"))
