"""The hookspecs: documented, dispatched only to the owning plugin, first-result where stated.

Every hook in `tilelang_core.plugin.hookspecs` has a `test_hook_<name>` here; a meta-test
checks that, so a new hook cannot land untested.
"""
from __future__ import annotations

import inspect
import sys
import types

import pytest

from tilelang_core.plugin import Capabilities, Detection, PluginManager, TargetKind, hookimpl
from tilelang_core.plugin import hookspecs
from tilelang_core.plugin.manager import BackendInfo
from tilelang_core.plugin.target import TargetError


def _hook_names() -> list[str]:
    return [n for n, f in vars(hookspecs).items() if n.startswith("tilelang_") and callable(f)]


def _fake_backend(kind: str, calls: list) -> types.ModuleType:
    """A backend module declaring `kind` and answering every hook with its own name."""
    mod = types.ModuleType(f"fake_{kind}")
    caps = Capabilities(kind=kind, arch="a1", dtypes=("float32",))

    @hookimpl
    def tilelang_register_targets(registry):
        registry.add_kind(TargetKind(kind, {"a1": caps}, "a1"))

    @hookimpl
    def tilelang_detect_targets():
        return [Detection(kind, "a1", device=(kind == "fake_gpu"), reason="fake", priority=5)]

    @hookimpl
    def tilelang_pipeline(target, pipeline):
        calls.append(("pipeline", kind, str(target)))
        pipeline.append(kind)

    @hookimpl
    def tilelang_lower_tile_op(target, op, ctx):
        calls.append(("lower", kind))
        return f"{kind}-lowered-{op}" if op != "skip" else None

    @hookimpl
    def tilelang_infer_layout(op):  # takes fewer arguments than the spec: allowed
        calls.append(("layout", kind))
        return {op: f"{kind}-layout"}

    @hookimpl
    def tilelang_codegen(target, module, options):
        return f"{kind}-source-of-{module}"

    @hookimpl
    def tilelang_check_source(target, source):
        if kind == "fake_cpu":
            return None  # no check of its own
        if "bad" in source:
            raise ValueError(f"{kind} check: {source} is bad")
        return f"{kind}-checked"

    @hookimpl
    def tilelang_compile(target, source, options):
        return f"{kind}:{source}".encode()

    @hookimpl
    def tilelang_runtime(target):
        return f"{kind}-runtime"

    @hookimpl
    def tilelang_cache_key(target, options):
        return f"{kind}-toolchain-1.0"

    @hookimpl
    def tilelang_conformance_expectations(target):
        return {"gemm_fp8": f"{kind} has no fp8"}

    @hookimpl
    def tilelang_op_config(target, op, problem, config):
        calls.append(("op_config", kind, op))
        return {"block_M": 1} if op == "softmax" else None

    for name, value in list(locals().items()):
        if name.startswith("tilelang_"):
            setattr(mod, name, value)
    return mod


@pytest.fixture
def two_backends():
    calls: list = []
    manager = PluginManager(entry_points=[])
    for kind in ("fake_gpu", "fake_cpu"):
        manager.backends[kind] = info = BackendInfo(kind, f"tilelang-{kind}", "1.0", f"fake_{kind}")
        manager.register_plugin(info, _fake_backend(kind, calls))
    return manager, calls


def test_every_hook_is_documented_and_tested():
    names = _hook_names()
    assert len(names) >= 10
    this_module = sys.modules[__name__]
    for name in names:
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert ":returns:" in doc, f"{name}: docstring lacks :returns:"
        assert "first non-None result wins" in doc or "All implementations are called" in doc \
            or "all results" in doc.lower(), f"{name}: docstring does not say how results combine"
        params = [p for p in inspect.signature(getattr(hookspecs, name)).parameters]
        for p in params:
            assert f":param {p}:" in doc, f"{name}: parameter {p} undocumented"
        assert hasattr(this_module, f"test_hook_{name}"), f"no test for hook {name}"


def test_hook_tilelang_register_targets(two_backends):
    manager, _ = two_backends
    assert manager.backends["fake_gpu"].kinds == ["fake_gpu"]
    assert manager.registry.owner_names["fake_cpu"] == "fake_cpu"
    assert str(manager.parse_target("fake_gpu")) == "fake_gpu/a1"


