"""`tilelang.engine.param`: `KernelParam`, one parameter of a compiled kernel, and
`CompiledArtifact`, what `lower` returns.

`KernelParam` is the core's `ParamSpec` (name, "tensor"/"scalar", dtype, shape with symbolic
dimensions by name) with the predicates TileLang's programs ask of a parameter.
"""
from __future__ import annotations

from dataclasses import dataclass

from ....jit.artifact import CompiledArtifact
from ....runtime.base import ParamSpec

__all__ = ["CompiledArtifact", "KernelParam"]


@dataclass(frozen=True)
class KernelParam(ParamSpec):
    """A kernel parameter, with TileLang's questions about it."""

    @classmethod
    def from_spec(cls, spec: ParamSpec) -> "KernelParam":
        return cls(spec.name, spec.kind, spec.dtype, tuple(spec.shape), spec.strides)

    def is_scalar(self) -> bool:
        """A scalar argument (a Python number at the call)."""
        return self.kind == "scalar"

    def is_float8(self) -> bool:
        """Whether the element type is one of the 8-bit floats."""
        return str(self.dtype).startswith("float8")

    def is_boolean(self) -> bool:
        return str(self.dtype) == "bool"

    def is_dynamic(self) -> bool:
        """Whether a dimension is symbolic (bound from the arguments at call time)."""
        return any(isinstance(dim, str) for dim in self.shape)

    def torch_dtype(self):
        """The torch dtype of this parameter's elements (needs torch)."""
        from ....utils.tensor import map_torch_type

        return map_torch_type(self.dtype)
