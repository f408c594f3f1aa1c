"""The ensemble and collaboration baselines: prompt-blender, llm-blender, collabeval (family "baseline").

LLM pools come from the ensemble pool `ctx.lms.ensemble` (name -> dspy.LM, set by `--blend-lms a,b,c`). Without a
pool, llm-blender and collabeval's agents fall back to the judge LM under different names: at temperature 0 those
voters agree (and a cached LM answers the repeats for free), so that fallback is for smoke tests, not for the paper's
comparison.
"""

from __future__ import annotations

from collections import Counter

import dspy

from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.baselines import BASELINE, Baseline
from signatures import with_labels
from signatures.baselines import PERSONAS, AgentDiscussion, AgentJudgment, FinalJudgment, ZeroShotJudgment


def vote(labels: list[str], scheme: LabelScheme) -> str:
    """Majority vote; a tie goes to the tied label closest to the median vote (scheme order), then to the less
    relevant one. E.g. [Exact, Irrelevant, Substitute] -> Substitute; [Exact, Exact, Irrelevant, Irrelevant] ->
    Irrelevant."""
    counts = Counter(labels)
    top = max(counts.values())
    tied = [label for label in scheme.labels if counts.get(label) == top]
    ranks = sorted(scheme.labels.index(label) for label in labels)
    median = (ranks[(len(ranks) - 1) // 2] + ranks[len(ranks) // 2]) / 2
    return min(tied, key=lambda label: (abs(scheme.labels.index(label) - median), scheme.labels.index(label)))


def pool(ctx: BuildContext, n: int) -> dict[str, RoleLMs]:
    """name -> RoleLMs whose judge is that LM: the ensemble pool (each built on first use), else the judge LM n times
    as judge-1..judge-n."""
    if ctx.lms.ensemble:
        return {name: ctx.lms.member(name) for name in ctx.lms.ensemble}
    return {f"judge-{i}": RoleLMs.of(judge=ctx.lms.for_role("judge")) for i in range(1, n + 1)}


class PromptBlender(Baseline):
    """`n_prompts` formulations (personas/instructions, signatures.baselines.PERSONAS) on the judge LM, then `vote`."""

    def __init__(self, ctx: BuildContext, n_prompts: int = 3, **config):
        super().__init__(ctx, **config)
        if not 1 <= n_prompts <= len(PERSONAS):
            raise HieraError(f"prompt-blender: n_prompts must be 1..{len(PERSONAS)}, got {n_prompts}")
        signature = with_labels(ZeroShotJudgment, ctx.scheme)
        self.judges = [dspy.Predict(signature.with_instructions(persona)) for persona in PERSONAS[:n_prompts]]

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Returns the majority label of the prompt variants, with their votes."""
        item = self.item(query, item_title, item_text)
        votes = [self.step(f"prompt_blender.prompt{i}", judge, query=query, item=item,
                           label_definitions=self.scheme.describe()).label for i, judge in enumerate(self.judges, 1)]
        return dspy.Prediction(label=vote(votes, self.scheme), votes=votes, evidence=f"votes: {votes}")


@register("prompt-blender", "Prompt-Blender (Rahmani et al. 2025, JudgeBlender): several prompt formulations on one "
          "LM, majority vote", n_prompts=3, **BASELINE)
def _prompt_blender(ctx: BuildContext, **config) -> dspy.Module:
    return PromptBlender(ctx, **config)


class LLMBlender(Baseline):
    """The same zero-shot prompt on every LM of the pool (`ctx.lms.ensemble`; without one, the judge LM `n_models`
    times as judge-1..n), each accounted under role "judge", then `vote`."""

    def __init__(self, ctx: BuildContext, n_models: int = 3, **config):
        super().__init__(ctx, **config)
        self.pool = pool(ctx, n_models)
        self.judges = {name: dspy.Predict(with_labels(ZeroShotJudgment, ctx.scheme)) for name in self.pool}

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Returns the majority label of the pool's LMs, with each LM's vote."""
        item = self.item(query, item_title, item_text)
        votes = {name: self.step(f"llm_blender.{name}", judge, lms=self.pool[name], query=query, item=item,
                                 label_definitions=self.scheme.describe()).label
                 for name, judge in self.judges.items()}
        return dspy.Prediction(label=vote(list(votes.values()), self.scheme), votes=votes, evidence=f"votes: {votes}")


@register("llm-blender", "LLM-Blender (Rahmani et al. 2025, JudgeBlender): several LMs (--blend-lms), majority vote",
          n_models=3, **BASELINE)
def _llm_blender(ctx: BuildContext, **config) -> dspy.Module:
    return LLMBlender(ctx, **config)


def _judgment(turn: dict) -> str:
    return f"Evaluator {turn['agent']} (round {turn['round']}): {turn['label']}. {turn['rationale']}"


class CollabEval(Baseline):
    """`n_agents` evaluators judge independently, then discuss for `rounds` rounds (each sees the others' latest
    labels and rationales and may revise), then a final judge (judge LM) decides from the whole discussion.
    Evaluator i runs on the i-th LM of the ensemble pool (cycled; the judge LM without a pool) with persona i of
    signatures.baselines.PERSONAS, so that one LM still gives distinct perspectives."""

    def __init__(self, ctx: BuildContext, n_agents: int = 3, rounds: int = 1, **config):
        super().__init__(ctx, **config)
        self.rounds = rounds
        lms = list(pool(ctx, 1).values())
        self.agent_lms = [lms[i % len(lms)] for i in range(n_agents)]
        judgment, discussion = with_labels(AgentJudgment, ctx.scheme), with_labels(AgentDiscussion, ctx.scheme)
        personas = [PERSONAS[i % len(PERSONAS)] for i in range(n_agents)]
        self.initial = [dspy.Predict(judgment.with_instructions(f"{p} {judgment.instructions}")) for p in personas]
        self.discuss = [dspy.Predict(discussion.with_instructions(f"{p} {discussion.instructions}")) for p in personas]
        self.final = dspy.Predict(with_labels(FinalJudgment, ctx.scheme))

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Returns the final label after the agents' discussion rounds, with the discussion history and last votes."""
        item = self.item(query, item_title, item_text)
        common = dict(query=query, item=item, label_definitions=self.scheme.describe())
        latest = [self._turn(f"collabeval.agent{i}.judge", self.initial[i - 1], i, 0, common)
                  for i in range(1, len(self.initial) + 1)]
        history = list(latest)
        for r in range(1, self.rounds + 1):
            latest = [self._turn(f"collabeval.agent{i}.round{r}", self.discuss[i - 1], i, r, common,
                                 your_judgment=_judgment(latest[i - 1]),
                                 other_judgments="\n".join(_judgment(t) for t in latest if t["agent"] != i))
                      for i in range(1, len(self.discuss) + 1)]
            history += latest
        final = self.step("collabeval.final", self.final, discussion="\n".join(map(_judgment, history)), **common)
        return dspy.Prediction(label=final.label, history=history, votes=[t["label"] for t in latest],
                               parse_recovered=final.get("parse_recovered"))

    def _turn(self, name: str, predictor: dspy.Predict, agent: int, round_: int, common: dict, **inputs) -> dict:
        out = self.step(name, predictor, lms=self.agent_lms[agent - 1], **common, **inputs)
        return {"round": round_, "agent": agent, "label": out.label, "rationale": out.get("rationale") or ""}


@register("collabeval", "CollabEval (Qian et al. 2025): independent evaluators, discussion rounds, a final judge",
          n_agents=3, rounds=1, **BASELINE)
def _collabeval(ctx: BuildContext, **config) -> dspy.Module:
    return CollabEval(ctx, **config)
