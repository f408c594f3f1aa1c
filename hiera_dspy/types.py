"""The pair type under its first name: `Pair` lives in hiera_dspy/records.py with the Judgment (one definition)."""

from hiera_dspy.records import Pair

__all__ = ["Pair"]
