"""Votes for any LLM method: N samples of one judgment, the label their vote, their spread its confidence.

`build("thomas", ctx, samples=5, temperature=0.7)` (or the name `thomas@5`, as eval.ablate's grids write it; the
flags `--samples 5 --temperature 0.7`) wraps the method's program in `Votes`. Each sample is the whole judgment of the
wrapped program under `hiera_dspy.lm.vote_samples.sample(i, temperature)`: every LM call of sample i is a distinct
request (its own rollout id, and its own seed on the embedded model), so the response cache never answers one
sample for another, and a resumed run finds each finished sample in the cache, booked at its cost.

**Anchored**: with N > 1 the first sample is the LM's own answer (its own temperature and request: greedy on the
embedded model, and the cached answer of a one-sample run of the same judge), and samples 2..N are at the vote's
temperature. The vote then starts from the answer one sample would give and the other samples overturn it only by a
majority: on the embedded model (100 MSRD dev pairs, zero-shot) five unanchored votes at 0.3 lost 0.02 of kappa to
the greedy answer, anchored ones none, with the same calibration (docs/local-model.md). A team that ran one sample
and then asks for five pays for four more. With N = 1, `--temperature` is the one sample's temperature.

The label is the median vote (`median_vote`): the samples' labels sorted by grade (least relevant first); with an odd
count the middle one; with an even count the two middle ones, and when they differ the one with more votes, then the
less relevant (a relevance claim needs a majority of the samples behind it). For a binary scheme and an odd N this
is the majority. A sample without a label (DREAM's debaters did not agree) abstains; a judgment whose every sample
abstains is escalated. A sample that fails fails the judgment (a failure is never a vote).

The outputs: `label`, `votes` (the labels of the samples that voted, in sample order), `abstained`, `samples`,
`temperature`, and `delegated` when a sample delegated. The share of votes for each label is the judgment's
distribution, its share for the label the confidence (`hiera_dspy.review.confidence`, source `vote-share`), which
the review queue orders by, escalation reads and the conclusions' label distributions take.

Why the median: the grades are ordered, and a majority over four grades can elect an outlier (Exact, Exact,
Irrelevant, Irrelevant, Complement: no majority; the median says Complement, between the camps). UMBRELA's
first issue asks for majority voting; for binary schemes and odd N the two agree.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Sequence

import dspy

from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.lm import vote_samples
from hiera_dspy.methods.learning import Learner, learned_state, prepare

DEFAULT_TEMPERATURE = 0.3  # N > 1 samples with no --temperature (at 0 they would be one answer N times; on the
# embedded model, 100 MSRD dev pairs, 5 unanchored votes at 0.3 kept kappa 0.260 of 0.280 where 0.7 fell to 0.160;
# anchored, on 200 pairs, 0.241 against 0.210: docs/local-model.md)
_NAME_AT = re.compile(r"^(?P<method>.+)@(?P<samples>\d+)$")


def split_name(name: str) -> tuple[str, dict]:
    """A grid's method name -> (registered name, config): `thomas@5` -> ("thomas", {"samples": 5}); a plain name is
    returned as it is with no config."""
    found = _NAME_AT.match(name)
    if not found:
        return name, {}
    return found["method"], {"samples": int(found["samples"])}


def vote_config(samples: int | None, temperature: float | None, anchored: bool | None = None) -> dict:
    """The config keys a run records for its votes: none for one sample at the LM's own temperature (so such a run
    keeps its old id); else `samples`, the temperature actually used (DEFAULT_TEMPERATURE when N > 1 and none is
    given) and, with N > 1, `anchored` (the first sample is the LM's own answer, module doc; unless `anchored` is
    False)."""
    samples = samples or 1
    if samples > 1 and temperature is None:
        temperature = DEFAULT_TEMPERATURE
    if samples > 1 and temperature == 0:
        raise HieraError(f"{samples} samples at temperature 0 are one answer {samples} times: give a temperature > 0")
    out: dict = {}
    if samples > 1:
        out["samples"] = samples
    if temperature is not None:
        out["temperature"] = float(temperature)
    if samples > 1:
        out["anchored"] = anchored is not False
    return out


def with_votes(program: dspy.Module, scheme: LabelScheme, voting: dict) -> dspy.Module:
    """`program` wrapped in `Votes` as `voting` (from `vote_config`) asks, its method, config and LM roles kept with
    the vote's keys added to the config (so to the run id); `program` itself for an empty `voting`."""
    if not voting:
        return program
    wrapped = Votes(program, scheme, voting.get("samples", 1), voting["temperature"], bool(voting.get("anchored")))
    wrapped.method = getattr(program, "method", type(program).__name__)
    wrapped.config = {**getattr(program, "config", {}), **voting}
    wrapped.lm_roles = getattr(program, "lm_roles", None)
    return wrapped