def test_register_targets_duplicate_kind_marks_second_broken(two_backends):
    manager, calls = two_backends
    info = BackendInfo("dup", "tilelang-dup", "1.0", "dup")
    manager.backends["dup"] = info
    manager.register_plugin(info, _fake_backend("fake_gpu", calls))
    assert info.broken and "declared twice" in info.error
    assert manager.registry.owner_names["fake_gpu"] == "fake_gpu"


def test_hook_tilelang_detect_targets(two_backends):
    manager, _ = two_backends
    detections = manager.detections()
    assert {d.kind for d in detections} == {"fake_gpu", "fake_cpu"}
    assert manager.best_detected_target().kind == "fake_gpu"


def test_hook_tilelang_pipeline(two_backends):
    manager, calls = two_backends
    target = manager.parse_target("fake_cpu/a1")
    pipeline: list = []
    manager.hook_for(target, "tilelang_pipeline")(target=target, pipeline=pipeline)
    assert pipeline == ["fake_cpu"]  # only the owner was called
    assert calls == [("pipeline", "fake_cpu", "fake_cpu/a1")]


def test_hook_tilelang_lower_tile_op(two_backends):
    manager, calls = two_backends
    target = manager.parse_target("fake_gpu")
    hook = manager.hook_for(target, "tilelang_lower_tile_op")
    assert hook(target=target, op="copy", ctx=None) == "fake_gpu-lowered-copy"
    assert hook(target=target, op="skip", ctx=None) is None  # None: take the portable lowering
    assert {c[1] for c in calls} == {"fake_gpu"}


def test_hook_tilelang_infer_layout(two_backends):
    manager, _ = two_backends
    target = manager.parse_target("fake_cpu")
    result = manager.hook_for(target, "tilelang_infer_layout")(target=target, op="C", ctx=None)
    assert result == {"C": "fake_cpu-layout"}


def test_hook_tilelang_codegen(two_backends):
    manager, _ = two_backends
    from tilelang_core.plugin.facade import TargetHooks

    target = manager.parse_target("fake_gpu")
    hooks = TargetHooks.__new__(TargetHooks)
    hooks.target, hooks._manager = target, manager
    assert hooks.codegen("mod", None) == "fake_gpu-source-of-mod"


def test_hook_tilelang_check_source(two_backends):
    manager, _ = two_backends
    from tilelang_core.plugin.facade import TargetHooks

    def hooks(kind):
        h = TargetHooks.__new__(TargetHooks)
        h.target, h._manager = manager.parse_target(kind), manager
        return h

    assert hooks("fake_gpu").check_source("good") == "fake_gpu-checked"
    assert hooks("fake_cpu").check_source("bad") is None  # only the owner is asked
    with pytest.raises(ValueError, match="fake_gpu check"):
        hooks("fake_gpu").check_source("bad")


def test_hook_tilelang_compile(two_backends):
    manager, _ = two_backends
    target = manager.parse_target("fake_cpu")
    assert manager.hook_for(target, "tilelang_compile")(target=target, source="s", options=None) == b"fake_cpu:s"


def test_hook_tilelang_check_source_through_the_manager(two_backends):
    """Dispatched to the owning backend only; its failure propagates to the caller."""
    manager, _ = two_backends
    target = manager.parse_target("fake_gpu")
    assert manager.hook_for(target, "tilelang_check_source")(target=target, source="src") == "fake_gpu-checked"
    with pytest.raises(ValueError, match="fake_gpu check: bad is bad"):
        manager.hook_for(target, "tilelang_check_source")(target=target, source="bad")


def test_hook_tilelang_runtime(two_backends):
    manager, _ = two_backends
    target = manager.parse_target("fake_gpu")
    assert manager.hook_for(target, "tilelang_runtime")(target=target) == "fake_gpu-runtime"


def test_hook_tilelang_cache_key(two_backends):
    manager, _ = two_backends
    target = manager.parse_target("fake_gpu")
    assert manager.hook_for(target, "tilelang_cache_key")(target=target, options=None) == ["fake_gpu-toolchain-1.0"]


