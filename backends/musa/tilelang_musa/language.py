"""MUSA instructions in the kernel language, offered as `T.<name>` by the plugin
(`tilelang_language_names`), only when tilelang-musa is installed; the core names none of them.

- `T.tce_commit_group()`: close the group of TCE (SQMMA) instructions this warp squad issued
  (`__musa_tce_commit_group`);
- `T.tce_wait_group(n)`: wait until at most `n` committed groups are in flight
  (`__musa_tce_wait_group(n)`, n a constant from 0 to 2, as MUTLASS's `warpsquad_wait<N>`
  asserts).

Moore Threads' TileLang port lets hand-scheduled mp_31 programs call these through
`tir.call_extern("void", "__musa_tce_commit_group")`; here they are names of the language
whose use is checked. Both need the `tce` capability (mp_31): the MUSA printer refuses them on
mp_21/mp_22, naming the capability.

The port's keywords of core calls, offered through `tilelang_language_keywords` (`KEYWORDS`):

- `T.copy(..., force_async_copy=True)`: this global -> shared copy is done by asynchronous
  LDLMS copies (`__musa_memcpy_g2s`), never TME, also inside a `T.Pipelined` loop; a copy LDLMS
  cannot do is refused, saying why. (The port: `tl.force_async_copy`, src/op/copy.cc:1046,
  "Enable WS async copy lowering".) `T.copy(..., disable_tma=True)` is the core's keyword: the
  copy never goes through TME either.
- `T.Kernel(..., producer_threads=n)`: in the port, the size of the producer of a
  warp-specialized pipeline whose loads are SIMT copies (src/transform/
  warp_specialized_rewriter.cc:1474-1505; a producer of bulk copies only keeps one warpgroup,
  and a value not below the consumers' threads is ignored). tilelang-musa's pipelines are not
  warp-specialized: thread 0 issues the TME loads (`lower_tme`), so, as in the port for
  producers of bulk copies only, the value does not change the generated code. It is checked:
  a positive multiple of the target's warp size, fewer than the kernel's threads.

Other backends compile a program that passes these keywords as if they were absent (the
core's rule for extension keywords).
"""
from __future__ import annotations

from typing import Any

from tvm import tirx

__all__ = ["tce_commit_group", "tce_wait_group", "LANGUAGE_NAMES", "TCE_CALLS", "KEYWORDS"]

# the extern names these build; the printer checks the target's capability for them
TCE_CALLS = ("tl_musa_tce_commit", "tl_musa_tce_wait")


def tce_commit_group() -> Any:
    """`T.tce_commit_group()`: close the warp squad's group of issued SQMMA instructions."""
    return tirx.call_extern("void", "tl_musa_tce_commit")


def tce_wait_group(pending: Any = 0) -> Any:
    """`T.tce_wait_group(n)`: wait until at most `n` committed SQMMA groups are in flight."""
    value = int(pending.value) if isinstance(pending, tirx.IntImm) else pending
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 2:
        raise ValueError(f"T.tce_wait_group: n must be a constant 0, 1 or 2 (groups left in flight), got {pending!r}")
    return tirx.call_extern("void", f"tl_musa_tce_wait<{value}>")


LANGUAGE_NAMES = {"tce_commit_group": tce_commit_group, "tce_wait_group": tce_wait_group}


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"must be True or False, got {type(value).__name__}")
    return value


def _threads(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError("must be a positive int (a number of threads)")
    return value


KEYWORDS = {"copy": {"force_async_copy": _flag}, "Kernel": {"producer_threads": _threads}}
