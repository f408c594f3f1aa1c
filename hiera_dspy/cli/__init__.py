"""Shared command-line plumbing (flags, run options) and the `hiera-dspy` console script."""