def test_hook_tilelang_conformance_expectations(two_backends):
    manager, _ = two_backends
    target = manager.parse_target("fake_cpu")
    result = manager.hook_for(target, "tilelang_conformance_expectations")(target=target)
    assert result == [{"gemm_fp8": "fake_cpu has no fp8"}]


def test_unknown_kind_has_no_hooks(two_backends):
    manager, _ = two_backends
    with pytest.raises(TargetError):
        manager.hook_for("nope", "tilelang_codegen")


def test_register_module_by_import_path(monkeypatch):
    """A backend on PYTHONPATH with no installed entry point registers by its module path."""
    manager = PluginManager(entry_points=[])
    monkeypatch.setitem(sys.modules, "fake_path_backend", _fake_backend("fake_path", []))
    info = manager.register_module("fake_path", "fake_path_backend")
    assert not info.broken and info.kinds == ["fake_path"]
    assert str(manager.parse_target("fake_path")) == "fake_path/a1"
    with pytest.raises(RuntimeError, match="failed to register.*No module named"):
        manager.register_module("missing", "no_such_backend_module.plugin")
    assert manager.backends["missing"].broken


def _compat_backend(name: str, claims) -> types.ModuleType:
    """A backend declaring kind `name` whose `tilelang_compat_modules` returns `claims`
    (or raises it, when it is an exception)."""
    mod = types.ModuleType(f"fake_compat_{name}")

    @hookimpl
    def tilelang_register_targets(registry):
        registry.add_kind(TargetKind(name, {"a1": Capabilities(kind=name, arch="a1")}, "a1"))

    @hookimpl
    def tilelang_compat_modules():
        if isinstance(claims, Exception):
            raise claims
        return claims

    mod.tilelang_register_targets = tilelang_register_targets
    mod.tilelang_compat_modules = tilelang_compat_modules
    return mod


def test_hook_tilelang_compat_modules():
    manager = PluginManager(entry_points=[])
    backends = {
        "gpu_a": {"tilelang.vendor_a": None, "tilelang.carver.arch.driver": "json", "tilelang.shared": "os"},
        "gpu_b": {"tilelang.shared": "sys", "tilelang.bad": 3},
        "gpu_c": RuntimeError("no driver library"),
    }
    for name, claims in backends.items():
        manager.backends[name] = info = BackendInfo(name, f"tilelang-{name}", "1.0", name)
        manager.register_plugin(info, _compat_backend(name, claims))
    claims, problems = manager.compat_modules()
    assert claims["tilelang.vendor_a"].module is None and claims["tilelang.vendor_a"].backend == "gpu_a"
    assert claims["tilelang.carver.arch.driver"].module == "json"
    assert "tilelang.shared" not in claims  # claimed twice: given to neither
    text = "\n".join(problems)
    assert "tilelang.shared is claimed by backends 'gpu_a' and 'gpu_b'" in text
    assert "'gpu_b': tilelang_compat_modules entry 'tilelang.bad': 3 is not a module path" in text
    assert "'gpu_c': tilelang_compat_modules failed: RuntimeError: no driver library" in text


def test_register_targets_spelling_clash_marks_second_broken():
    manager = PluginManager(entry_points=[])

    def backend(kind, spelling):
        mod = types.ModuleType(f"fake_spell_{kind}")

        @hookimpl
        def tilelang_register_targets(registry):
            registry.add_kind(TargetKind(kind, {"a1": Capabilities(kind=kind, arch="a1")}, "a1"))
            registry.add_spelling(spelling, kind)

        mod.tilelang_register_targets = tilelang_register_targets
        return mod

    for kind in ("first", "second"):
        manager.backends[kind] = info = BackendInfo(kind, f"tilelang-{kind}", "1.0", kind)
        manager.register_plugin(info, backend(kind, "shared_name"))
    second = manager.backends["second"]
    assert second.broken and "spelling 'shared_name' is declared twice" in second.error
    # the broken backend's kind and spelling are gone; the first one's stay
    assert "second" not in manager.registry.kinds
    assert manager.registry.spellings["shared_name"].owner == "first"
    assert str(manager.parse_target("shared_name")) == "first/a1"


