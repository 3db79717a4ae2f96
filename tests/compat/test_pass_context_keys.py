"""TileLang's pass-config keys on TVM's `PassContext` in a process that runs the aliasing:
kept on the Python side while the context is entered, `tl.Simplify`'s shared fields handed to
TVM's simplifier, unknown keys still refused. Each check runs in a fresh interpreter, since
the bridge is process-wide."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

PROBE = """
    import json
    import tvm
    from tvm import tirx
    from tilelang_core.transform.pass_context import ambient_configs
    facts = {}
    try:
        ctx = tvm.transform.PassContext(config={"tl.disable_tma_lower": True,
                                                "tl.Simplify": {"convert_boolean_to_and_of_ors": True}})
    except Exception as err:
        facts["error"] = type(err).__name__
    else:
        facts["outside"] = ambient_configs()
        with ctx:
            facts["inside"] = ambient_configs()
            facts["tvm_simplify"] = bool(tvm.transform.PassContext.current().config["tirx.StmtSimplify"]
                                         .convert_boolean_to_and_of_ors)
            A = tirx.decl_buffer((3,), "bool", name="A")
            e = tirx.Evaluate(tirx.Or(A[0], tirx.And(A[1], A[2])))
            out = tirx.transform.StmtSimplify()(tvm.IRModule.from_expr(tirx.PrimFunc([A], e)))
            facts["and_of_ors"] = isinstance(out["main"].body.value, tirx.And)
        facts["after"] = ambient_configs()
    try:
        tvm.transform.PassContext(config={"tl.no_such_key": 1})
        facts["unknown"] = "accepted"
    except Exception as err:
        facts["unknown"] = "refused" if "tl.no_such_key" in str(err) else str(err)
    print(json.dumps(facts))
"""


def _facts(install: bool) -> dict:
    code = ("from tilelang_core.compat import install; install()\n" if install else "") + textwrap.dedent(PROBE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_tilelang_keys_are_kept_while_the_context_is_entered():
    facts = _facts(install=True)
    assert facts["outside"] == {} and facts["after"] == {}
    assert facts["inside"] == {"tl.disable_tma_lower": True, "tl.Simplify": {"convert_boolean_to_and_of_ors": True}}
    assert facts["tvm_simplify"] is True and facts["and_of_ors"] is True
    assert facts["unknown"] == "refused"


def test_a_plain_process_keeps_tvms_refusal():
    assert _facts(install=False) == {"error": "AttributeError", "unknown": "refused"}
