"""The human sample as the conclusions read it: the sampled queries (`Sample`) and where their labelling stands
(`SampleState`). Drawing the sample is `hiera_dspy.benchmark.sample`'s job, keeping it in the run store
`hiera_dspy.review.sample_log`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sample:
    """The sampled query ids in draw order, the seed, the method and what was asked for (`8` or `10%`); a stratified
    sample also the number of strata and each query's stratum (0 = least uncertain); an active one each query's
    probability when it was drawn and the draw's weight of every query of the benchmark (the estimates weight by
    the inverse, `hiera_dspy.conclude.sequence`)."""
    queries: list[str]
    seed: int
    method: str
    requested: str
    strata: int | None = None
    stratum: list[int] | None = None
    probabilities: list[float] | None = None
    weights: dict[str, float] | None = None

    @property
    def allocation(self) -> list[int] | None:
        """A stratified sample's number of queries per stratum (least uncertain first); None for a random one."""
        if self.strata is None or self.stratum is None:
            return None
        return [self.stratum.count(h) for h in range(self.strata)]


@dataclass
class SampleState:
    """Where a sample stands: its decided queries (in sample order), the pending ones with how many of their pairs
    are still undecided, and which pending queries are partly labelled."""
    decided: list[str] = field(default_factory=list)
    pending: dict[str, int] = field(default_factory=dict)
    partial: list[str] = field(default_factory=list)
    no_holes: list[str] = field(default_factory=list)

    @property
    def remaining_pairs(self) -> int:
        """Sample pairs a person has not decided yet."""
        return sum(self.pending.values())


def state(sample: Sample, pairs_by_query: dict[str, list[str]], decided_pairs: Iterable[str]) -> SampleState:
    """The sample's state from the run's pairs per query and the ids of the pairs a person decided."""
    done, out = set(decided_pairs), SampleState()
    for q in sample.queries:
        pairs = pairs_by_query.get(q, [])
        left = sum(1 for p in pairs if p not in done)
        if not pairs:
            out.no_holes.append(q)
        if left:
            out.pending[q] = left
            if left < len(pairs):
                out.partial.append(q)
        else:
            out.decided.append(q)
    return out
