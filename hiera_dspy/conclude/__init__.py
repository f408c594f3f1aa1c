"""Conclude: per-query metric values in, estimates, confidence intervals and pairwise differences out (ppi_py)."""
