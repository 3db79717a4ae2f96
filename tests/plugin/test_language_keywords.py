"""Keywords backends add to core calls (`tilelang_language_keywords`): merged by the manager,
checked by `T.copy` / `T.Kernel`, recorded on the IR (`TileOp.hints`, `kernel_hints`), refused
with the call's name when no installed backend offers them."""
from __future__ import annotations

import types

import pytest

from tilelang_core.ir import TileOp, collect_tile_ops
from tilelang_core.plugin import Capabilities, PluginManager, TargetKind, hookimpl
from tilelang_core.plugin.manager import BackendInfo
from tilelang_core.transform import kernel_hints


def _keyword_backend(name: str, keywords) -> types.ModuleType:
    mod = types.ModuleType(f"fake_keywords_{name}")

    @hookimpl
    def tilelang_register_targets(registry):
        registry.add_kind(TargetKind(name, {"a1": Capabilities(kind=name, arch="a1")}, "a1"))

    @hookimpl
    def tilelang_language_keywords():
        if isinstance(keywords, Exception):
            raise keywords
        return keywords

    mod.tilelang_register_targets = tilelang_register_targets
    mod.tilelang_language_keywords = tilelang_language_keywords
    return mod


def _manager(backends: dict) -> PluginManager:
    manager = PluginManager(entry_points=[])
    for name, keywords in backends.items():
        manager.backends[name] = info = BackendInfo(name, f"tilelang-{name}", "1.0", name)
        manager.register_plugin(info, _keyword_backend(name, keywords))
    return manager


def _flag(value):
    if not isinstance(value, bool):
        raise TypeError("must be True or False")
    return value


def test_manager_merges_keywords_and_withholds_conflicts():
    manager = _manager({
        "gpu_a": {"copy": {"vendor_async": _flag, "shared_kw": _flag}, "Kernel": {"vendor_threads": int}},
        "gpu_b": {"copy": {"shared_kw": _flag}},
        "gpu_c": RuntimeError("no table"),
    })
    offered, withheld = manager.language_keywords()
    assert offered["copy"] == {"vendor_async": (_flag, "gpu_a")} and offered["Kernel"] == {"vendor_threads": (int, "gpu_a")}
    assert withheld["copy.shared_kw"] == ("T.copy(shared_kw=...) is offered by backends 'gpu_a' and 'gpu_b'; "
                                          "uninstall one of the two")
    assert "backend 'gpu_c': tilelang_language_keywords failed: RuntimeError: no table" in withheld[""]


@pytest.fixture
def vendor(monkeypatch):
    import tilelang_core.plugin as plugin_package

    manager = _manager({"gpu_a": {"copy": {"vendor_async": _flag}, "Kernel": {"vendor_threads": int}}})
    monkeypatch.setattr(plugin_package, "get_plugin_manager", lambda: manager)
    return manager


def _kernel(copy_kw: dict, kernel_kw: dict):
    from tilelang_core import language as T

    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):  # noqa: N803
        with T.Kernel(1, threads=64, **kernel_kw) as bx:
            s = T.alloc_shared((64,), "float32")
            T.copy(A, s, **copy_kw)
            T.copy(s, B)

    return main


def test_keywords_are_recorded_on_the_ir(vendor):
    func = _kernel({"vendor_async": True, "disable_tma": True}, {"vendor_threads": 32})
    copies = [op for op in collect_tile_ops(func) if op.name == "copy"]
    assert [op.hints for op in copies] == [{"disable_tma": True, "vendor_async": True}, {}]
    assert kernel_hints(func) == {"vendor_threads": 32}
    plain = _kernel({}, {})
    assert all(op.hints == {} for op in collect_tile_ops(plain)) and kernel_hints(plain) == {}
    assert len(copies[1].args) == 2  # no hints, no extra argument: other backends see the old form


def test_unknown_keywords_and_bad_values_are_refused(vendor):
    with pytest.raises(Exception, match=r"T\.copy\(\) got an unexpected keyword argument 'other_async'.*vendor_async"):
        _kernel({"other_async": True}, {})
    with pytest.raises(Exception, match=r"T\.copy\(vendor_async=1\), a keyword of backend 'gpu_a': must be True or False"):
        _kernel({"vendor_async": 1}, {})
    with pytest.raises(Exception, match=r"T\.Kernel\(\) got an unexpected keyword argument 'producers'"):
        _kernel({}, {"producers": 1})


def test_hints_survive_printing_and_parsing(vendor):
    """The printed kernel parses back with its hints (the `tl` script namespace's copy takes them)."""
    from tvm import ir

    func = _kernel({"vendor_async": True}, {"vendor_threads": 32})
    text = func.script()
    assert "vendor_async" in text and "tl.kernel_hints" in text
    from tvm.script import from_source

    parsed = from_source(text)
    parsed = parsed if not isinstance(parsed, ir.IRModule) else parsed[parsed.get_global_vars()[0]]
    assert [op.hints for op in collect_tile_ops(parsed) if op.name == "copy"][0] == {"vendor_async": True}
    assert kernel_hints(parsed) == {"vendor_threads": 32}


def test_tileop_hints_of_other_ops_are_empty(vendor):
    func = _kernel({}, {})
    assert all(TileOp.from_stmt(op.stmt).hints == {} for op in collect_tile_ops(func))
