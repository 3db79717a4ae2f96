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
mp_21/mp_22, naming the capability. (The port's other extensions are keywords of core names,
`T.Kernel(..., producer_threads=)` and `T.copy(..., force_async_copy=)`, which a backend cannot
add to core names through this hook; `T.copy(..., disable_tma=)` is accepted by the core.)
"""
from __future__ import annotations

from typing import Any

from tvm import tirx

__all__ = ["tce_commit_group", "tce_wait_group", "LANGUAGE_NAMES", "TCE_CALLS"]

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
