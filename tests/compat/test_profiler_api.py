"""TileLang's profiler and tensor supply on the CPU backend: `TensorSupplyType`,
`get_tensor_supply`, `Profiler.assert_allclose / do_bench / run_once`, and the timing
contract (the runtime's timer, budgets in ms or call counts)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime.base import ParamSpec
from tilelang_core.runtime.profiler import Profiler, do_bench
from tilelang_core.utils.tensor import TensorSupplyType, get_tensor_supply, map_torch_type, numpy_dtype

N = 256
DTYPES = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8", "int32", "uint8", "bool"]


def add_kernel(n, block=64):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return main


def gemm_kernel(M, N, K, block=16, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=32) as (bx, by):
            A_s = T.alloc_shared((block, block), dtype)
            B_s = T.alloc_shared((block, block), dtype)
            C_l = T.alloc_fragment((block, block), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, block), num_stages=1):
                T.copy(A[by * block, ko * block], A_s)
                T.copy(B[ko * block, bx * block], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * block, bx * block])
    return main


def symbolic_scale_kernel(block=32):
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] * 2.0
    return main


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILELANG_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield {
            "add": tilelang.compile(add_kernel(N), out_idx=[2], target="cpu"),
            "gemm": tilelang.compile(gemm_kernel(32, 48, 64), out_idx=[2], target="cpu"),
            "symbolic": tilelang.compile(symbolic_scale_kernel(), out_idx=[1], target="cpu"),
            "gemm_bf16": tilelang.compile(gemm_kernel(32, 16, 32, dtype="bfloat16"), out_idx=[2], target="cpu"),
        }


# -- the tensor supply ---------------------------------------------------------------------


@pytest.mark.parametrize("supply_type", list(TensorSupplyType))
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_supply_type_makes_the_declared_shape_and_dtype(supply_type, dtype, kernels):
    param = ParamSpec("A", "tensor", dtype, (3, 5))
    array = get_tensor_supply(supply_type)(param)  # no runtime: NumPy
    assert isinstance(array, np.ndarray)
    assert array.shape == (3, 5) and array.dtype == numpy_dtype(dtype)
    # the CPU runtime makes torch CPU tensors, as TileLang's reference programs expect
    torch = pytest.importorskip("torch")
    tensor = get_tensor_supply(supply_type)(param, kernels["add"].runtime)
    assert isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu"
    assert tuple(tensor.shape) == (3, 5) and tensor.dtype == map_torch_type(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_supply_values_zero_one_integer(dtype):
    param = ParamSpec("A", "tensor", dtype, (64, 64))
    as_float = lambda a: np.asarray(a).astype(np.float64)  # noqa: E731
    assert (as_float(get_tensor_supply(TensorSupplyType.Zero)(param)) == 0).all()
    assert (as_float(get_tensor_supply(TensorSupplyType.One)(param)) == 1).all()
    ints = as_float(get_tensor_supply(TensorSupplyType.Integer)(param))
    assert (ints == np.round(ints)).all()
    # float8 rounds 127 up to 128
    low, high = {"bool": (0, 1), "uint8": (0, 2)}.get(dtype, (-128, 128) if "float8" in dtype else (-2, 2))
    assert ints.min() >= low and ints.max() <= high and len(np.unique(ints)) > 1


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_supply_values_random_floats(dtype):
    param = ParamSpec("A", "tensor", dtype, (100, 100))
    for kind in (TensorSupplyType.Uniform, TensorSupplyType.Auto):
        u = get_tensor_supply(kind)(param).astype(np.float64)
        assert u.min() >= -1 and u.max() <= 1 and (u != np.round(u)).any() and abs(u.mean()) < 0.05
    normal = get_tensor_supply(TensorSupplyType.Normal)(param).astype(np.float64)
    assert abs(normal.mean() + 1) < 0.05 and abs(normal.std() - 1) < 0.05  # TileLang: mean -1, std 1
    randn = get_tensor_supply(TensorSupplyType.Randn)(param).astype(np.float64)
    assert abs(randn.mean()) < 0.05 and abs(randn.std() - 1) < 0.05


def test_supply_quirks_follow_tilelang():
    int8 = ParamSpec("A", "tensor", "int8", (8, 8))
    assert (get_tensor_supply(TensorSupplyType.Uniform)(int8) == 1).all()
    float64 = get_tensor_supply(TensorSupplyType.Auto)(ParamSpec("A", "tensor", "float64", (50, 50)))
    assert (float64 == np.round(float64)).all()  # Auto: random floats only for f16/bf16/f32


def test_supply_sizes_symbolic_dims_and_refuses_what_it_cannot_make():
    param = ParamSpec("X", "tensor", "float32", ("n", 4))
    supply = get_tensor_supply(TensorSupplyType.Randn)
    assert supply(param, values={"n": 7}).shape == (7, 4)
    with pytest.raises(ValueError, match=r"'X'.*symbolic dimension 'n'.*dynamic_symbolic_constraints"):
        supply(param)
    with pytest.raises(ValueError, match=r"'alpha' is a scalar.*input_tensors"):
        supply(ParamSpec("alpha", "scalar", "float32"))
    with pytest.raises(TypeError, match="TensorSupplyType"):
        get_tensor_supply("Randn")


def test_supply_on_a_torch_runtime_makes_torch_tensors_of_every_dtype():
    """A GPU runtime's from_numpy returns torch tensors: bfloat16 / float8 come out as
    torch dtypes (torch.from_numpy alone refuses ml_dtypes arrays)."""
    torch = pytest.importorskip("torch")

    class TorchRuntime:
        def from_numpy(self, array):
            return torch.from_numpy(array)

    for dtype in DTYPES:
        for kind in TensorSupplyType:
            t = get_tensor_supply(kind)(ParamSpec("A", "tensor", dtype, (4, 6)), TorchRuntime())
            assert isinstance(t, torch.Tensor) and t.shape == (4, 6) and t.dtype == map_torch_type(dtype)


def test_map_torch_type_reads_tilelang_spellings():
    torch = pytest.importorskip("torch")
    assert map_torch_type("float8_e4m3") is torch.float8_e4m3fn
    assert map_torch_type("e5m2_float8") is torch.float8_e5m2
    assert map_torch_type("bfloat16") is torch.bfloat16 and map_torch_type(T.float16) is torch.float16
    assert map_torch_type("int4") is torch.int8


# -- assert_allclose -------------------------------------------------------------------------


def test_assert_allclose_passes_a_right_reference_and_fails_a_wrong_one(kernels):
    profiler = Profiler(kernels["add"], tensor_supply_type=TensorSupplyType.Randn)
    profiler.assert_allclose(lambda a, b: a + b, atol=1e-6, rtol=1e-6)
    with pytest.raises(AssertionError, match=r"(?s)kernel output 'C' vs reference.*worst at index.*tolerance"):
        profiler.assert_allclose(lambda a, b: a - b)


def test_assert_allclose_checks_every_element_against_the_ratio(kernels):
    profiler = Profiler(kernels["add"], TensorSupplyType.Randn)

    def off_by_one_element(a, b):
        out = a + b
        out[N - 1] += 1.0  # the last element only
        return out

    profiler.assert_allclose(off_by_one_element, max_mismatched_ratio=0.01)  # 2 of 256 allowed
    with pytest.raises(AssertionError, match=rf"(?s)1 of {N} elements mismatch.*worst at index \({N - 1},\)"):
        profiler.assert_allclose(off_by_one_element, max_mismatched_ratio=0)


def test_assert_allclose_names_a_dtype_or_count_mismatch(kernels):
    profiler = Profiler(kernels["add"])
    with pytest.raises(AssertionError, match="dtypes differ: float32 != float64"):
        profiler.assert_allclose(lambda a, b: (a + b).double())  # inputs are torch CPU tensors
    with pytest.raises(AssertionError, match="returned 1 output.*reference 2"):
        profiler.assert_allclose(lambda a, b: (a + b, a))


def test_gemm_against_numpy(kernels):
    profiler = Profiler(kernels["gemm"], TensorSupplyType.Normal)
    profiler.assert_allclose(lambda a, b: a @ b, atol=1e-4, rtol=1e-4)
    with pytest.raises(AssertionError, match="output 'C'"):
        profiler.assert_allclose(lambda a, b: a @ b + 0.5)
    a, b = profiler.get_input_tensors()
    assert a.shape == (32, 64) and b.shape == (64, 48)


def test_bfloat16_inputs_and_a_torch_reference(kernels):
    torch = pytest.importorskip("torch")
    profiler = Profiler(kernels["gemm_bf16"], TensorSupplyType.Auto)
    a, b = profiler.get_input_tensors()
    assert a.dtype == torch.bfloat16 and b.dtype == torch.bfloat16
    profiler.assert_allclose(lambda x, y: x.float() @ y.float(), atol=1e-3, rtol=1e-3)
    # a NumPy reference on the torch inputs: the outputs are compared across the libraries
    f32 = lambda x: x.float().numpy()  # noqa: E731
    profiler.assert_allclose(lambda x, y: f32(x) @ f32(y), atol=1e-3, rtol=1e-3)
    ta, tb = torch.randn(32, 32).bfloat16(), torch.randn(32, 16).bfloat16()
    profiler.assert_allclose(lambda x, y: x.float() @ y.float(), input_tensors=[ta, tb], atol=1e-3, rtol=1e-3)


def test_inputs_are_supplied_once_or_given(kernels):
    profiler = kernels["add"].get_profiler()
    assert isinstance(profiler, Profiler)
    first = profiler.get_input_tensors()
    assert profiler.get_input_tensors() is first and len(first) == 2
    fresh = profiler._get_inputs()
    assert fresh[0] is not first[0] and fresh[0].shape == (N,)
    assert len(profiler._get_inputs(with_output=True)) == 3
    a, b = np.ones(N, np.float32), np.full(N, 2, np.float32)
    profiler.assert_allclose(lambda x, y: np.full(N, 3, np.float32), input_tensors=[a, b])


def test_run_once_returns_the_outputs(kernels):
    profiler = Profiler(kernels["add"], TensorSupplyType.Randn)
    a, b = profiler.get_input_tensors()
    np.testing.assert_array_equal(profiler.run_once(), a + b)
    assert profiler.run_once(lambda x, y: "ran") == "ran"


# -- do_bench ----------------------------------------------------------------------------------


def test_do_bench_count_and_budget_forms(kernels):
    profiler = Profiler(kernels["add"])
    counted = profiler.do_bench(n_warmup=2, n_repeat=3)
    budgeted = profiler.do_bench(warmup=1, rep=2)
    assert isinstance(counted, float) and counted > 0
    assert isinstance(budgeted, float) and budgeted > 0
    quantiles = profiler.do_bench(n_repeat=5, quantiles=[0.2, 0.5, 0.8])
    assert len(quantiles) == 3 and 0 < quantiles[0] <= quantiles[1] <= quantiles[2]
    for backend in ("cupti", "cudagraph"):
        assert profiler.do_bench(n_repeat=3, backend=backend) > 0
    with pytest.raises(ValueError, match="backend must be one of"):
        profiler.do_bench(backend="perf")
    with pytest.raises(ValueError, match="return_mode"):
        profiler.do_bench(return_mode="average")
    with pytest.raises(ValueError, match="n_repeat"):
        profiler.do_bench(n_repeat=-1)


def test_do_bench_times_a_reference_on_the_same_inputs(kernels):
    profiler = Profiler(kernels["add"])
    seen = []

    def reference(a, b):
        seen.append((a, b))
        return a + b

    assert profiler.do_bench(reference, n_warmup=2, n_repeat=3) > 0
    # one first call, five to estimate, then the warmup and timed calls
    assert len(seen) == 1 + 5 + 2 + 3
    a, b = profiler.get_input_tensors()
    assert all(x is a and y is b for x, y in seen)
    assert profiler.do_bench(kernels["add"], n_repeat=2) > 0  # another kernel as func


def test_budgets_are_milliseconds(kernels):
    calls = []

    def busy(a, b, ms=0.2):
        calls.append(1)
        end = time.perf_counter() + ms / 1e3
        while time.perf_counter() < end:
            pass

    profiler = Profiler(kernels["add"])
    ms = profiler.do_bench(busy, warmup=1, rep=2)
    assert ms >= 0.2
    # each call takes >= 0.2 ms: at most 1/0.2 warmup and 2/0.2 timed calls, at least one each
    assert 1 + 5 + 2 <= len(calls) <= 1 + 5 + 5 + 10


class FixedTimer:
    def __init__(self, ms):
        self.ms = ms

    def start(self):
        pass

    def stop(self):
        pass

    def elapsed_ms(self):
        return self.ms


class FixedRuntime:
    """Every timer reads 3 ms per measured interval: do_bench must report what it reads."""

    def __init__(self):
        self.flushes = 0
        self.syncs = 0

    def make_timer(self):
        return FixedTimer(15.0)  # the estimate brackets five calls: 3 ms each

    def flush_l2(self):
        self.flushes += 1

    def synchronize(self):
        self.syncs += 1


def test_do_bench_reads_the_runtimes_timer():
    runtime = FixedRuntime()
    calls = []
    assert do_bench(lambda: calls.append(1), warmup=6, rep=30, runtime=runtime) == 15.0
    # the estimate says 3 ms a call: 6 / 3 warmup calls and 30 / 3 timed ones
    assert len(calls) == 1 + 5 + 2 + 10
    assert runtime.flushes == 5 + 10 and runtime.syncs >= 2
    calls.clear()
    assert do_bench(lambda: calls.append(1), early_stop_baseline=1.0, runtime=runtime) == 3.0
    assert len(calls) == 6
    assert do_bench(lambda: None, _n_repeat=4, backend="cudagraph", runtime=runtime) == 15.0 / 4
    with pytest.raises(ValueError, match="device"):
        do_bench(lambda: None, device=0, runtime=runtime)


def test_symbolic_sizes_for_the_supply(kernels):
    profiler = Profiler(kernels["symbolic"], TensorSupplyType.Randn)
    assert profiler.do_bench(dynamic_symbolic_constraints={"n": 100}, n_repeat=2) > 0
    assert profiler.do_bench(values={"n": 100}, n_repeat=2) > 0  # the older keyword
    (x,) = profiler.get_input_tensors({"n": 100})
    assert x.shape == (100,)
    with pytest.raises(ValueError, match="symbolic dimension 'n'"):
        profiler.do_bench(n_repeat=2)
    with pytest.raises(ValueError, match="once"):
        profiler.do_bench(values={"n": 1}, dynamic_symbolic_constraints={"n": 1})


def test_profiler_refuses_what_is_not_a_kernel_or_supply_type(kernels):
    with pytest.raises(TypeError, match="compiled kernel"):
        Profiler(lambda: None)
    with pytest.raises(TypeError, match="TensorSupplyType"):
        Profiler(kernels["add"], tensor_supply_type=3)
    assert Profiler(kernels["add"], "Zero").supply_type is TensorSupplyType.Zero
