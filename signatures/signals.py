"""Signature variants that also read a learned scorer's label distribution (`hiera_dspy.signals`). No logic.

`with_scorer_evidence(JudgeDecision)` is JudgeDecision plus one input field, `scorer_evidence`, placed after the
other inputs. The value is text such as "learned scorer: Irrelevant 0.31, Relevant 0.69 (top: Relevant)".
"""

from __future__ import annotations

import dspy

SCORER_EVIDENCE_FIELD = "scorer_evidence"
SCORER_EVIDENCE_DESC = "evidence from a learned scorer (calibrated label probabilities); it can be wrong"


def with_scorer_evidence(signature: type[dspy.Signature]) -> type[dspy.Signature]:
    """The signature with a `scorer_evidence: str` input field appended to its inputs (unchanged if present)."""
    if SCORER_EVIDENCE_FIELD in signature.input_fields:
        return signature
    return signature.append(SCORER_EVIDENCE_FIELD, dspy.InputField(desc=SCORER_EVIDENCE_DESC), type_=str)
