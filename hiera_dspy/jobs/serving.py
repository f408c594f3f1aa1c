"""A compiled judge that judges pairs on request (what `hiera_dspy.serve` calls, through `hiera_dspy.api`).

`load_served(path)` rebuilds the artifact's judge once (`hiera_dspy.artifacts.judge_file.load_judge`: the LMs at the
caller's endpoint and key variable, never the artifact's); `ServedJudge.judge(pairs)` judges a batch the way a run
judges a pair (`hiera_dspy.runs.runner.judge_one`: the item screened, every LM call accounted, a failure an error
and never a label) and gives each its label, confidence and distribution (`hiera_dspy.review.confidence`). A judge
that scores in batches (the learned judges' `prefetch`) scores the whole batch in one pass; it holds one lock while
it does, since its batch cache is one per judge.

    >>> served = load_served("artifacts/msrd/embed-lr.json")                                    # doctest: +SKIP
    >>> served.judge([PairRequest("tom cruise spy movie", "Mission: Impossible", "A spy ...")])  # doctest: +SKIP
    [Verdict(id='0', label='Relevant', confidence=0.91, confidence_source='scorer', distribution={...}, error=None)]
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from hiera_dspy.artifacts.format import read_artifact
from hiera_dspy.artifacts.judge_file import load_judge
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.review.confidence import confidence
from hiera_dspy.runs.runner import judge_one, warm


@dataclass(frozen=True)
class PairRequest:
    """One pair to judge: the query, the item's title and text; `id` is echoed back (default: its position)."""

    query: str
    item_title: str = ""
    item_text: str = ""
    id: str | None = None


@dataclass(frozen=True)
class Verdict:
    """A judged pair: its label (None when the judgment failed, and then `error` says why), the confidence in that
    label and where it comes from, and the label distribution when the judge gives one."""

    id: str
    label: str | None
    confidence: float | None
    confidence_source: str
    distribution: dict[str, float] | None
    error: str | None = None


class ServedJudge:
    """A loaded judge: `method`, `scheme`, `path`; `judge(pairs)` -> one Verdict a pair, in order."""

    def __init__(self, program, path: Path, method: str, scheme: LabelScheme):
        self.program, self.path, self.method, self.scheme = program, path, method, scheme
        self.batches = hasattr(program, "prefetch")
        self._lock = threading.Lock() if self.batches else None
        self._first: threading.Lock | None = threading.Lock()  # the first call judges alone (`judge`)

    def judge(self, pairs: Sequence[PairRequest]) -> list[Verdict]:
        """Judge `pairs` (a failure of one is its Verdict's `error`, never an exception or a label). The first call
        runs alone, the others wait for it: what the judge's path imports on first use is imported by one thread."""
        first = self._first
        if first is not None:
            with first:
                if self._first is not None:  # no other call was first
                    try:
                        return self._judge(pairs)
                    finally:
                        self._first = None
        return self._judge(pairs)

    def _judge(self, pairs: Sequence[PairRequest]) -> list[Verdict]:
        batch = [Pair(id=p.id if p.id is not None else str(i), query=p.query, item_title=p.item_title,
                      item_text=p.item_text, label=None, query_id="", item_id="") for i, p in enumerate(pairs)]
        with self._lock or nullcontext():
            if self.batches and batch:
                warm(self.program.prefetch, batch)  # on the screened inputs, as a run scores its batches
            rows = [judge_one(self.program, pair) for pair in batch]
        return [_verdict(row.to_dict()) for row in rows]


def _verdict(row: dict) -> Verdict:
    conf = confidence(row)
    return Verdict(id=row["id"], label=row.get("label") if not row.get("error") else None, confidence=conf.value,
                   confidence_source=conf.source, distribution=conf.distribution, error=row.get("error"))


def load_served(path: str | Path, *, api_base: str | None = None, api_key_env: str | None = None) -> ServedJudge:
    """The judge of the artifact at `path`, ready to serve (ArtifactError for a file that is not one)."""
    doc = read_artifact(path)
    program = load_judge(path, api_base=api_base, api_key_env=api_key_env, doc=doc)
    return ServedJudge(program, Path(path), doc["method"], LabelScheme.from_dict(doc["scheme"]))
