"""TileLang's names in `tilelang.language.dtypes` (dtype objects as module attributes, the
torch dtype table, storage dtypes), TVM's standard passes under `tilelang.transform`'s names,
and the CUDA backend's 2:4 sparsity metadata factors."""
from __future__ import annotations

import pytest
from tvm import ir
from tvm.script import tirx as TS

from tilelang_core import transform
from tilelang_core.language import dtypes


def test_dtype_module_names_and_bits():
    assert dtypes.dtype is dtypes.DType
    assert dtypes.float16 == "float16" and dtypes.float == "float32"  # TileLang's C-style spelling
    import tvm

    assert isinstance(dtypes.float16, tvm.DataType) and isinstance(dtypes.float16, str)  # as TileLang's dtype
    assert dtypes.float16.bits == 16 and dtypes.DType("int8x4").bits == 8 and dtypes.DType("int8x4").lanes == 4
    names = dtypes._all_dtypes
    assert "float16" in names and "bfloat16x2" in names and names == sorted(names)
    with pytest.raises(AttributeError, match="no attribute 'not_a_dtype'"):
        dtypes.not_a_dtype  # noqa: B018


def test_torch_dtype_table_and_storage_dtype():
    torch = pytest.importorskip("torch")
    table = dtypes._TORCH_DTYPE_TO_STR
    assert table[torch.float16] == "float16" and table[torch.bfloat16] == "bfloat16" and table[torch.bool] == "bool"
    assert dtypes.resolve_torch_storage_dtype("float16") == "float16"
    assert dtypes.resolve_torch_storage_dtype("int4") == "int8"  # int4 lives in int8 storage
    fp4 = "float4_e2m1fnx2" if hasattr(torch, "float4_e2m1fn_x2") else "int8"
    assert dtypes.resolve_torch_storage_dtype("float4_e2m1fn") == fp4


@TS.prim_func(private=True)
def _adds(a: TS.Buffer((16,), "int32")):
    for i in range(16):
        a[i + 0 * 4] = a[i] + 0


def test_simplify_is_tvms_statement_simplifier():
    out = transform.Simplify()(ir.IRModule({"main": _adds}))["main"]
    text = out.script()
    assert "0 * 4" not in text and "+ 0" not in text  # both identities simplified away
    with pytest.raises(NotImplementedError, match="simplify_arguments=True"):
        transform.Simplify(simplify_arguments=True)


def test_tvm_passes_by_tilelang_name_are_passes():
    for name in ("FlattenBuffer", "VectorizeLoop", "UnrollLoop", "MakePackedAPI", "SplitHostDevice",
                 "LowerOpaqueBlock", "InjectSoftwarePipeline"):
        assert isinstance(getattr(transform, name)(), ir.transform.Pass), name
    assert isinstance(transform.ThreadSync("shared"), ir.transform.Pass)
    with pytest.raises(TypeError, match="storage_scope"):
        transform.ThreadSync("")


def test_sparse_metadata_factors():
    sparse = pytest.importorskip("tilelang_cuda.compat.intrinsics.sparse_layout")
    assert sparse.get_e_factor("float16", "int16") == 16  # 4 groups of 4 per 16-bit element
    assert sparse.get_e_factor("float16", "uint8") == 8
    assert sparse.get_e_factor("float32", "int16") == 8  # 1:2 groups for float32
    assert sparse.get_e_replicate_factor("int8") == 1 and sparse.get_e_replicate_factor("bfloat16") == 2
    with pytest.raises(ValueError, match="float64"):
        sparse.get_e_factor("float64", "int16")


def test_pass_config_keys_read_as_enum_members():
    from tilelang_core.jit.options import CompileOptions, PassConfigKey

    assert PassConfigKey.TL_SIMPLIFY.value == "tl.Simplify"  # TileLang's keys are a string enum
    assert PassConfigKey.TL_DISABLE_TMA_LOWER == "tl.disable_tma_lower"
    assert CompileOptions.from_pass_configs({PassConfigKey.TL_DISABLE_TMA_LOWER: True}).disable_tma
