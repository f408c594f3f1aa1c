"""The review queue: the judgments a person should decide, in the order they should see them.

A judgment is queued when DREAM escalated it (its debaters never agreed: no machine label), or when its confidence is
among the `budget` lowest of the rest (LARA's idea: spend people where the machine is least sure). A judgment whose
method reports no confidence at all counts as least sure. Failed judgments are not queued: they have nothing to
review (rerun them with --retry-errors). Escalations come first, then ascending confidence, then run order.
"""

from __future__ import annotations

from typing import NamedTuple

from hiera_dspy.labelling.confidence import Confidence, confidence


class QueueEntry(NamedTuple):
    """A judgment waiting for a person: its row, its confidence, and why it is queued."""
    row: dict
    confidence: Confidence
    reason: str  # "escalated" | "low confidence"


def review_queue(rows: list[dict], budget: int) -> list[QueueEntry]:
    """Escalated judgments, then the `budget` least confident of the others (ties in run order)."""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    judged = [(r, confidence(r)) for r in rows if not r.get("error")]
    escalated = [QueueEntry(r, c, "escalated") for r, c in judged if r.get("escalated")]
    rest = [(r, c) for r, c in judged if not r.get("escalated")]
    rest.sort(key=lambda rc: (rc[1].value is not None, rc[1].value or 0.0, _position(rc[0])))
    return escalated + [QueueEntry(r, c, "low confidence") for r, c in rest[:budget]]


def _position(row: dict) -> tuple:
    pos = row.get("position")
    return (pos is None, pos if pos is not None else 0, str(row.get("id")))
