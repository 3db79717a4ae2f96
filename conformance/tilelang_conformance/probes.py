"""Claim probes: every capability a target declares is backed by a case that fails when the
capability does not work — a dtype by its elementwise kernel, an atomic by its scatter
kernel, "printf"/"device_assert" by the debug cases, a matrix instruction's dtype pair by a
GEMM on those dtypes, a matrix family by the GEMMs that name it (or else by those of its
pairs). Declared dtypes and atomics outside the static list get a generated probe; a
capability no case can probe is listed as such, never silently passed."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from .case import Case

__all__ = ["declared_claims", "cases_for", "Claim", "claims_for"]

_ATOMIC = re.compile(r"^atomic_(add|max|min)\.(\w+)$")


def declared_claims(caps: Any) -> list[str]:
    """The capability names a table declares, as the suite's claims: dtypes, atomics,
    features, copy engines, barriers, matrix families and `matrix:<in>-><acc>` pairs."""
    claims = list(caps.dtypes) + list(caps.atomics) + list(caps.features)
    claims += list(caps.copy_engines) + list(caps.barriers)
    for family in caps.matrix_instructions:
        claims.append(family.family)
        claims += [f"matrix:{a}->{b}" for a, b in family.dtypes]
    return list(dict.fromkeys(claims))


def _generated(caps: Any, covered: set[str]) -> list[Case]:
    from .cases.atomic import atomic_case
    from .cases.elementwise import dtype_case
    from .data import numpy_dtype

    found = []
    for dtype in caps.dtypes:
        if dtype not in covered and numpy_dtype(dtype) is not None:
            found.append(dtype_case(dtype))
    for atomic in caps.atomics:
        if atomic not in covered and _ATOMIC.match(atomic):
            found.append(atomic_case(atomic))
    return found


def cases_for(target: Any, cases: Iterable[Case]) -> list[Case]:
    """The static cases plus generated probes for what `target` declares beyond them."""
    items = list(cases)
    covered = {claim for c in items for claim in c.claims}
    return items + _generated(target.capabilities, covered)


@dataclass(frozen=True)
class Claim:
    """A declared capability and the cases that probe it (empty: not probed)."""

    capability: str
    cases: tuple[str, ...]


def claims_for(caps: Any, cases: Iterable[Case]) -> list[Claim]:
    """Each declared capability with its probing cases."""
    by_claim: dict[str, list[str]] = {}
    claims_of: dict[str, tuple[str, ...]] = {}
    for c in cases:
        claims_of[c.name] = c.claims
        for claim in c.claims:
            by_claim.setdefault(claim, []).append(c.name)
    # a matrix family that cases name is probed by those cases (a lowering that takes only some
    # GEMMs of a dtype pair, as wgmma takes only K-major tf32/fp8/s8 operands); any other by
    # the GEMMs of its dtype pairs that name no other family of the target
    families = [f.family for f in caps.matrix_instructions]
    for family in caps.matrix_instructions:
        if by_claim.get(family.family):
            by_claim[family.family] = sorted(set(by_claim[family.family]))
            continue
        others = set(families) - {family.family}
        pairs = [f"matrix:{a}->{b}" for a, b in family.dtypes]
        by_claim[family.family] = sorted({n for p in pairs for n in by_claim.get(p, [])
                                          if not others & set(claims_of[n])})
    return [Claim(name, tuple(by_claim.get(name, ()))) for name in declared_claims(caps)]
