"""TileLang's autotuner: `autotune` (stacked on `@tilelang.jit`) and `AutoTuner`.

Candidates compile in parallel processes, are checked against a reference and timed one at a
time on the device; the best config and its kernel are kept on disk beside the kernel cache,
so a later process gets them back without tuning. See `tuner.py` for what a run does.
"""
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
    "set_autotune_inputs",
]
