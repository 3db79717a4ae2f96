"""Every environment variable the project reads, read here and nowhere else.

The module is also TileLang's `tilelang.env` object (`from tilelang.env import env` gives this
module; `tilelang.env.TILELANG_CACHE_DIR` reads it): the TileLang variables below are
properties of the module that read the environment on each access, and setting one
(`env.TILELANG_CACHE_DIR = path`, or pytest's `monkeypatch.setattr`) sets the variable for
this process, so the core's own readers (`cache_dir()`) see it too.
"""
from __future__ import annotations

import os
import sys
import types
from pathlib import Path

__all__ = ["enabled_backends", "default_target", "cache_dir", "host_c_compiler", "debug", "kernel_memo_size",
           "compat_alias", "COMPAT_ALIAS_VAR", "print_on_compilation", "env", "CacheState", "get_default_target",
           "is_cache_enabled", "get_pass_diff_mode",
           "TILELANG_CACHE_DIR", "TILELANG_TMP_DIR", "TILELANG_PRINT_ON_COMPILATION"]

COMPAT_ALIAS_VAR = "TILELANG_CORE_ALIAS"


__all__ = ["enabled_backends", "default_target", "cache_dir", "cache_secret_file", "host_c_compiler", "debug", "kernel_memo_size"]


def enabled_backends() -> list[str] | None:
    """`TILELANG_BACKENDS=name1,name2`: load only these entry points (None: load all)."""
    raw = os.environ.get("TILELANG_BACKENDS", "").strip()
    if not raw:
        return None
    return [name.strip() for name in raw.split(",") if name.strip()]


def default_target() -> str:
    """`TILELANG_TARGET`: the target used when a call names none (default: auto)."""
    return os.environ.get("TILELANG_TARGET", "").strip() or "auto"


def cache_dir() -> Path:
    """`TILELANG_CACHE_DIR`, else the user's cache directory."""
    raw = os.environ.get("TILELANG_CACHE_DIR", "").strip()
    if raw:
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "tilelang-core"


def cache_secret_file() -> Path:
    """`TILELANG_CACHE_SECRET_FILE`, else `cache-secret` in the user's config directory
    (`XDG_CONFIG_HOME`, else ~/.config, then tilelang-core/): the per-user key that
    authenticates disk cache entries. Kept outside the cache so a writer of a shared cache
    directory cannot read it (docs/security.md)."""
    raw = os.environ.get("TILELANG_CACHE_SECRET_FILE", "").strip()
    if raw:
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".config"
    return root / "tilelang-core" / "cache-secret"


def host_c_compiler() -> str | None:
    """`TILELANG_CC` or `CC`: the host C compiler (for backends that build host code) (None: search the PATH)."""
    return os.environ.get("TILELANG_CC") or os.environ.get("CC") or None


def debug() -> bool:
    """`TILELANG_DEBUG=1`: keep intermediate files and print pass dumps."""
    return os.environ.get("TILELANG_DEBUG", "") not in ("", "0")


def kernel_memo_size() -> int:
    """`TILELANG_KERNEL_MEMO_SIZE`: how many compiled kernels `compile` keeps in memory for
    repeated calls (least recently used dropped first; default 256, 0 keeps none)."""
    raw = os.environ.get("TILELANG_KERNEL_MEMO_SIZE", "").strip()
    if not raw:
        return 256
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"TILELANG_KERNEL_MEMO_SIZE={raw!r} is not an integer; set it to how many kernels "
                         "to keep (e.g. 256), or 0 to keep none") from None
    if value < 0:
        raise ValueError(f"TILELANG_KERNEL_MEMO_SIZE={value} is negative; set it to 0 or more")
    return value


def perf_regression_only() -> str:
    """`TL_PERF_REGRESSION_ONLY`: the case-name patterns `tilelang.testing.regression()` runs
    (TileLang's variable; comma-separated or a JSON list; empty: every case)."""
    return os.environ.get("TL_PERF_REGRESSION_ONLY", "").strip()


def perf_regression_format() -> str:
    """`TL_PERF_REGRESSION_FORMAT`: "text" (default) or "json", how `regression()` prints."""
    return os.environ.get("TL_PERF_REGRESSION_FORMAT", "text").strip().lower()


def compat_alias() -> bool:
    """`TILELANG_CORE_ALIAS=1`: resolve `import tilelang` to tilelang-core in this process and
    the ones it starts (`tilelang run` sets it; see tilelang_core.compat.activate)."""
    return os.environ.get(COMPAT_ALIAS_VAR, "").strip() not in ("", "0")


_OFF = ("", "0", "false", "no", "off")


def get_pass_diff_mode() -> str | None:
    """`TILELANG_PASS_DIFF`: report IR before/after every pass (tilelang_core.utils.pass_diff_hook):
    "html", "both", or "terminal" for any other value that is not off ("", 0, false, no, off:
    None)."""
    raw = os.environ.get("TILELANG_PASS_DIFF", "").strip().lower()
    if raw in _OFF:
        return None
    return raw if raw in ("html", "both") else "terminal"


def print_on_compilation() -> bool:
    """`TILELANG_PRINT_ON_COMPILATION=1`: `compile` reports each kernel it builds or finds
    cached, as `verbose=True` does."""
    return os.environ.get("TILELANG_PRINT_ON_COMPILATION", "") not in ("", "0")


def get_default_target() -> str:
    """TileLang's name for `default_target()`."""
    return default_target()


def is_cache_enabled() -> bool:
    """Whether the kernel cache is on in this process (`tilelang.disable_cache()` turns it off)."""
    from .compat.cache_switch import is_cache_enabled as enabled

    return enabled()


class CacheState:
    """TileLang's process-wide cache switch as a class: `CacheState.disable()`, `.enable()`,
    `.is_enabled()` (the same switch as `tilelang.disable_cache()`)."""

    @staticmethod
    def enable() -> None:
        from .compat.cache_switch import enable_cache

        enable_cache()

    @staticmethod
    def disable() -> None:
        from .compat.cache_switch import disable_cache

        disable_cache()

    @staticmethod
    def is_enabled() -> bool:
        return is_cache_enabled()


def _variable(name: str, default) -> property:
    """A module property for TileLang's variable `name`: the environment's value, else
    `default()`; assigning sets the variable in this process (None unsets it)."""

    def get(_module) -> str:
        raw = os.environ.get(name, "")
        return raw if raw else default()

    def set_(_module, value) -> None:
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)

    return property(get, set_, doc=f"`{name}` (read on each access; assigning sets it)")


class _EnvModule(types.ModuleType):
    # TILELANG_CACHE_DIR: the kernel cache; TILELANG_TMP_DIR: TileLang's folder for scratch
    # files, under the cache unless set (tilelang-core's compile writes none);
    # TILELANG_PRINT_ON_COMPILATION: see print_on_compilation()
    TILELANG_CACHE_DIR = _variable("TILELANG_CACHE_DIR", lambda: str(cache_dir()))
    TILELANG_TMP_DIR = _variable("TILELANG_TMP_DIR", lambda: os.path.join(str(cache_dir()), "tmp"))
    TILELANG_PRINT_ON_COMPILATION = _variable("TILELANG_PRINT_ON_COMPILATION", lambda: "0")
    # TILELANG_PASS_DIFF_OUTPUT: where the pass-diff hook writes its HTML reports
    TILELANG_PASS_DIFF_OUTPUT = _variable("TILELANG_PASS_DIFF_OUTPUT", lambda: "tmp/pass_diff_output")


sys.modules[__name__].__class__ = _EnvModule
env = sys.modules[__name__]
