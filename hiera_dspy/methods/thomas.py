"""`thomas`: the field's reference relevance judge, zero-shot: the searcher's intent, match (M) and trust (T), then
one final grade (Thomas et al., SIGIR 2024; the procedure UMBRELA runs on TREC Deep Learning). The prompt is this
project's own (signatures/thomas.py).

The final grade is asked on the scheme's own grades, 0 .. K-1, each shown with its label and definition: 0-3 for
TREC's four grades, 0-1 for a binary scheme, 0-2 for a three-label one (no scheme is squeezed onto 0-3). The grade
is the index of the label; a grade outside the scale is an error of the judgment, never a label. One LM call a
pair (role "judge"); compilable like any single-step method (its one predictor's instructions and demos).
"""

from __future__ import annotations

import asyncio

import dspy

from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.baselines import Baseline
from signatures.thomas import IntentMatchTrustGrade


def grade_scale(scheme: LabelScheme) -> str:
    """The scheme as a grade scale, one `i = label: definition` line per label, least relevant first, then the
    scheme's guidance (a team's instructions and worked examples, verbatim)."""
    return "\n".join(f"{i} = {label}: {scheme.definitions.get(label, '')}".rstrip(": ")
                     for i, label in enumerate(scheme.labels)) + scheme.guidance()


def label_of(grade, scheme: LabelScheme) -> str:
    """The scheme's label at `grade`; ValueError when the grade is not a whole number of the scale."""
    try:
        index = int(grade)
    except (TypeError, ValueError):
        raise HieraError(f"thomas: final grade {grade!r} is not a whole number") from None
    if index != grade or not 0 <= index < len(scheme.labels):
        raise HieraError(f"thomas: final grade {grade!r} is outside the scale 0..{len(scheme.labels) - 1}")
    return scheme.labels[index]


class Thomas(Baseline):
    """Intent, M, T, then one grade of the scheme's scale, in one accounted call."""

    def __init__(self, ctx: BuildContext, **config):
        super().__init__(ctx, **config)
        self.scale = grade_scale(ctx.scheme)
        self.judge = dspy.Predict(IntentMatchTrustGrade)

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """One judgment call, its grade mapped to the scheme's label."""
        item = self.item(query, item_title, item_text)
        return self._labelled(self.step("thomas.judge", self.judge, query=query, item=item, grade_scale=self.scale))

    async def aforward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """`forward` through DSPy's async path (a knowledge look-up runs off the event loop)."""
        item = (await asyncio.to_thread(self.item, query, item_title, item_text) if self.with_knowledge
                else self.item(query, item_title, item_text))
        return self._labelled(await self.astep("thomas.judge", self.judge, query=query, item=item,
                                               grade_scale=self.scale))

    def _labelled(self, out: dspy.Prediction) -> dspy.Prediction:
        return dspy.Prediction(label=label_of(out.grade, self.scheme), grade=out.grade, intent=out.intent,
                               match=out.match, trust=out.trust,
                               evidence=f"intent: {out.intent}; M {out.match}, T {out.trust}, grade {out.grade}")


@register("thomas", "Thomas et al. (SIGIR 2024) / UMBRELA: the searcher's intent, match M and trust T, then one "
          "grade of the scheme's scale (TREC: 0-3); the field's reference judge", family="field",
          with_knowledge=False, k=None)
def _thomas(ctx: BuildContext, **config) -> dspy.Module:
    return Thomas(ctx, **config)