def _language_backend(name: str, names) -> types.ModuleType:
    """A backend declaring kind `name` whose `tilelang_language_names` returns `names` (or
    raises it, when it is an exception)."""
    mod = types.ModuleType(f"fake_language_{name}")

    @hookimpl
    def tilelang_register_targets(registry):
        registry.add_kind(TargetKind(name, {"a1": Capabilities(kind=name, arch="a1")}, "a1"))

    @hookimpl
    def tilelang_language_names():
        if isinstance(names, Exception):
            raise names
        return names

    mod.tilelang_register_targets = tilelang_register_targets
    mod.tilelang_language_names = tilelang_language_names
    return mod


def test_hook_tilelang_language_names():
    manager = PluginManager(entry_points=[])
    own, shared_a, shared_b = object(), object(), object()
    backends = {
        "gpu_a": {"vendor_mma": own, "shared_op": shared_a},
        "gpu_b": {"shared_op": shared_b},
        "gpu_c": RuntimeError("no table"),
    }
    for name, names in backends.items():
        manager.backends[name] = info = BackendInfo(name, f"tilelang-{name}", "1.0", name)
        manager.register_plugin(info, _language_backend(name, names))
    offered, withheld = manager.language_names()
    assert offered == {"vendor_mma": own}  # offered twice: given to neither
    assert withheld["shared_op"] == "T.shared_op is offered by backends 'gpu_a' and 'gpu_b'; uninstall one of the two"
    assert "backend 'gpu_c': tilelang_language_names failed: RuntimeError: no table" in withheld[""]


def test_hook_tilelang_language_keywords():
    """Keywords of core calls, merged over backends; a keyword two backends offer for one call
    is given to neither (the language's side: test_language_keywords.py)."""
    manager = PluginManager(entry_points=[])
    check = bool
    for name, keywords in {"gpu_a": {"copy": {"mine": check, "both": check}}, "gpu_b": {"copy": {"both": check}}}.items():
        mod = types.ModuleType(f"fake_keywords_{name}")
        mod.tilelang_language_keywords = hookimpl(lambda keywords=keywords: keywords)
        manager.backends[name] = info = BackendInfo(name, f"tilelang-{name}", "1.0", name)
        manager.register_plugin(info, mod)
    offered, withheld = manager.language_keywords()
    assert offered == {"copy": {"mine": (check, "gpu_a")}}
    assert "offered by backends 'gpu_a' and 'gpu_b'" in withheld["copy.both"]


def test_language_reads_backend_names(monkeypatch):
    """`T.<name>` falls back to the installed backends' names; the core's own names win."""
    import tilelang_core.plugin as plugin_package
    from tilelang_core import language as T

    manager = PluginManager(entry_points=[])
    marker = object()
    manager.backends["gpu_a"] = info = BackendInfo("gpu_a", "tilelang-gpu_a", "1.0", "gpu_a")
    manager.register_plugin(info, _language_backend("gpu_a", {"vendor_mma": marker, "copy": marker}))
    monkeypatch.setattr(plugin_package, "get_plugin_manager", lambda: manager)
    assert T.vendor_mma is marker
    assert T.copy is not marker
    with pytest.raises(AttributeError, match="T.vendor_mmaa is not part of the tilelang_core language"):
        T.vendor_mmaa  # noqa: B018


def test_hook_tilelang_op_config(two_backends):
    from tilelang_core.ops.registry import get, resolve_config

    manager, calls = two_backends
    target = manager.parse_target("fake_gpu/a1")
    softmax = get("softmax")
    config, source = resolve_config(softmax, target, softmax.example, manager=manager)
    assert config["block_M"] == 1 and source == "table[simt]+backend"
    assert ("op_config", "fake_gpu", "softmax") in calls
    assert not any(c[:2] == ("op_config", "fake_cpu") for c in calls)  # only the owner is asked
    gemm = get("gemm")
    config, source = resolve_config(gemm, target, gemm.example, manager=manager)
    assert source == "table[simt]" and config["block_M"] == 128  # None keeps the table's config