def median_vote(labels: Sequence[str], scheme: LabelScheme) -> str:
    """The median grade of `labels` (see the module doc for an even count). E.g. [Exact, Irrelevant, Substitute] ->
    Substitute; [Relevant, Relevant, Irrelevant, Irrelevant] -> Irrelevant."""
    if not labels:
        raise HieraError("a vote needs at least one label")
    ranks = sorted(scheme.labels.index(label) for label in labels)
    low, high = ranks[(len(ranks) - 1) // 2], ranks[len(ranks) // 2]
    if low != high:
        counts = Counter(ranks)
        low = high if counts[high] > counts[low] else low
    return scheme.labels[low]


class Votes(Learner, dspy.Module):
    """`samples` judgments of the wrapped program at `temperature` (`anchored`: the first at the LM's own), and their
    median vote.

    The wrapped program is an attribute (`sampled`), so optimizers tune its prompts and `save()` keeps them; a program
    that learns from data (a cascade) is prepared through this one.

    Example:
        >>> program = build("zero-shot", ctx, samples=5)      # or build("zero-shot@5", ctx)  # doctest: +SKIP
        >>> program(query="...", item_title="...", item_text="...").votes                    # doctest: +SKIP
        ['Relevant', 'Relevant', 'Irrelevant', 'Relevant', 'Relevant']
    """

    def __init__(self, program: dspy.Module, scheme: LabelScheme, samples: int, temperature: float,
                 anchored: bool = False):
        super().__init__()
        if samples < 1:
            raise HieraError(f"samples must be at least 1, got {samples}")
        self.sampled = program
        self.scheme, self.samples, self.temperature, self.anchored = scheme, samples, temperature, anchored

    def _sample(self, i: int):
        """The context of sample `i` (the first of an anchored vote is the LM's own request)."""
        return vote_samples.sample(i, self.temperature, own=self.anchored and i == 0)

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Judge the pair `samples` times, one after the other, and vote."""
        outs = []
        for i in range(self.samples):
            with self._sample(i):
                outs.append(self.sampled(query=query, item_title=item_title, item_text=item_text))
        return self._vote(outs)

    async def aforward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The samples at once (each task in its own sample), then the vote."""
        async def one(i: int) -> dspy.Prediction:
            with self._sample(i):
                return await self.sampled.acall(query=query, item_title=item_title, item_text=item_text)

        return self._vote(list(await asyncio.gather(*(one(i) for i in range(self.samples)))))

    def _vote(self, outs: list[dspy.Prediction]) -> dspy.Prediction:
        votes = [out.label for out in outs if out.get("label") is not None and not out.get("escalated")]
        fields: dict = {"votes": votes, "abstained": len(outs) - len(votes), "samples": self.samples,
                        "temperature": self.temperature, "anchored": self.anchored}
        delegated = [out.get("delegated") for out in outs if out.get("delegated") is not None]
        if delegated:
            fields["delegated"] = any(delegated)
        if any(out.get("parse_recovered") for out in outs):
            fields["parse_recovered"] = True
        if not votes:
            return dspy.Prediction(label=None, escalated=True, **fields)
        return dspy.Prediction(label=median_vote(votes, self.scheme), **fields)

    # a program that learns from data is prepared, named and saved through its votes
    def prepare(self, train=None, dev=None):
        """Fit the wrapped program when it learns from data."""
        prepare(self.sampled, train, dev)
        return self

    def learned_state(self) -> dict:
        """The wrapped program's learned state ({} when it learns nothing)."""
        return learned_state(self.sampled)

    def reads_dev_labels(self) -> bool:
        """Whether preparing the wrapped program read the dev labels."""
        return isinstance(self.sampled, Learner) and self.sampled.reads_dev_labels()

    def dump_extra(self):
        """The wrapped program's fitted state beyond its prompts (None when it has none)."""
        dump = getattr(self.sampled, "dump_extra", None)
        return dump() if callable(dump) else None

    def load_extra(self, extra) -> None:
        """Restore what `dump_extra` returned."""
        self.sampled.load_extra(extra)
