"""DREAM (ICLR 2026, "Completing Missing Annotation: Multi-Agent Debate for Accurate and Scalable Relevant Assessment
for IR Benchmarks"): two debaters with opposing initial stances; agreement gives the label, persistent disagreement
escalates the pair (to a human) with the debate history.

Control flow (all calls under the judge LM, role "judge"):
- round 0: the advocate argues "relevant", the skeptic "not relevant" (stances fixed by role, arguments only);
- rounds 1..`rounds`: both critique the debate so far (each sees every earlier round, not the other's turn of the
  same round) and state a stance; the first round that ends with both stances equal decides;
- no agreement after `rounds` rounds: Prediction(label=None, escalated=True, history=[2 * (rounds + 1) turns]).
The debate is about a binary question. Binary schemes: agreed relevant / not relevant -> the scheme's relevant /
irrelevant label. Graded schemes: "relevant" means at or above `threshold` (default the scheme's threshold, e.g.
ESCI's Substitute); agreed not relevant -> the lowest label; agreed relevant -> one graded judge call restricted to
the labels at or above the threshold (seeing the debate). Labels strictly between the lowest and the threshold are
never given. Every turn is a dict {round, agent, stance, argument} in `history`.
"""

from __future__ import annotations

import dspy

from hiera_dspy.errors import HieraError
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.baselines import Baseline, binary_view, definitions, restrict
from signatures.debate import DebateOpening, DebateTurn, GradeRelevant


class Debater(dspy.Module):
    """One debater: its opening (stance fixed) and its critique turns (stance free)."""

    def __init__(self, initial_stance: str):
        super().__init__()
        self.initial_stance = initial_stance
        self.opening = dspy.Predict(DebateOpening)
        self.turn = dspy.Predict(DebateTurn)


def transcript(history: list[dict]) -> str:
    """The debate so far, one line per turn (round, debater, stance, argument)."""
    return "\n".join(f"Round {t['round']}, {t['agent']} ({t['stance']}): {t['argument']}" for t in history)


class Dream(Baseline):
    """DREAM: an advocate and a skeptic debate the pair; agreement labels it, disagreement escalates it."""
    def __init__(self, ctx: BuildContext, rounds: int = 2, threshold: str | None = None, **config):
        super().__init__(ctx, **config)
        if rounds < 1:
            raise HieraError(f"dream: rounds must be at least 1, got {rounds}")
        self.rounds = rounds
        self.relevant_labels, self.question = binary_view(ctx.scheme, threshold)
        self.advocate, self.skeptic = Debater("relevant"), Debater("not relevant")
        self.grade = dspy.Predict(restrict(GradeRelevant, self.relevant_labels)) if len(self.relevant_labels) > 1 \
            else None

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Returns the agreed label with the debate history, or label None and `escalated` when they never agree."""
        common = dict(query=query, item=self.item(query, item_title, item_text), question=self.question)
        debaters = {"advocate": self.advocate, "skeptic": self.skeptic}
        history = []
        for name, debater in debaters.items():
            out = self.step(f"dream.{name}.round0", debater.opening, assigned_stance=debater.initial_stance, **common)
            history.append({"round": 0, "agent": name, "stance": debater.initial_stance, "argument": out.argument})
        for r in range(1, self.rounds + 1):
            so_far = transcript(history)
            turns = []
            for name, debater in debaters.items():
                out = self.step(f"dream.{name}.round{r}", debater.turn, initial_stance=debater.initial_stance,
                                history=so_far, **common)
                turns.append({"round": r, "agent": name, "stance": out.stance, "argument": out.argument})
            history += turns
            if turns[0]["stance"] == turns[1]["stance"]:
                label = self._label(turns[0]["stance"], common, history)
                return dspy.Prediction(label=label, escalated=False, history=history, rounds=r)
        return dspy.Prediction(label=None, escalated=True, history=history, rounds=self.rounds)

    def _label(self, stance: str, common: dict, history: list[dict]) -> str:
        if stance != "relevant":
            return self.scheme.labels[0]
        if self.grade is None:
            return self.relevant_labels[0]
        return self.step("dream.grade", self.grade, query=common["query"], item=common["item"],
                         label_definitions=definitions(self.scheme, self.relevant_labels),
                         debate=transcript(history)).label


@register("dream", "DREAM (ICLR 2026): opposing-stance two-agent debate; agreement labels, disagreement escalates",
          family="debate", rounds=2, threshold=None, with_knowledge=False, k=None)
def _dream(ctx: BuildContext, **config) -> dspy.Module:
    return Dream(ctx, **config)
