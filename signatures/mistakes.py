"""The contract of the error-analysis tagger: one wrong judgment, sorted into the paper's failure patterns (App. E.2).
Signatures only."""

from __future__ import annotations

from typing import Literal

import dspy

from signatures.hiera import DATA_NOTE

# The paper's words (App. E.2, "Failure Cases Analysis"), plus "other" for a judgment that fits neither.
FAILURE_PATTERNS = {
    "cultural over-interpretation": "the Relation Analyzer's orchestration leads specialists to reinforce "
                                    "inappropriate cultural associations",
    "specificity over-enforcement": "systematic consultation becomes overly rigid, with agents collectively "
                                    "rejecting partially relevant results that human annotators accept",
    "other": "neither pattern fits this error",
}
Pattern = Literal["cultural over-interpretation", "specificity over-enforcement", "other"]


class FailurePattern(dspy.Signature):
    """A relevance judgment disagreed with the human label. Read the pair, both labels and the path the judgment
    took, and name the failure pattern that explains the disagreement."""

    patterns: str = dspy.InputField(desc="the failure patterns, each with its definition")
    query: str = dspy.InputField()
    item: str = dspy.InputField(desc=DATA_NOTE)
    human_label: str = dspy.InputField()
    predicted_label: str = dspy.InputField()
    path: str = dspy.InputField(desc="what the judgment did: delegation, specialists, look-ups, argument, reasoning")
    pattern: Pattern = dspy.OutputField()
    explanation: str = dspy.OutputField(desc="one sentence")
