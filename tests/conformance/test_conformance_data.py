"""Inputs, tolerances, the element check, and arrays that travel as raw bits to torch."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang_conformance.data import (BITS_DTYPES, FLOAT_DTYPES, INT_DTYPES, compare, from_bits,
                                       numpy_dtype, poison_value, random_array, to_bits, tolerance)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_random_inputs_are_never_zero(dtype):
    if numpy_dtype(dtype) is None:
        pytest.skip(f"no host dtype for {dtype} (ml_dtypes missing)")
    values = random_array(np.random.default_rng(0), (4096,), dtype).astype(np.float64)
    assert (values != 0).all() and np.isfinite(values).all()
    if not dtype.startswith("uint"):
        assert (values < 0).any() and (values > 0).any()


def test_integral_floats_are_small_integers():
    values = random_array(np.random.default_rng(0), (1000,), "bfloat16", int_high=3, integral=True)
    as64 = values.astype(np.float64)
    assert set(np.unique(as64)) <= {-3.0, -2.0, -1.0, 1.0, 2.0, 3.0}


def test_compare_reports_poison_and_tolerance():
    ref = np.arange(1.0, 9.0)
    out = ref.copy()
    assert compare("Y", out, ref, "float32") is None
    out[3] = np.nan
    out[5] += 1e-3
    bad = compare("Y", out, ref, "float32", poison=poison_value("float32"))
    assert (bad.bad, bad.unwritten, bad.index) == (2, 1, (3,))
    assert compare("Y", ref * (1 + 1e-3), ref, "float16") is None  # within float16's tolerance
    assert compare("Y", ref + 1, ref, "int32") is not None and tolerance("int8") == (0.0, 0.0)


@pytest.mark.parametrize("dtype", BITS_DTYPES)
def test_bits_round_trip_through_torch(dtype):
    torch = pytest.importorskip("torch")
    if numpy_dtype(dtype) is None or not hasattr(torch, dtype):
        pytest.skip(f"{dtype} is missing from ml_dtypes or torch here")
    from tilelang_conformance.devices import TorchArrays

    host = random_array(np.random.default_rng(1), (64,), dtype)
    bits = to_bits(host, dtype)
    assert bits.dtype.kind == "u" and (from_bits(bits, dtype).astype(np.float64) == host.astype(np.float64)).all()
    arrays = TorchArrays("cpu")
    tensor = arrays.tensor(bits, dtype)  # as on a machine without ml_dtypes: raw bits in
    assert str(tensor.dtype) == f"torch.{dtype}"
    assert (arrays.float64(tensor) == host.astype(np.float64)).all()
    assert np.isnan(arrays.float64(arrays.poisoned((3,), dtype))).all()
