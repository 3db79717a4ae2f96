"""What a target can do, as data the core and the DSL read instead of a target's name.

A capability table is frozen and versioned (`SCHEMA_VERSION`): a backend built against an
older schema still loads, and the core can tell which fields it may trust.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = [
    "SCHEMA_VERSION",
    "MatrixInstruction",
    "Capabilities",
]

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class MatrixInstruction:
    """One family of matrix-multiply-accumulate instructions (mma.sync, wgmma, MFMA, ...).

    `shapes` lists (m, n, k) per instruction; `dtypes` lists (a/b dtype, accumulator dtype).
    `scope` says who issues it: "warp", "warpgroup", "wavefront", "simdgroup" or "thread".
    """

    family: str
    shapes: tuple[tuple[int, int, int], ...]
    dtypes: tuple[tuple[str, str], ...]
    scope: str = "warp"

    def supports(self, in_dtype: str, accum_dtype: str) -> bool:
        return (in_dtype, accum_dtype) in self.dtypes


@dataclass(frozen=True)
class Capabilities:
    """The frozen capability table of one target (a kind plus an arch).

    `execution_model` decides which portable lowering the core applies: "simt" partitions tile
    ops over the threads of a block (GPUs); "block-serial" runs a block as one thread of
    execution with whole-tile loops (CPUs), and emulates explicit thread indices.
    Sizes are in bytes; None means "not known for this target".
    `thread_group_size` is the number of threads in one group of `T.ws(k)` (a group runs its
    own code and synchronizes with a barrier of its own); None: the target has no such groups
    and `T.ws` is refused.
    """

    kind: str
    arch: str
    execution_model: str = "simt"
    warp_size: int = 32
    max_threads_per_block: int = 1024
    shared_memory_static: int = 48 * 1024
    shared_memory_optin: int = 48 * 1024
    registers_per_block: int | None = None
    processor_count: int | None = None
    l2_size: int | None = None
    vector_bytes: int = 16
    max_vector_lanes: int = 16  # the most elements one vector access may hold (MSL: 4)
    matrix_instructions: tuple[MatrixInstruction, ...] = ()
    copy_engines: tuple[str, ...] = ()
    barriers: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    atomics: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    thread_group_size: int | None = None
    refined_from_device: bool = False
    schema_version: int = SCHEMA_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)

    def has_matrix(self, family: str) -> bool:
        return any(m.family == family for m in self.matrix_instructions)

    def matrix(self, family: str) -> MatrixInstruction | None:
        return next((m for m in self.matrix_instructions if m.family == family), None)

    def has_copy_engine(self, name: str) -> bool:
        return name in self.copy_engines

    def has_barrier(self, name: str) -> bool:
        return name in self.barriers

    def supports_dtype(self, dtype: str) -> bool:
        return str(dtype) in self.dtypes

    def supports_atomic(self, name: str) -> bool:
        return name in self.atomics

    def has(self, capability: str) -> bool:
        """True when the table declares `capability`: a matrix family, a copy engine, a
        barrier, a dtype, an atomic ("atomic_add.float32") or a feature flag."""
        return (
            self.has_matrix(capability)
            or capability in self.copy_engines
            or capability in self.barriers
            or capability in self.dtypes
            or capability in self.atomics
            or capability in self.features
        )

    def refine(self, **changes: Any) -> "Capabilities":
        """A copy with fields replaced by what a detected device reports."""
        return dataclasses.replace(self, refined_from_device=True, **changes)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["extra"] = dict(self.extra)
        return out

    def rows(self) -> list[tuple[str, str]]:
        """(field, value) pairs in a stable order, for tables."""

        def fmt_size(v: int | None) -> str:
            if v is None:
                return "unknown"
            if v >= 1 << 20 and v % (1 << 20) == 0:
                return f"{v >> 20} MiB"
            if v >= 1024 and v % 1024 == 0:
                return f"{v >> 10} KiB"
            return str(v)

        mm = "; ".join(
            f"{m.family} ({m.scope}) "
            + ",".join(f"m{a}n{b}k{c}" for a, b, c in m.shapes)
            + " "
            + ",".join(f"{i}->{o}" for i, o in m.dtypes)
            for m in self.matrix_instructions
        )
        return [
            ("target", f"{self.kind}/{self.arch}"),
            ("execution model", self.execution_model),
            ("warp size", str(self.warp_size)),
            ("max threads per block", str(self.max_threads_per_block)),
            ("shared memory (static)", fmt_size(self.shared_memory_static)),
            ("shared memory (opt-in)", fmt_size(self.shared_memory_optin)),
            ("registers per block", fmt_size(self.registers_per_block)),
            ("processors", "unknown" if self.processor_count is None else str(self.processor_count)),
            ("L2 cache", fmt_size(self.l2_size)),
            ("vector width", f"{self.vector_bytes} bytes, at most {self.max_vector_lanes} lanes"),
            ("matrix instructions", mm or "none"),
            ("copy engines", ", ".join(self.copy_engines) or "none"),
            ("barriers", ", ".join(self.barriers) or "none"),
            ("dtypes", ", ".join(self.dtypes)),
            ("atomics", ", ".join(self.atomics) or "none"),
            ("features", ", ".join(self.features) or "none"),
            ("thread group size (T.ws)", "none" if self.thread_group_size is None else str(self.thread_group_size)),
            ("refined from device", "yes" if self.refined_from_device else "no"),
            ("schema version", str(self.schema_version)),
        ]
