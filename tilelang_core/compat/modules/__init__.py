"""TileLang's public module paths that tilelang-core has no module of its own for.

Each module here is what `tilelang.<path>` is inside a process that runs the import aliasing
(`compat.aliases.CORE_ALIASES` maps the path here): a thin layer that gives TileLang's names
their meaning over the core's own API, written for this project. Paths the core already has
(`tilelang.env`, `tilelang.transform`, `tilelang.jit`, ...) are the core's modules, which carry
TileLang's names themselves. Nothing here is imported unless a TileLang program asks for it.

The same folder holds the two TVM modules TileLang's tests use that apache-tvm 0.27 lacks or
has without TileLang's fork's names (`stmt_functor`, `tvm_testing`; see `aliases`).
"""
