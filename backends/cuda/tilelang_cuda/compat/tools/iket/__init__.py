"""TileLang's `tilelang.tools.cuda.iket`: named markers, warp-level ranges and 32-bit payloads
written from inside a CUDA kernel, for the external IKET profiler (which turns them into
Perfetto traces).

In a kernel: `iket.mark(name[, payload=iket.payload(expr, dtype)])`, `with iket.range(name):`
(or `iket.range_push` / `iket.range_pop`; `range_start` / `range_end` are their aliases).
Each is a call of an extern (`TL_IKET_EVENT...`) carrying a token that encodes the event
(`metadata`), so a kernel keeps its events whatever the Python process does afterwards.

Around compilation: `with iket.session(output_dir=..., runtime_payloads=...):` registers a
CUDA post-processing callback (`tilelang_core.jit.postproc`; kernels compiled under it bypass
the kernel cache) that numbers the events of the generated source, declares the metadata arrays
IKET reads (`__iket_meta_info`, one attribute array per event and range) and defines the event
macros: a `%globaltimer_lo` timestamp OR'd with the event id, stored to shared memory where
IKET's patcher expects it, then `pmevent.mask`. Without the profiler attached the kernel runs
normally and the events cost a few instructions each.

Host helpers: `set_output_dir`, `output_dir`, `output_path`, `trace_files`, `profile_command`
(paths and a command line for `python -m iket.cli.main`; nothing here runs the profiler).
"""
from __future__ import annotations

from .frontend import (PayloadSpec, event_table, mark, payload, range, range_end, range_pop, range_push,
                       range_start, reset)
from .paths import output_dir, output_path, profile_command, set_output_dir, trace_files
from .session import (disable, disable_runtime_payloads, enable, enable_runtime_payloads, is_enabled,
                      runtime_payloads_enabled, session)

__all__ = ["PayloadSpec", "disable", "disable_runtime_payloads", "enable", "enable_runtime_payloads",
           "event_table", "is_enabled", "mark", "output_dir", "output_path", "payload", "profile_command",
           "range", "range_end", "range_pop", "range_push", "range_start", "reset", "runtime_payloads_enabled",
           "session", "set_output_dir", "trace_files"]
