"""The MUSA dialect: spellings of its own (no CUDA spelling inherited), storage types,
T.print and T.device_assert, the clang syntax check against the declared SDK names, and the
check header declaring exactly what the backend emits."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import language as T
from tilelang_core.codegen import CodegenError
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import Target, hooks_for

INCLUDE = Path(__file__).resolve().parents[2] / "backends" / "musa" / "tilelang_musa" / "include"


def _render(func, arch="mp_31"):
    target = Target.parse(f"musa/{arch}")
    return hooks_for(target).codegen(lower(func, target, CompileOptions()), CompileOptions())


def _checker():
    from tilelang_musa.check import find_checker

    if find_checker() is None:
        pytest.skip("no clang >= 17 here (scripts/install_hip_toolchain.sh installs clang-19)")


def debug_kernel():
    @T.prim_func
    def main(X: T.Tensor((64,), "float16"), Y: T.Tensor((64,), "float16")):  # noqa: N803
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), "float16")
            T.copy(X, s)
            T.print(s, msg="musa-print")
            T.device_assert(s[0] < 2.0, "musa-assert")
            for i in T.Parallel(64):
                Y[i] = s[i] * 2.0

    return main


def test_dialect_spellings_are_its_own():
    src = _render(debug_kernel()).source
    assert '#include "tl_musa_common.h"' in src
    assert 'extern "C" __global__ void __launch_bounds__(64) main_kernel(' in src
    assert "__syncthreads_lm();" in src and "__syncthreads()" not in src
    assert "tl_half_t" in src and "__half" not in src


def test_print_and_device_assert_in_the_dialect():
    src = _render(debug_kernel()).source
    assert re.search(r'printf\("[^"]*musa-print', src), src
    assert re.search(r'TL_DEVICE_ASSERT\(.*musa-assert.*"main_kernel"\);', src), src


@pytest.mark.parametrize("arch", ["mp_22", "mp_31"])
def test_clang_checks_the_dialect(arch):
    _checker()
    source = _render(debug_kernel(), arch)
    assert "clang++" in hooks_for(Target.parse(f"musa/{arch}")).check_source(source)


def test_the_check_catches_a_wrong_intrinsic_call():
    _checker()
    from tilelang_musa.check import check_syntax

    good = '#include "tl_musa_async.h"\nextern "C" __global__ void k(float* a) { tl_musa_g2s_wait(); }\n'
    assert check_syntax(good, "k")
    # one argument too many for __musa_memcpy_g2s_wait, as a header bug would pass it
    bad = '#include "tl_musa_common.h"\nextern "C" __global__ void k(float* a) { __musa_memcpy_g2s_wait(1); }\n'
    with pytest.raises(CodegenError, match="requires 0 arguments, but 1 was provided"):
        check_syntax(bad, "k")


def _calls(text: str) -> set[str]:
    """`__musa_*` names called or declared in C text, comments left out, macro-made SQMMA
    names expanded."""
    code = re.sub(r"//[^\n]*", "", text)
    names = {n for n in re.findall(r"\b(__musa_[a-z0-9_]+)\(", code) if "##" not in n}
    for m, n in re.findall(r"TL_MUSA_(?:CHECK_SQMMA|TCE_SHAPE)\((\d+), (\d+)\)", code):
        names.add(f"__musa_sqmma_m{m}n{n}_mma")
    for rank in re.findall(r"TL_MUSA_CHECK_TME\((\d), ", code):
        names.add(f"__musa_tme_ld_tile_{rank}d")
    return names


def test_check_header_declares_exactly_the_intrinsics_the_headers_use():
    used = set()
    for header in INCLUDE.glob("tl_musa_*.h"):
        used |= _calls(header.read_text())
    assert used == _calls((INCLUDE / "check" / "musa_sdk.h").read_text())
    assert {"__musa_memcpy_g2s", "__musa_sqmma_m64n128_mma", "__musa_fmma_m32n32k16_mma", "__musa_tme_ld_tile_4d",
            "__musa_async_init_arrival", "__musa_async_add_trans", "__musa_async_arrive", "__musa_async_wait",
            "__musa_async_bar_record"} <= used


def test_storage_types_round_like_numpy():
    """tl_musa_common.h's software conversions, mirrored here bit for bit, agree with NumPy's
    float16 on every float16 value and on halfway cases (round to nearest even)."""
    from tilelang_musa.codegen import MUSACodegen

    assert MUSACodegen.storage_types["float16"]["store"] == "tl_from_float<tl_half_t>({0})"
    header = (INCLUDE / "tl_musa_common.h").read_text()
    assert "tl_narrow(x, 10, 15, 30, true, 0x7e00u, 0x7bffu)" in header
    values = np.concatenate([np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float32),
                             np.array([65520.0, 65519.0, 2.0 ** -25, 3 * 2.0 ** -26, 1e-9], np.float32)])
    mine = np.array([_narrow_half(float(v)) for v in values], np.uint16)
    with np.errstate(over="ignore"):  # 65520 rounds to infinity, as it must
        expected = values.astype(np.float16).view(np.uint16)
    assert np.array_equal(mine, expected)


def _narrow_half(x: float) -> int:
    """tl_narrow(x, 10, 15, 30, true, ...) of tl_musa_common.h for x >= 0, in Python."""
    f = int(np.float32(x).view(np.uint32)) & 0x7FFFFFFF
    mant, bias, shift = 10, 15, 13
    exp = (f >> 23) - 127 + bias
    if exp >= 1:
        m = f & 0x7FFFFF
        rest, half = m & ((1 << shift) - 1), 1 << (shift - 1)
        result = (exp << mant) | (m >> shift)
        if rest > half or (rest == half and result & 1):
            result += 1
    else:
        total = shift + 1 - exp
        if total > 24:
            return 0
        m = (f & 0x7FFFFF) | 0x800000
        rest, half = m & ((1 << total) - 1), 1 << (total - 1)
        result = m >> total
        if rest > half or (rest == half and result & 1):
            result += 1
    return min(result, 31 << 10)


def test_tce_calls_are_refused_without_the_capability():
    @T.prim_func
    def main(X: T.Tensor((128,), "float32")):  # noqa: N803
        with T.Kernel(1, threads=128) as bx:
            T.tce_commit_group()
            T.tce_wait_group(0)
            X[0] = 1.0

    assert "tl_musa_tce_wait<0>();" in _render(main, "mp_31").source
    with pytest.raises(CodegenError, match="'tce' capability.*musa/mp_22"):
        _render(main, "mp_22")
    with pytest.raises(ValueError, match="0, 1 or 2"):
        T.tce_wait_group(3)
