"""`expr.dtype` in a process that runs the aliasing: TileLang's helpers read it off loads, casts
and arithmetic (apache-tvm 0.27 keeps it only on buffer variables). Each check runs in a fresh
interpreter, since the bridge is process-wide."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

PROBE = """
    import json
    from tvm import tirx
    x = tirx.Var("x", "int8")
    buf = tirx.decl_buffer((4,), "float16")
    load = tirx.BufferLoad(buf, [tirx.IntImm("int32", 1)])
    def dtype(e):
        try:
            return str(e.dtype)
        except AttributeError as err:
            return "AttributeError"
    print(json.dumps({
        "var": dtype(x), "load": dtype(load), "sum": dtype(x + x), "cast": dtype(tirx.Cast("int32", x)),
        "const": dtype(tirx.const(3, "uint16")), "pointer": dtype(tirx.Var("p", "handle")),
        "buffer": dtype(buf), "equal_to_str": load.dtype == "float16" if dtype(load) != "AttributeError" else None,
    }))
"""


def _facts(install: bool) -> dict:
    code = ("from tilelang_core.compat import install; install()\nimport tvm\n" if install else "") + textwrap.dedent(PROBE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_expression_has_a_dtype_under_the_aliasing():
    facts = _facts(install=True)
    assert facts == {"var": "int8", "load": "float16", "sum": "int8", "cast": "int32", "const": "uint16",
                     "pointer": "handle", "buffer": "float16", "equal_to_str": True}


def test_without_the_aliasing_tvm_is_left_as_it_is():
    facts = _facts(install=False)
    assert facts["load"] == "AttributeError" and facts["var"] == "AttributeError"
    assert facts["buffer"] == "float16"


def test_tilelang_quantization_helper_runs_under_the_aliasing(tmp_path):
    """The shape of TileLang's `_tir_packed_int_to_int_convert`: asserts on `val.dtype`."""
    code = textwrap.dedent("""
        from tilelang_core.compat import install; install()
        from tilelang import language as T
        from tilelang import tvm as tvm
        from tvm import tirx

        def convert(nbit, val, pos, dtype):
            assert val.dtype == "int8", f"{val.dtype} != int8"
            mask = tirx.const((1 << nbit) - 1, T.int32)
            unextended = (val >> (pos.astype(T.int32) * tirx.const(nbit, T.int32))) & mask
            return tirx.Cast(dtype, (unextended << tirx.const(32 - nbit, T.int32)) >> tirx.const(32 - nbit, T.int32))

        buf = tirx.decl_buffer((4,), "int8")
        e = convert(4, tirx.BufferLoad(buf, [tirx.IntImm("int32", 0)]), tirx.IntImm("int32", 1), "float16")
        print(e.dtype)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "float16"
