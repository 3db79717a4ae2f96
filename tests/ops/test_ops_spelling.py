"""The ops take torch's `dim=`/`keepdim=` as well as NumPy's `axis=`/`keepdims=` (CPU)."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang_core import ops

X = np.random.default_rng(0).standard_normal((4, 8, 16)).astype(np.float32)


def test_softmax_dim_is_axis():
    np.testing.assert_allclose(ops.softmax(X, dim=1, target="cpu"), ops.softmax(X, axis=1, target="cpu"), rtol=1e-6)
    np.testing.assert_allclose(ops.log_softmax(X, dim=0, target="cpu").sum(), ops.log_softmax(X, axis=0, target="cpu").sum(),
                               rtol=1e-5)


def test_reductions_take_dim_and_keepdim():
    out = ops.sum(X, dim=1, keepdim=True, target="cpu")
    assert out.shape == (4, 1, 16)
    np.testing.assert_allclose(out, X.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)
    assert ops.max(X, dim=0, target="cpu").shape == (8, 16)
    np.testing.assert_allclose(ops.cumsum(X, dim=2, target="cpu"), np.cumsum(X, axis=2), rtol=1e-4, atol=1e-4)


def test_both_spellings_at_once_name_the_two():
    with pytest.raises(TypeError, match=r"both axis=1 and dim=2"):
        ops.softmax(X, axis=1, dim=2, target="cpu")
    with pytest.raises(TypeError, match=r"both keepdims=True and keepdim=False"):
        ops.mean(X, keepdims=True, keepdim=False, target="cpu")
