"""TileLang's (and TVM's) target spellings, mapped by the backends that declare them.

The core only routes a spelling to the backend that declared it (`registry.add_spelling`);
what `"cuda -arch=sm_86"` means is the CUDA backend's answer.
"""
from __future__ import annotations

import types

import pytest

from tilelang_core.plugin import (
    BackendInfo,
    Capabilities,
    Detection,
    PluginManager,
    Target,
    TargetError,
    TargetKind,
    get_plugin_manager,
    hookimpl,
)
from tilelang_core.plugin.target import split_target_spec

HAS_CUDA_DEVICE = any(d.device for d in get_plugin_manager().detections_of("cuda"))


@pytest.mark.parametrize("spec,kind", [
    ("c", "cpu"),
    ("llvm", "cpu"),
    ("cpu", "cpu"),
    ({"kind": "c"}, "cpu"),
    ("cuda", "cuda"),
    ("nvidia", "cuda"),
    ("hip", "hip"),
    ("rocm", "hip"),
])
def test_bare_spellings_map_to_their_kind(spec, kind):
    target = get_plugin_manager().parse_target(spec)
    assert target.kind == kind
    assert target.arch in get_plugin_manager().registry.kinds[kind].archs


def test_host_spellings_are_the_host_cpu():
    manager = get_plugin_manager()
    assert manager.parse_target("c") == manager.parse_target("llvm") == manager.parse_target("cpu")


@pytest.mark.parametrize("spec,expected", [
    ("cuda -arch=sm_90", "cuda/sm_90a"),
    ("cuda -arch=sm_90a", "cuda/sm_90a"),
    ("cuda  -arch=sm_80 -max_num_threads=1024", "cuda/sm_80"),
    ("cuda -arch=sm_86", "cuda/sm_86"),
    ("cuda -arch=sm_90", "cuda/sm_90a"),  # TileLang builds sm_90a for compute capability 9.0
    ("cuda -arch=sm_72", "cuda/sm_70"),  # sm_70 code runs on compute capability 7.2
    ("cuda -arch=sm_89", "cuda/sm_89"),
    ({"kind": "cuda", "arch": "sm_80"}, "cuda/sm_80"),
    ({"kind": "nvidia", "arch": "sm_90"}, "cuda/sm_90a"),
    ('{"kind": "cuda", "arch": "sm_89", "keys": ["cuda", "gpu"]}', "cuda/sm_89"),
    ("nvidia/nvidia-a100", "cuda/sm_80"),  # a TVM tag
    ("cuda/sm_80", "cuda/sm_80"),  # our syntax stays ours
    ({"kind": "rocm", "mcpu": "gfx90a"}, "hip/gfx90a"),
    ("rocm -mcpu=gfx942:sramecc+:xnack-", "hip/gfx942"),
    ({"kind": "hip", "arch": "gfx90a"}, "hip/gfx90a"),
])
def test_spellings_with_an_arch(spec, expected):
    assert str(get_plugin_manager().parse_target(spec)) == expected


def test_tvm_target_objects():
    from tvm.target import Target as TVMTarget

    manager = get_plugin_manager()
    assert manager.parse_target(TVMTarget("c")).kind == "cpu"
    assert manager.parse_target(TVMTarget("llvm")).kind == "cpu"
    assert str(manager.parse_target(TVMTarget({"kind": "cuda", "arch": "sm_90a"}))) == "cuda/sm_90a"
    assert str(Target.parse(TVMTarget({"kind": "cuda", "arch": "sm_80"}))) == "cuda/sm_80"


def test_auto_inside_a_tvm_target_block_is_that_target():
    from tvm.target import Target as TVMTarget

    manager = get_plugin_manager()
    with TVMTarget({"kind": "cuda", "arch": "sm_80"}):
        assert str(manager.parse_target("auto")) == "cuda/sm_80"
        assert str(manager.parse_target(None)) == "cuda/sm_80"
        assert str(manager.parse_target("hip/gfx90a")) == "hip/gfx90a"  # a named target wins
    with TVMTarget("c"):
        assert manager.parse_target("auto").kind == "cpu"


def test_bare_cuda_is_the_gpu_at_hand_else_the_default_arch():
    target = get_plugin_manager().parse_target("cuda")
    if HAS_CUDA_DEVICE:
        (device,) = [d for d in get_plugin_manager().detections_of("cuda") if d.device]
        assert target.arch == device.arch and target.capabilities.refined_from_device
    else:
        assert target.arch == get_plugin_manager().registry.kinds["cuda"].default_arch


def test_unknown_spelling_lists_the_known_ones():
    with pytest.raises(TargetError) as err:
        get_plugin_manager().parse_target("nosuchchip")
    msg = str(err.value)
    assert "'nosuchchip'" in msg and "Valid kinds: cpu, cuda, hip" in msg
    for spelling in ("c, llvm (backend cpu)", "cuda, nvidia (backend cuda)", "hip, rocm (backend hip)"):
        assert spelling in msg


