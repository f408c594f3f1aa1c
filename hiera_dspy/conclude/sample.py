"""The human sample as the conclusions read it: the sampled queries (`Sample`, a record of `hiera_dspy.records`, as
the run store keeps it) and where their labelling stands (`SampleState`). Drawing the sample is
`hiera_dspy.benchmark.sample`'s job, keeping it in the run store `hiera_dspy.review.sample_log`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hiera_dspy.records import Sample  # the record itself: shared with the run store's table (review.sample_log)


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
