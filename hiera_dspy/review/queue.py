"""The review queue: the judgments a person should decide, in the order they should see them.

A judgment is queued when DREAM escalated it (its debaters never agreed: no machine label), or when its confidence is
among the `budget` lowest of the rest (LARA's idea: spend people where the machine is least sure). A judgment whose
method reports no confidence at all counts as least sure. Failed judgments are not queued: they have nothing to
review (rerun them with --retry-errors). Escalations come first, then ascending confidence, then run order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from hiera_dspy.errors import HieraError
from hiera_dspy.review.confidence import Confidence, confidence


class QueueEntry(NamedTuple):
    """A judgment waiting for a person: its row, its confidence, and why it is queued."""
    row: dict
    confidence: Confidence
    reason: str  # "escalated" | "low confidence"


def review_queue(rows: Iterable[Mapping], budget: int) -> list[QueueEntry]:
    """Escalated judgments, then the `budget` least confident of the others (ties in run order). One pass over
    `rows` (a stream from the store is fine): only the escalated and the `budget` least confident so far are kept."""
    if budget < 0:
        raise HieraError(f"--least-sure {budget} (field `budget`): give 0 or more least confident judgments to queue")
    escalated: list[QueueEntry] = []

    def rest():
        for r in rows:
            if r.get("error"):
                continue
            c = confidence(r)
            if r.get("escalated"):
                escalated.append(QueueEntry(r, c, "escalated"))
            else:
                yield r, c

    least = heapq.nsmallest(budget, rest(), key=lambda rc: (rc[1].value is not None, rc[1].value or 0.0,
                                                            _position(rc[0])))
    if budget == 0:  # nsmallest(0, ...) reads nothing: the escalations still have to be found
        for _ in rest():
            pass
    return escalated + [QueueEntry(r, c, "low confidence") for r, c in least]


def _position(row: dict) -> tuple:
    pos = row.get("position")
    return (pos is None, pos if pos is not None else 0, str(row.get("id")))
