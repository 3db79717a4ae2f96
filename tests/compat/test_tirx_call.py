"""`tvm.tirx.Call` in a process that runs the aliasing: TileLang's tests check call nodes with
`isinstance(e, tirx.Call)` and build them as `tirx.Call(dtype, op, args)`; apache-tvm 0.27 has
the node as `tvm.ir.Call` only. Each check runs in a fresh interpreter (the bridge is
process-wide)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

PROBE = """
    import json
    from tvm import ir, tirx
    facts = {"has_call": hasattr(tirx, "Call")}
    if facts["has_call"]:
        x = tirx.Var("x", "float32")
        built = tirx.Call("float32", ir.Op.get("tirx.exp"), [x])
        facts.update({
            "built_is_ir_call": isinstance(built, ir.Call), "built": str(built), "dtype": str(built.dtype),
            "extern_is_call": isinstance(tirx.call_extern("int32", "f", x), tirx.Call),
            "var_is_call": isinstance(x, tirx.Call), "subclass": issubclass(ir.Call, tirx.Call),
        })
        try:
            tirx.Call("int32", ir.Op.get("tirx.exp"), x)
        except TypeError as err:
            facts["bad_args"] = str(err)
    print(json.dumps(facts))
"""


def _facts(install: bool) -> dict:
    code = ("from tilelang_core.compat import install; install()\nimport tvm\n" if install else "") + textwrap.dedent(PROBE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_tirx_call_checks_and_builds_call_nodes_under_the_aliasing():
    facts = _facts(install=True)
    assert facts["has_call"] and facts["built_is_ir_call"] and facts["extern_is_call"] and facts["subclass"]
    assert facts["built"] == "T.exp(x)" and facts["dtype"] == "float32"
    assert not facts["var_is_call"]
    assert "args must be a list" in facts["bad_args"]


def test_without_the_aliasing_tirx_has_no_call():
    assert _facts(install=False) == {"has_call": False}
