"""Which pairs a judge learns from: a split of the dataset (optionally a stated, seeded subsample) plus a person's
decisions from labelling runs, and the record of it the artifact keeps (`training`).

    optimize.compile --dataset msrd --split pool --train-limit 20000        # 20,000 of the pool's ~108,700 pairs
    optimize.compile --train-from RUN_ID --judge ART --out NEW              # ART's split + the run's decisions
"""

from __future__ import annotations

import random
import resource
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from hiera_dspy.records import Pair
from hiera_dspy.review.gold import decided_pairs, with_decisions
from hiera_dspy.store.run_store import RunStore


@dataclass
class TrainingSource:
    """Where a judge's train pairs come from: `split` of `dataset`, at most `limit` of them (seeded sample), plus
    the decisions of the runs `from_runs` (run id -> decisions learned from)."""

    dataset: str
    split: str = "train"
    limit: int | None = None
    seed: int = 42
    from_runs: dict[str, int] = field(default_factory=dict)
    doc: dict | None = field(default=None, repr=False)  # the artifact refitted (--judge), if any

    def pairs(self, split_pairs: Sequence[Pair], store: RunStore | None = None,
              runs: Sequence[str] = ()) -> list[Pair]:
        """The train pairs: the split (capped at `limit` by a seeded sample, order kept), then every decision of
        `runs` (decisions win; `hiera_dspy.review.gold`). Fills `from_runs`."""
        pairs = list(split_pairs)
        if self.limit and len(pairs) > self.limit:
            keep = sorted(random.Random(self.seed).sample(range(len(pairs)), self.limit))
            print(f"training on a seeded sample of {self.limit} of the {len(pairs)} pairs of split {self.split!r} "
                  f"(--train-limit, seed {self.seed})", file=sys.stderr)
            pairs = [pairs[i] for i in keep]
        decided: list[Pair] = []
        for run_id in runs:
            taught = decided_pairs(store, run_id)
            self.from_runs[run_id] = len(taught)
            decided += taught
        if decided:
            print(f"learning from {len(decided)} decisions of {len(self.from_runs)} run(s) besides {len(pairs)} "
                  f"pairs of split {self.split!r} (decisions win)", file=sys.stderr)
        return with_decisions(pairs, decided)

    def identity(self) -> dict:
        """What names a compile's runs beside the compiled state: {} for the plain train split (the ids of
        earlier compiles stay), else the split, limit, seed and runs learned from."""
        if self.split == "train" and not self.limit and not self.from_runs:
            return {}
        return {"split": self.split, "limit": self.limit, "seed": self.seed, "from_runs": dict(self.from_runs)}

    def record(self, n_pairs: int, fit_seconds: float | None = None) -> dict:
        """The artifact's `training` block: dataset, split, limit, seed, pairs, runs and decisions learned from, fit
        time and the process's peak memory."""
        return {"dataset": self.dataset, "split": self.split, "limit": self.limit, "seed": self.seed,
                "pairs": n_pairs, "from_runs": [{"run_id": r, "decisions": n} for r, n in self.from_runs.items()],
                "decisions": sum(self.from_runs.values()), "fit_seconds": fit_seconds, "peak_rss_mb": peak_rss_mb()}

    @classmethod
    def of_artifact(cls, doc: dict) -> TrainingSource:
        """The source an artifact was trained on (an artifact without a `training` block: its dataset's train split),
        with the runs whose decisions it learned from (`from_runs`; their counts are recomputed when refitting)."""
        t = doc.get("training") or {}
        return cls(dataset=t.get("dataset") or doc.get("dataset") or "msrd", split=t.get("split") or "train",
                   limit=t.get("limit"), seed=int(t.get("seed", 42)),
                   from_runs={r["run_id"]: r.get("decisions", 0) for r in t.get("from_runs") or []})


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports KB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
