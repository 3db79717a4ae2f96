"""The cases of the suite, one module per feature. Importing this package registers them
(and imports the language, hence TVM: the `--from` path never imports it)."""
from . import attention, atomic, copy, debug, elementwise, errors, gemm, layout, norm, reduce, symbolic, sync  # noqa: F401
