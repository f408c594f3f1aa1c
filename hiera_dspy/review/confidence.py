"""How sure the machine is of each judgment, and where that number comes from.

Sources, first that applies wins (a registry: a new source is one function and one line in `SOURCES`):
- `logprobs`: the label distribution a single-call judge read from token log-probabilities (`label_probs` or
  `distribution` in the prediction); confidence = probability of the given label.
- `dream-agreement`: DREAM's debate; escalated (no agreement) = 0.0, else the share of the debate turns after the
  openings whose stance is the agreed one (1.0 when both agreed in round 1, 0.75 after one disagreement round).
- `vote-share`: an ensemble's votes (`votes`, a list or name -> label); confidence = share voting for the label.
- `scorer`: the learned scorer's probability of its label (embed-lr, and the pairs a cascade's scorer kept).
- `none`: nothing above; confidence is None and the source says so.

Example:
    >>> confidence({"label": "Relevant", "fields": {"scores": {"Irrelevant": 0.2, "Relevant": 0.8}}})
    Confidence(value=0.8, source='scorer', distribution={'Irrelevant': 0.2, 'Relevant': 0.8})
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, NamedTuple


class Confidence(NamedTuple):
    """A judgment's confidence: the value (None when unknown), its source, and the label distribution if any."""
    value: float | None
    source: str
    distribution: dict[str, float] | None = None


def _logprobs(row: dict, fields: dict) -> Confidence | None:
    dist = fields.get("label_probs") or fields.get("distribution")
    if not isinstance(dist, dict) or not dist:
        return None
    dist = {str(k): float(v) for k, v in dist.items()}
    return Confidence(dist.get(row.get("label"), 0.0) if row.get("label") else None, "logprobs", dist)


def _dream(row: dict, fields: dict) -> Confidence | None:
    history = fields.get("history")
    if not isinstance(history, list) or not history or not all(isinstance(t, dict) and "stance" in t for t in history):
        return None
    if row.get("escalated") or fields.get("escalated"):
        return Confidence(0.0, "dream-agreement")
    turns = [t for t in history if t.get("round", 0) >= 1]
    if not turns:
        return None
    agreed = turns[-1]["stance"]
    return Confidence(sum(t["stance"] == agreed for t in turns) / len(turns), "dream-agreement")


def _votes(row: dict, fields: dict) -> Confidence | None:
    votes = fields.get("votes")
    if isinstance(votes, dict):
        votes = list(votes.values())
    if not isinstance(votes, list) or not votes or not row.get("label"):
        return None
    counts = Counter(map(str, votes))
    dist = {label: n / len(votes) for label, n in counts.items()}
    return Confidence(dist.get(row["label"], 0.0), "vote-share", dist)


def _scorer(row: dict, fields: dict) -> Confidence | None:
    scores = fields.get("scores")
    if not isinstance(scores, dict) or not scores or not row.get("label"):
        return None
    if fields.get("routed") == "llm":  # the LLM gave the label; the scorer's number is not its confidence
        return None
    dist = {str(k): float(v) for k, v in scores.items()}
    return Confidence(dist.get(row["label"], 0.0), "scorer", dist)


SOURCES: list[tuple[str, Callable[[dict, dict], Confidence | None]]] = [
    ("logprobs", _logprobs), ("dream-agreement", _dream), ("vote-share", _votes), ("scorer", _scorer),
]


def confidence(row: dict) -> Confidence:
    """The confidence of one stored judgment (a run-store row: `label`, `escalated`, `fields`, `error`)."""
    if row.get("error"):
        return Confidence(None, "none (the judgment failed)")
    fields = row.get("fields") or {}
    for _name, source in SOURCES:
        found = source(row, fields)
        if found is not None:
            return found
    return Confidence(None, "none (this method reports no label distribution, votes or agreement)")
