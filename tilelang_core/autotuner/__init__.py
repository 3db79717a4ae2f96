"""TileLang's autotuner: `autotune` (stacked on `@tilelang.jit`) and `AutoTuner`.

Candidates compile in parallel processes, are checked against a reference and timed one at a
time on the device; the best config and its kernel are kept on disk beside the kernel cache,
so a later process gets them back without tuning. See `tuner.py` for what a run does.
`jit` is `tilelang.jit` again, at the path older TileLang programs import it from
(`from tilelang.autotuner import autotune, jit`).
"""
from ..jit.api import jit
from .capture import get_autotune_inputs, set_autotune_inputs
from .decorator import AutotunedFunction, autotune
from .param import AutotuneError, AutotuneResult, CandidateOutcome, CompileArgs, ProfileArgs
from .tuner import AutoTuner

__all__ = [
    "AutoTuner",
    "AutotuneError",
    "AutotuneResult",
    "AutotunedFunction",
    "CandidateOutcome",
    "CompileArgs",
    "ProfileArgs",
    "autotune",
    "get_autotune_inputs",
    "jit",
    "set_autotune_inputs",
]
