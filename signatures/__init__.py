"""DSPy Signature classes: the contracts of every agent. No logic beyond fitting a label scheme."""

from __future__ import annotations

import dspy

from hiera_dspy.labels import LabelScheme


def with_labels(signature: type[dspy.Signature], scheme: LabelScheme, field: str = "label") -> type[dspy.Signature]:
    """The signature with its label field typed as the scheme's string Literal (the labels, least relevant first)."""
    return signature.with_updated_fields(field, type_=scheme.literal)
