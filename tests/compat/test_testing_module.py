"""`tilelang_core.testing` (TileLang's `tilelang.testing`): skip decorators read from the
backends' detection, `main()`, `set_random_seed`, and `torch_assert_close`."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilelang_core.testing as testing
from tilelang_core.plugin import Capabilities, Detection, get_plugin_manager
from tilelang_core.runtime.base import ParamSpec
from tilelang_core.utils.tensor import TensorSupplyType, get_tensor_supply

HAS_CUDA_DEVICE = any(d.device for d in get_plugin_manager().detections_of("cuda"))


def _skip_mark(func):
    (mark,) = [m for m in func.pytestmark if m.name == "skipif"]
    return mark.args[0], mark.kwargs["reason"]


def test_requires_cuda_skips_here_with_the_reason():
    if HAS_CUDA_DEVICE:
        pytest.skip("this machine has a CUDA device: the decorator runs the test")
    requirement = testing.requires_cuda
    assert not requirement.met and "no cuda device detected" in requirement.reason

    @testing.requires_cuda
    def needs_gpu():
        pass

    skip, reason = _skip_mark(needs_gpu)
    assert skip is True and reason == requirement.reason
    assert not testing.requires_cuda_compute_version(8, 0).met
    assert not testing.requires_cuda_compute_version_ge(9).met


def test_requires_cpu_runs_here():
    assert testing.requires_cpu.met
    assert testing.requires_target_kind("cpu").met
    arch = [d.arch for d in get_plugin_manager().detections_of("cpu") if d.device][0]
    assert testing.requires_target(arch).met  # an arch names the detected device too

    @testing.requires_cpu
    def on_cpu():
        pass

    assert _skip_mark(on_cpu)[0] is False
    assert testing.requires_cuda_or_cpu.met  # either one


def test_unknown_names_skip_instead_of_failing_the_import():
    requirement = testing.requires_target("no_such_backend")
    assert not requirement.met and "no installed backend declares" in requirement.reason
    assert not testing.requires_target_kind("no_such_backend").met
    from tilelang_core.testing import requires_no_such_backend  # resolved from the name

    assert not requires_no_such_backend.met
    with pytest.raises(AttributeError, match="no attribute 'not_a_decorator'"):
        testing.not_a_decorator  # noqa: B018
    with pytest.raises(ValueError, match="at least one"):
        testing.requires_target()


def test_capability_requirements_read_the_detected_tables():
    assert not testing.requires_target("wgmma").met or HAS_CUDA_DEVICE
    cpu = [d for d in get_plugin_manager().detections_of("cpu") if d.device][0]
    caps = cpu.capabilities or get_plugin_manager().registry.kinds["cpu"].archs[cpu.arch]
    assert testing.requires_target(caps.dtypes[0]).met


@pytest.fixture
def one_fake_device(monkeypatch):
    """A detected device of kind "fake", arch "sm_86" (or a stated compute version)."""
    state = {"extra": {}}

    def devices(kind):
        caps = Capabilities(kind="fake", arch="sm_86", extra=state["extra"])
        return [Detection("fake", "sm_86", device=True, capabilities=caps)] if kind == "fake" else []

    monkeypatch.setattr(testing, "_kind_of", lambda name: name if name == "fake" else None)
    monkeypatch.setattr(testing, "_devices", devices)
    return state


def test_compute_version_modes(one_fake_device):
    version = testing.requires_compute_version
    assert version("fake", 8, 0).met and version("fake", 8, 6, "eq").met
    assert not version("fake", 9, 0).met and "have 8.6 (fake/sm_86)" in version("fake", 9, 0).reason
    assert version("fake", 9, 0, "lt").met and not version("fake", 8, 6, "gt").met
    assert testing.requires_fake_compute_version_le(8, 6).met
    assert not testing.requires_fake_compute_version_eq(8).met
    assert testing.requires_fake_compute_version(8, 9, mode="le").met
    one_fake_device["extra"] = {"compute_version": (9, 0)}  # stated by the backend: wins
    assert version("fake", 9, 0, "eq").met
    with pytest.raises(ValueError, match="mode must be one of"):
        version("fake", 8, 0, "gte")
    assert not version("absent", 1, 0).met


def test_requires_package():
    assert testing.requires_package("numpy", "pytest").met
    missing = testing.requires_package("numpy", "no_such_package_xyz")
    assert not missing.met and "no_such_package_xyz" in missing.reason and "numpy" not in missing.reason


def test_set_random_seed_fixes_the_supply_and_torch():
    param = ParamSpec("A", "tensor", "float32", (16,))
    supply = get_tensor_supply(TensorSupplyType.Randn)
    testing.set_random_seed(7)
    first = supply(param)
    testing.set_random_seed(7)
    np.testing.assert_array_equal(supply(param), first)
    torch = pytest.importorskip("torch")
    testing.set_random_seed(3)
    t = torch.rand(4)
    testing.set_random_seed(3)
    assert torch.equal(torch.rand(4), t)


def test_torch_assert_close_tolerates_a_ratio_and_mixes_libraries():
    torch = pytest.importorskip("torch")
    a = np.arange(1000, dtype=np.float32)
    b = a.copy()
    b[10] += 5
    assert testing.torch_assert_close(a, torch.from_numpy(b), max_mismatched_ratio=0.001)
    with pytest.raises(AssertionError, match=r"(?s)LHS vs RHS: 1 of 1000 elements mismatch.*index \(10,\)"):
        testing.torch_assert_close(a, b, max_mismatched_ratio=0)
    with pytest.raises(AssertionError, match="shapes differ"):
        testing.torch_assert_close(a, a[:10])
    with pytest.raises(AssertionError, match="dtypes differ: float32 != float64"):
        testing.torch_assert_close(a, a.astype(np.float64))
    assert testing.torch_assert_close(a, a.astype(np.float64), check_dtype=False)
    bf = torch.ones(4, dtype=torch.bfloat16)
    assert testing.torch_assert_close(bf, torch.ones(4, dtype=torch.bfloat16))
    nan = np.array([np.nan, 1.0])
    assert testing.torch_assert_close(nan, nan)
    with pytest.raises(AssertionError):
        testing.torch_assert_close(nan, nan, equal_nan=False, max_mismatched_ratio=0)


def test_main_runs_pytest_on_the_calling_file(tmp_path):
    script = tmp_path / "test_example.py"
    script.write_text(textwrap.dedent("""
        import tilelang_core.testing


        @tilelang_core.testing.requires_cpu
        def test_on_cpu():
            assert True


        @tilelang_core.testing.requires_no_such_backend
        def test_on_nothing():
            assert False, "must be skipped"


        if __name__ == "__main__":
            tilelang_core.testing.main()
    """))
    out = subprocess.run([sys.executable, str(script), "-q", "-rs", "-p", "no:cacheprovider"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 1 skipped" in out.stdout
    assert "no installed backend declares a target kind, arch or capability named 'no_such_backend'" in out.stdout


def test_large_inputs_are_drawn_on_the_device_with_the_same_distributions():
    """On a device runtime the supply draws with torch where the tensor lives (autotuning
    TileLang's KDA examples drew tens of millions of values with NumPy per candidate): same
    ranges as the host draw, and `set_random_seed` still fixes the values."""
    torch = pytest.importorskip("torch")
    import numpy as np
    from tilelang_core.utils import tensor as supply_module

    class TorchRuntime:
        def from_numpy(self, array):
            return torch.from_numpy(array)

    shape = (256, 512)
    for kind, name, check in [
        (TensorSupplyType.Auto, "float16", lambda t: (t.abs() <= 1).all() and t.std() > 0.3),
        (TensorSupplyType.Normal, "float32", lambda t: abs(float(t.mean()) + 1.0) < 0.05),
        (TensorSupplyType.Randn, "float32", lambda t: abs(float(t.std()) - 1.0) < 0.05),
        (TensorSupplyType.Integer, "int32", lambda t: set(t.unique().tolist()) == {-2, -1, 0, 1, 2}),
        (TensorSupplyType.Auto, "uint8", lambda t: set(t.unique().tolist()) == {0, 1, 2}),
    ]:
        drawn = supply_module._draw_on_device(kind, name, shape, TorchRuntime(), host_too=True)
        assert tuple(drawn.shape) == shape and bool(check(drawn.float())), (kind, name)
    np.random.seed(3)
    first = supply_module._draw_on_device(TensorSupplyType.Randn, "float32", shape, TorchRuntime(), host_too=True)
    np.random.seed(3)
    again = supply_module._draw_on_device(TensorSupplyType.Randn, "float32", shape, TorchRuntime(), host_too=True)
    assert torch.equal(first, again)
    assert supply_module._draw_on_device(TensorSupplyType.Randn, "float32", shape, TorchRuntime()) is None  # host: NumPy
