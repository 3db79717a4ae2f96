"""TileLang's pass-config keys inside TVM's `PassContext` (`with tvm.transform.PassContext(
config={"tl.Simplify": {...}, "tl.disable_tma_lower": True})`).

TileLang registers its keys (`PassConfigKey`) with its TVM fork, so a program may set them on
a `PassContext` and TileLang's passes read them there. apache-tvm 0.27 refuses a key it has not
registered, and a key cannot be registered from Python. `accept_tilelang_keys()` (run by the
aliasing, `tilelang_core.compat`) teaches `PassContext` to take them:

- a TileLang key (one `PassConfigKey` names) is kept on the Python side, and while the context
  is entered `ambient_configs()` returns it; TVM's own keys go to TVM as before, and an unknown
  key is still TVM's error listing the valid ones;
- `tl.Simplify`'s fields that apache-tvm's statement simplifier also has
  (`transitively_prove_inequalities`, `convert_boolean_to_and_of_ors`,
  `apply_constraints_to_boolean_branches`) are also given to TVM as `tirx.StmtSimplify`, the
  config its simplifier reads; the others (`enable_simplify_let_inline`, ...) are read by
  `tilelang_core.transform.Simplify`.

`compile` merges `ambient_configs()` under its own `pass_configs` (those win), as TileLang's
lowering reads the ambient context.
"""
from __future__ import annotations

from typing import Any

__all__ = ["accept_tilelang_keys", "ambient_configs", "TVM_SIMPLIFY_FIELDS"]

SIMPLIFY_KEY = "tl.Simplify"
TVM_SIMPLIFY_KEY = "tirx.StmtSimplify"
# the fields of TileLang's `tl.Simplify` that apache-tvm 0.27's `StmtSimplifyConfig` also has
TVM_SIMPLIFY_FIELDS = ("transitively_prove_inequalities", "convert_boolean_to_and_of_ors",
                       "apply_constraints_to_boolean_branches")

# id(PassContext) -> its TileLang keys (set at construction; an id reused by a later context is
# overwritten by that context's construction)
_KEPT: dict[int, dict[str, Any]] = {}
# the TileLang keys of the contexts entered, innermost last
_STACK: list[dict[str, Any]] = []


def ambient_configs() -> dict[str, Any]:
    """The TileLang keys of the entered `PassContext`s, inner ones over outer ones ({} when
    none is entered or `accept_tilelang_keys` has not run)."""
    merged: dict[str, Any] = {}
    for configs in _STACK:
        merged.update(configs)
    return merged


def _tilelang_keys() -> set[str]:
    from ..jit.options import PassConfigKey

    return {str(getattr(PassConfigKey, name)) for name in vars(PassConfigKey) if name.isupper()}


def split_config(config: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """`config` (a PassContext's) as (what TVM takes, TileLang's keys). Keys TVM registered
    stay TVM's even when TileLang names them too; `tl.Simplify` is both."""
    if not config:
        return config, {}
    from tvm.ir.transform import PassContext

    registered = set(PassContext.list_configs())
    ours = _tilelang_keys() - registered
    tvm_part = {k: v for k, v in dict(config).items() if k not in ours}
    kept = {k: v for k, v in dict(config).items() if k in ours}
    simplify = kept.get(SIMPLIFY_KEY)
    if simplify is not None:
        if not isinstance(simplify, dict):
            raise TypeError(f"PassContext config {SIMPLIFY_KEY!r}: a dict of simplifier options, "
                            f"got {type(simplify).__name__}")
        shared = {k: v for k, v in simplify.items() if k in TVM_SIMPLIFY_FIELDS}
        if shared and TVM_SIMPLIFY_KEY in registered:
            tvm_part[TVM_SIMPLIFY_KEY] = {**dict(tvm_part.get(TVM_SIMPLIFY_KEY) or {}), **shared}
    return tvm_part or None, kept


def accept_tilelang_keys() -> None:
    """Make `tvm.transform.PassContext` take TileLang's keys (see the module doc). Idempotent."""
    from tvm.ir.transform import PassContext

    if getattr(PassContext, "_tilelang_keys_accepted", False):
        return
    tvm_init, tvm_enter, tvm_exit = PassContext.__init__, PassContext.__enter__, PassContext.__exit__

    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None, config=None):
        tvm_config, kept = split_config(config)
        tvm_init(self, opt_level, required_pass, disabled_pass, instruments, tvm_config)
        if kept:
            _KEPT[id(self)] = kept
        else:
            _KEPT.pop(id(self), None)

    def __enter__(self):
        result = tvm_enter(self)
        _STACK.append(_KEPT.get(id(self), {}))
        return result

    def __exit__(self, ptype, value, trace):
        if _STACK:
            _STACK.pop()
        return tvm_exit(self, ptype, value, trace)

    __init__.__doc__ = tvm_init.__doc__
    PassContext.__init__ = __init__
    PassContext.__enter__ = __enter__
    PassContext.__exit__ = __exit__
    PassContext._tilelang_keys_accepted = True
