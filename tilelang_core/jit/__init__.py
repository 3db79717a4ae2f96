"""Compiling tile programs into callable kernels, with a persistent cache."""
