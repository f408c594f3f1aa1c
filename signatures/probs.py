"""Single-call judges whose label distribution is read from token log-probabilities (`hiera_dspy.methods.label_probs`).
Signatures only, no logic.

`ReasonedJudgment` puts one or two sentences of reasoning before the label (the output fields are written in order),
so the label's distribution is read after the rationale.
"""

from __future__ import annotations

import dspy

from signatures.hiera import DATA_NOTE


class ReasonedJudgment(dspy.Signature):
    """You are a relevance assessor for a search engine. First reason in one or two sentences: what the searcher
    wants, and whether this item gives it. Then give the relevance label, using the label definitions."""

    query: str = dspy.InputField()
    item: str = dspy.InputField(desc=DATA_NOTE)
    label_definitions: str = dspy.InputField()
    reasoning: str = dspy.OutputField(desc="one or two sentences: what the searcher wants; does the item give it?")
    label: str = dspy.OutputField()
