"""tilelang-conformance: the shared conformance suite of tilelang-core backends.

    tilelang conformance --backend cpu
    tilelang conformance --target cuda/sm_90a --level compile --markdown docs/conformance/

Cases are kernels in the public language with NumPy references, each tagged with the
capabilities it needs (`case.py`, `cases/`). A case on a target is PASS, FAIL, N/A (the
target does not declare what it needs), XFAIL or XPASS (the backend's strict expectations),
each with its evidence level: run, compile or codegen (`result.py`).

Importing this package is cheap: the case modules (and TVM) load only when cases are listed
or evaluated, never on the `--from` path.
"""
from __future__ import annotations

__version__ = "0.2.0"

from .case import Arg, Case, NotApplicable, Raises, Scalar, Spec, case, registry, select
from .result import FAIL, LEVELS, NA, OUTCOMES, PASS, XFAIL, XPASS, Result

__all__ = [
    "__version__",
    "Arg",
    "Case",
    "NotApplicable",
    "Raises",
    "Scalar",
    "Spec",
    "case",
    "registry",
    "select",
    "FAIL",
    "LEVELS",
    "NA",
    "OUTCOMES",
    "PASS",
    "XFAIL",
    "XPASS",
    "Result",
]