@pytest.mark.parametrize("spec,needle", [
    ({"kind": "cuda", "arch": "sm_53"}, "'sm_53' has no counterpart in tilelang-cuda"),
    ("cuda -arch=sm_61", "'sm_61' has no counterpart"),
    ("cuda -arch", "the 'arch' attribute needs a value"),
    ("rocm -mcpu=gfx906", "'gfx906' (attribute 'mcpu') has no counterpart in tilelang-hip"),
    ("nvidia/no-such-gpu", "TVM target tag 'nvidia/no-such-gpu' is not known"),
    ("cuda arch=sm_90", "'arch=sm_90' is not an attribute"),
    ("cpu -mcpu=skylake", "'cpu' takes no attributes here"),
    ({"arch": "sm_90"}, "needs a 'kind' string"),
    ('{"kind": ', "not valid JSON"),
    ("", "empty string"),
    (42, "got int: 42"),
])
def test_bad_spellings_say_what_is_wrong(spec, needle):
    with pytest.raises(TargetError) as err:
        get_plugin_manager().parse_target(spec)
    assert needle in str(err.value)


def test_split_target_spec_forms():
    assert split_target_spec("cuda -arch=sm_90 -fast") == ("cuda", {"arch": "sm_90", "fast": True},
                                                            "cuda -arch=sm_90 -fast")
    assert split_target_spec({"kind": "rocm", "mcpu": "gfx942"})[:2] == ("rocm", {"mcpu": "gfx942"})
    fake = types.SimpleNamespace(kind=types.SimpleNamespace(name="cuda"), attrs={"arch": "sm_80"})
    assert split_target_spec(fake)[:2] == ("cuda", {"arch": "sm_80"})


# -- the registry's rules, with fake backends -------------------------------------------------


def _backend(kind: str, spellings: dict, detect_arch: str | None = None) -> types.ModuleType:
    mod = types.ModuleType(f"fake_{kind}")
    archs = {a: Capabilities(kind=kind, arch=a) for a in ("a1", "a2")}

    @hookimpl
    def tilelang_register_targets(registry):
        registry.add_kind(TargetKind(kind, archs, "a1"))
        for name, meaning in spellings.items():
            registry.add_spelling(name, meaning)

    @hookimpl
    def tilelang_detect_targets():
        if detect_arch is None:
            return []
        return [Detection(kind, detect_arch, device=True, reason="fake device", priority=5)]

    mod.tilelang_register_targets = tilelang_register_targets
    mod.tilelang_detect_targets = tilelang_detect_targets
    return mod


def _manager(**backends) -> PluginManager:
    manager = PluginManager(entry_points=[])
    for name, module in backends.items():
        manager.backends[name] = info = BackendInfo(name, f"tilelang-{name}", "1.0", name)
        manager.register_plugin(info, module)
    return manager


def test_a_spelling_resolves_only_through_its_backend():
    def resolve(attrs):
        return "gpu/a2" if attrs.get("arch") == "new" else "gpu"

    manager = _manager(gpu=_backend("gpu", {"vendor": resolve}, detect_arch="a2"),
                       host=_backend("host", {"hostc": "host/a2"}))
    assert str(manager.parse_target("vendor -arch=new")) == "gpu/a2"
    # no arch: the device detected here (a2), not the default arch (a1)
    assert str(manager.parse_target("vendor")) == "gpu/a2"
    assert str(manager.parse_target("hostc")) == "host/a2"
    # our syntax for the kind is unchanged
    assert str(manager.parse_target("gpu")) == "gpu/a1"


def test_a_spelling_may_not_map_to_another_backends_kind():
    with pytest.raises(TargetError, match="kind 'gpu' is not declared by 'host'"):
        manager = _manager(gpu=_backend("gpu", {}))
        manager.registry._current_name = "host"
        manager.registry.add_spelling("x", "gpu")
    manager = _manager(gpu=_backend("gpu", {}), host=_backend("host", {"sneaky": lambda attrs: "gpu/a1"}))
    with pytest.raises(TargetError, match="resolved target 'sneaky' to 'gpu/a1', a kind it does not declare"):
        manager.parse_target("sneaky")


def test_a_resolver_that_returns_no_string_is_reported():
    manager = _manager(gpu=_backend("gpu", {"vendor": lambda attrs: 7}))
    with pytest.raises(TargetError, match="resolved target 'vendor' to 7, not a target string"):
        manager.parse_target("vendor")


def test_spelling_named_like_another_backends_kind_breaks_the_second():
    manager = _manager(gpu=_backend("gpu", {}), host=_backend("host", {"gpu": "host"}))
    assert manager.backends["host"].broken
    assert "spelling 'gpu' of 'host' is the target kind of 'gpu'" in manager.backends["host"].error
    assert "host" not in manager.registry.kinds  # rolled back whole


@pytest.mark.parametrize("name", ["two words", "a/b", "", 3])
def test_add_spelling_validates_the_name(name):
    manager = _manager(gpu=_backend("gpu", {}))
    manager.registry._current_name = "gpu"
    with pytest.raises(TargetError, match="name must be one word"):
        manager.registry.add_spelling(name, "gpu")


def test_add_spelling_outside_registration_is_an_error():
    manager = _manager(gpu=_backend("gpu", {}))
    with pytest.raises(TargetError, match="must be called from a backend's tilelang_register_targets"):
        manager.registry.add_spelling("late", "gpu")
