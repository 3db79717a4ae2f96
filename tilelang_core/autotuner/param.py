"""What the autotuner is told and what it reports: `CompileArgs`, `ProfileArgs`,
`CandidateOutcome` (one config's fate) and `AutotuneResult` (TileLang's names and meanings).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..runtime.profiler import _BACKENDS as BENCH_BACKENDS  # do_bench's timing backends
from ..utils.tensor import TensorSupplyType

__all__ = ["AutotuneError", "AutotuneResult", "CandidateOutcome", "CompileArgs", "ProfileArgs"]


class AutotuneError(RuntimeError):
    """No candidate survived: the message lists every config with the reason it was dropped."""


@dataclass(frozen=True)
class CompileArgs:
    """How each candidate compiles (the keywords of `tilelang.compile`). None: the value of
    the `@tilelang.jit` function being tuned, else `compile`'s default."""

    out_idx: int | Sequence[int] | None = None
    target: Any = None
    execution_backend: str | None = None
    target_host: Any = None
    verbose: bool | None = None
    pass_configs: dict[str, Any] | None = None


@dataclass(frozen=True)
class ProfileArgs:
    """How each compiled candidate is checked and timed.

    `warmup` / `rep`: untimed and timed calls per candidate (counts, as TileLang's autotuner
    passes them to `do_bench` as `n_warmup` / `n_repeat`). `timeout`: seconds each candidate
    may take to compile, and again to be checked and timed. `supply_type`: how the profiler
    fills inputs, unless `supply_prog(params)` returns them (or `set_autotune_inputs` gave
    them). `ref_prog(*inputs)`: the reference every candidate is checked against with
    `rtol` / `atol` / `max_mismatched_ratio` (or `manual_check_prog(outputs, ref_outputs)`),
    unless `skip_check`; its own latency becomes `ref_latency`. `cache_input_tensors`: one set
    of inputs for all candidates (when their parameters agree). `backend`: `do_bench`'s.
    """

    warmup: int = 25
    rep: int = 100
    timeout: float = 30
    supply_type: TensorSupplyType = TensorSupplyType.Auto
    ref_prog: Callable | None = None
    supply_prog: Callable | None = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Callable | None = None
    cache_input_tensors: bool = False
    backend: str = "event"

    def __post_init__(self) -> None:
        for name in ("warmup", "rep"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"autotune {name}= is a number of calls (an int >= 1), got {value!r}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or self.timeout <= 0:
            raise ValueError(f"autotune timeout= is seconds per candidate (> 0), got {self.timeout!r}")
        if self.backend not in BENCH_BACKENDS:
            raise ValueError(f"autotune backend= must be one of {', '.join(BENCH_BACKENDS)}, got {self.backend!r}")
        if not isinstance(self.supply_type, TensorSupplyType):
            names = ", ".join(TensorSupplyType.__members__)
            raise TypeError(f"autotune supply_type= must be a TensorSupplyType ({names}), got {self.supply_type!r}")
        for name in ("ref_prog", "supply_prog", "manual_check_prog"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"autotune {name}= must be callable, got {type(value).__name__}")


@dataclass
class CandidateOutcome:
    """One config: `status` is "ok", "skipped" (failed to build, compile, check or time; the
    reason says which and why) or "pending" while tuning runs."""

    index: int
    config: dict[str, Any]
    status: str = "pending"
    reason: str = ""
    latency: float | None = None
    compile_seconds: float | None = None
    compiled_by: str = ""  # "worker" (a compile worker built it), "tuner" (this process did)

    def skip(self, stage: str, reason: str) -> None:
        self.status = "skipped"
        self.reason = f"{stage}: {reason}"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "status": self.status, "reason": self.reason, "latency": self.latency,
                "compile_seconds": self.compile_seconds, "compiled_by": self.compiled_by}


@dataclass(frozen=True)
class AutotuneResult:
    """The outcome of a tuning run (TileLang's fields, plus ours).

    `latency` (ms) and `config` of the best candidate, `ref_latency` (ms, None without a
    reference program), `libcode` (its generated source), `func` (its kernel IR; None when the
    result came from the disk cache), `kernel` (the compiled best kernel, with `.config`,
    `.latency`, `.ref_latency` set). Ours: `outcomes` (every config and what became of it;
    empty when loaded from the cache) and `from_cache`.
    """

    latency: float | None = None
    config: dict[str, Any] | None = None
    ref_latency: float | None = None
    libcode: str | None = None
    func: Any = None
    kernel: Any = None
    outcomes: tuple[CandidateOutcome, ...] = field(default_factory=tuple)
    from_cache: bool = False
