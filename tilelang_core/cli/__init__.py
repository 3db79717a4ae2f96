"""The `tilelang` command line."""
