"""Importing the package stays cheap: TVM loads with the language, not before."""
import subprocess
import sys


def test_core_import_does_not_load_tvm():
    code = "import sys, tilelang_core, tilelang_core.ir; print('tvm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_language_import_registers_ops_and_namespace():
    code = (
        "import tvm; from tilelang_core import language as T; "
        "import tvm.script.tirx as S; "
        "print(tvm.ir.Op.get('tl.copy').get_attr('TScriptPrinterName'), hasattr(S, 'tl'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tl.copy True"


def test_every_exported_name_resolves():
    """No name in `tilelang_core.__all__` points at a module or attribute that does not exist."""
    import tilelang_core

    for name in tilelang_core.__all__:
        assert getattr(tilelang_core, name) is not None, name
