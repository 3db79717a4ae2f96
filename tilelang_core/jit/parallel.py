"""`par_compile`: compile several kernels at once (TileLang's `tilelang.par_compile`).

Each kernel goes through `compile` on a thread of a pool: the device compilers (NVRTC, nvcc,
hipcc, the host C compiler) release the GIL or run as subprocesses, so their time overlaps;
the Python passes take turns. Results come back in the order of `funcs`.
"""
from __future__ import annotations

import concurrent.futures
import os
from typing import Any, Iterable, Sequence

__all__ = ["par_compile"]


def par_compile(funcs: Iterable[Any], out_idx: int | Sequence[int] | None = None, execution_backend: str | None = None,
                target: Any = None, target_host: Any = None, verbose: bool = False,
                pass_configs: dict[str, Any] | None = None, compile_flags: str | Sequence[str] | None = None,
                num_workers: int | None = None, ignore_error: bool = False) -> list[Any]:
    """The compiled kernel of each of `funcs` (a `T.prim_func` each), with `compile`'s options.

    `num_workers` threads (default: one per kernel, at most the CPU count). With
    `ignore_error=True` a kernel that fails to compile is None in the result (a warning names
    it and its error); otherwise its error is raised once the others are done.
    """
    from .api import compile as compile_one

    funcs = list(funcs)
    if not funcs:
        return []
    if num_workers is not None and (not isinstance(num_workers, int) or num_workers < 1):
        raise ValueError(f"par_compile: num_workers must be a positive int, got {num_workers!r}")
    workers = num_workers or min(len(funcs), os.cpu_count() or 1)
    options = dict(out_idx=out_idx, target=target, pass_configs=pass_configs, execution_backend=execution_backend,
                   verbose=verbose, target_host=target_host, compile_flags=compile_flags)
    with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tilelang-par-compile") as pool:
        futures = [pool.submit(compile_one, func, **options) for func in funcs]
        concurrent.futures.wait(futures)
    results: list[Any] = []
    for index, future in enumerate(futures):
        error = future.exception()
        if error is None:
            results.append(future.result())
        elif ignore_error:
            import warnings

            warnings.warn(f"par_compile: kernel {index} did not compile: {type(error).__name__}: {error}",
                          stacklevel=2)
            results.append(None)
        else:
            raise error
    return results
