"""Benchmarks over the library and its commands: run each from the repository root as `python -m bench.NAME`.

`bench.common` holds the protocols they share (held-out splits, balanced draws, result writing); nothing in the
library or the tests imports this package.
"""
