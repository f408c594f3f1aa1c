"""metrics.json of a run in one pass over its rows: counts, sums and one number per row, never the rows themselves.

`Tally.add(row)` for each judgment, then `metrics()` gives exactly what `hiera_dspy.metrics.classification.run_metrics` gives for
the same rows (a test holds them equal): the confusion counts give accuracy, macro-F1, kappa and balanced accuracy
(`classification.confusion_metrics`); cost columns come from sums; the latency percentiles from the rows' seconds, kept as
8-byte floats (8 MB for a million rows).

Example:
    >>> tally = Tally(["Irrelevant", "Relevant"])
    >>> for row in store.iter_rows(run_id):  # doctest: +SKIP
    ...     tally.add(row)
    >>> tally.metrics()["kappa"]  # doctest: +SKIP
"""

from __future__ import annotations

import time
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

from hiera_dspy.errors import HieraError
from hiera_dspy.metrics.classification import confusion_metrics, reached_llm
from hiera_dspy.records import Judgment, as_judgment


class Tally:
    """Running counts of a run's rows for metrics.json (see the module doc)."""

    def __init__(self, labels: list[str], binary_from: int | None = None):
        self.labels, self.binary_from = list(labels), binary_from
        self._index = {label: i for i, label in enumerate(self.labels)}
        k = len(self.labels)
        self.cm = np.zeros((k, k + 1), dtype=np.int64)
        self.pairs = self.errors = self.escalations = self.human_labels = self.parse_recovered = 0
        self.tokens_total = 0
        self.done = self.done_tokens = self.done_calls = self.llm = 0
        self.by_role: Counter = Counter()
        self.seconds = array("d")
        self.delegated = self.delegated_known = 0
        self.degraded = 0
        self.degraded_steps: Counter = Counter()
        self.truncated = 0

    def add(self, row: Judgment | Mapping) -> None:
        """Count one judgment."""
        j = as_judgment(row)
        self.pairs += 1
        self.tokens_total += j.tokens
        self.errors += bool(j.error)
        self.escalations += bool(j.escalated)
        self.human_labels += bool(j.human_label)
        self.truncated += bool(j.fields.get("truncated"))
        if j.gold is not None:
            self._confuse(j.gold, j.final_label)
        if j.error:
            return
        self.done += 1
        self.done_tokens += j.tokens
        self.done_calls += j.lm_calls
        self.by_role.update({role: 0 for role in j.tokens_by_role})
        self.by_role.update(j.tokens_by_role)
        if j.seconds is not None:
            self.seconds.append(float(j.seconds))
        if j.delegated is not None:
            self.delegated_known += 1
            self.delegated += bool(j.delegated)
        self.llm += reached_llm(j)
        self.parse_recovered += bool(j.fields.get("parse_recovered"))
        steps = j.fields.get("degraded") or []
        self.degraded += bool(steps)
        self.degraded_steps.update(steps)

    def add_all(self, rows: Iterable[Judgment | Mapping]) -> Tally:
        """Count every row; returns the tally."""
        for row in rows:
            self.add(row)
        return self

    def _confuse(self, gold: str, pred: str | None) -> None:
        bad = [x for x in (gold, pred) if x is not None and x not in self._index]
        if bad:
            raise HieraError(f"labels not in label set {self.labels}: {sorted(map(str, bad))}")
        self.cm[self._index[gold], len(self.labels) if pred is None else self._index[pred]] += 1

    def metrics(self) -> dict:
        """metrics.json content, as `classification.run_metrics` of the same rows."""
        out = confusion_metrics(self.cm, self.labels, self.binary_from)
        out["gold_pairs"] = int(self.cm.sum())
        out.update(self._cost())
        out.update({"pairs": self.pairs, "human_labels": self.human_labels, "parse_recovered": self.parse_recovered,
                    "degraded": self.degraded, "degraded_steps": dict(sorted(self.degraded_steps.items())),
                    "truncated": self.truncated})
        return out

    def _cost(self) -> dict:
        def mean(total, n):
            return total / n if n else None

        secs = np.frombuffer(self.seconds, dtype=np.float64) if len(self.seconds) else None
        return {
            "tokens_per_judgment": mean(self.done_tokens, self.done),
            "lm_calls_per_judgment": mean(self.done_calls, self.done),
            "tokens_by_role": {k: mean(self.by_role[k], self.done) for k in sorted(self.by_role)},
            "tokens_total": int(self.tokens_total),
            "seconds_per_judgment": float(secs.mean()) if secs is not None else None,
            "seconds_p50": float(np.percentile(secs, 50)) if secs is not None else None,
            "seconds_p95": float(np.percentile(secs, 95)) if secs is not None else None,
            "delegation_rate": mean(self.delegated, self.delegated_known),
            "llm_share": mean(self.llm, self.done),
            "errors": self.errors,
            "escalations": self.escalations,
        }


def metrics_from_rows(rows: Iterable[dict], labels: list[str], binary_from: int | None = None) -> dict:
    """metrics.json content (`hiera_dspy.metrics.classification.run_metrics`), counted in one pass over the rows
    (a `Tally`: a stream of a million rows is never held); `binary_from`: the scheme's binary cut (binary kappa)."""
    return Tally(labels, binary_from).add_all(rows).metrics()


def wall_clock(rows: Iterable[Judgment | Mapping], started: float) -> dict:
    """The true time a pair of a run: `wall_seconds` from `started` (a `time.time()` taken when the command began)
    to now, over `pairs_judged`, the rows that finished since (a resumed run's earlier rows are not counted), as
    `wall_ms_per_pair`. A batch-scored judge's rows carry almost no `seconds` each (the batch is timed once); this
    counts the batch, loading and fitting too."""
    now = time.time()
    judged = sum(1 for row in rows if (as_judgment(row).finished or 0) >= started)
    wall = now - started
    return {"wall_seconds": wall, "pairs_judged": judged,
            "wall_ms_per_pair": 1000 * wall / judged if judged else None}
