"""The contracts of DREAM's debaters (ICLR 2026, "Completing Missing Annotation: Multi-Agent Debate ..."). Signatures
only. The debate is about one binary question; a graded label for an agreed "relevant" comes from `GradeRelevant`.
"""

from __future__ import annotations

from typing import Literal

import dspy

from signatures.hiera import DATA_NOTE

Stance = Literal["relevant", "not relevant"]


class DebateOpening(dspy.Signature):
    """You are a debater in a relevance assessment debate. Open the debate: argue, as convincingly and honestly as
    the evidence allows, for your assigned stance on the question, citing concrete facts of the query and the
    item."""

    query: str = dspy.InputField()
    item: str = dspy.InputField(desc=DATA_NOTE)
    question: str = dspy.InputField(desc="the relevance question under debate, with the label definitions")
    assigned_stance: Stance = dspy.InputField()
    argument: str = dspy.OutputField(desc="at most 4 sentences")


class DebateTurn(dspy.Signature):
    """You are a debater in a relevance assessment debate. You opened the debate arguing for your initial stance.
    Critique your opponent's latest argument, answer their critique of yours, and state your current stance: keep
    it if your arguments hold, change it if the opponent has convinced you. Agreement ends the debate; do not agree
    only to end it."""

    query: str = dspy.InputField()
    item: str = dspy.InputField(desc=DATA_NOTE)
    question: str = dspy.InputField(desc="the relevance question under debate, with the label definitions")
    initial_stance: Stance = dspy.InputField()
    history: str = dspy.InputField(desc="the debate so far, round by round")
    argument: str = dspy.OutputField(desc="your critique and reply, at most 4 sentences")
    stance: Stance = dspy.OutputField()


class GradeRelevant(dspy.Signature):
    """Two assessors debated this query-item pair and agreed that the item is relevant. Decide how relevant it is,
    choosing among the allowed labels with the label definitions and the debate."""

    query: str = dspy.InputField()
    item: str = dspy.InputField(desc=DATA_NOTE)
    label_definitions: str = dspy.InputField()
    debate: str = dspy.InputField()
    label: str = dspy.OutputField()
