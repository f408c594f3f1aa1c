"""ce-blend: a cross-encoder fine-tuned on the train pairs (`signals/cross_encoder.py`) blended with the learned
scorer, no LM call.

`prepare(train)` holds out `dev_queries` seeded train queries that have both labels (one pair of each: balanced,
like the held-out sets it was measured on), fits the scorer and fine-tunes the cross-encoder on the other queries'
pairs, and chooses on the held-out pairs the weight w (0, 0.1, ..., 1) and the threshold (0.2 ... 0.8) of
w * P_ce(relevant) + (1 - w) * P_scorer(relevant) with the highest kappa. bench/cross_encoder.py measures exactly
this on MSRD (whole pool, 12,000 cross-encoder pairs): kappa 0.788 [0.745, 0.829] on 800 held-out pairs at ~0.05 s a
pair on 2 cores, McNemar against embed-lr 300 p=0.0015.

The fine-tuned weights (~90 MB) live beside the artifact, in the folder `save_files` writes (`<artifact>.weights/`,
every file's SHA-256 in the artifact's `extra`); `load_files` checks them. Two-label schemes only.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import dspy
import numpy as np

from hiera_dspy.methods import BuildContext, register
from hiera_dspy.methods.learning import Learner
from hiera_dspy.methods.signals import SCORER, SCORER_OPTIONS, ScorerState
from hiera_dspy.metrics.agreement import kappa_of_labels
from hiera_dspy.records import Pair

CE = {"ce_pairs": 12000, "ce_max_len": 128, "ce_lr": 5e-5, "dev_queries": 150, "seed": 0}
WEIGHTS = tuple(np.linspace(0, 1, 11))
THRESHOLDS = tuple(np.linspace(0.2, 0.8, 25))


def dev_split(pairs: Sequence[Pair], labels: Sequence[str], n_queries: int, seed: int) -> tuple[list[Pair], list[Pair]]:
    """(fit pairs, dev pairs): `n_queries` seeded queries having both labels (at most half of those) give one pair of
    each label to dev, and none of their pairs to fit."""
    by_query: dict[str, dict[str, list[Pair]]] = {}
    for p in pairs:
        by_query.setdefault(p.query_id or p.query, {}).setdefault(p.label, []).append(p)
    both = sorted(q for q, d in by_query.items() if all(d.get(label) for label in labels))
    rng = random.Random(seed)
    chosen = rng.sample(both, min(n_queries, len(both) // 2))
    if not chosen:
        raise ValueError("ce-blend needs train queries with pairs of both labels to choose its blend on; found "
                         f"{len(both)}")
    dev = [rng.choice(by_query[q][label]) for q in chosen for label in (labels[-1], labels[0])]
    skip = set(chosen)
    return [p for p in pairs if (p.query_id or p.query) not in skip], dev


def choose_blend(gold: Sequence[str], scorer_p, ce_p, labels: Sequence[str],
                 weights=WEIGHTS) -> tuple[float, float, float]:
    """(kappa, w, threshold) with the highest kappa of `blend_labels` on the dev pairs (ties: the larger w, then
    threshold)."""
    return max((kappa_of_labels(list(gold), blend_labels(scorer_p, ce_p, w, th, labels)), float(w), float(th))
               for w in weights for th in THRESHOLDS)


def blend_labels(scorer_p, ce_p, w: float, threshold: float, labels: Sequence[str]) -> list[str]:
    """The top label where w * ce_p + (1 - w) * scorer_p >= threshold, else the other."""
    mixed = w * np.asarray(ce_p, dtype=float) + (1 - w) * np.asarray(scorer_p, dtype=float)
    return [labels[-1] if v >= threshold else labels[0] for v in mixed]


class CrossBlendProgram(Learner, dspy.Module):
    """The learned scorer and a fine-tuned cross-encoder, blended (see the module doc)."""

    def __init__(self, ctx: BuildContext, *, embedder: str, C: float, ce_pairs: int, ce_max_len: int, ce_lr: float,
                 dev_queries: int, seed: int, **options):
        super().__init__()
        if len(ctx.scheme.labels) != 2:
            raise ValueError(f"ce-blend takes two-label schemes; {ctx.scheme.name} has {len(ctx.scheme.labels)} labels")
        self.scheme, self.train = ctx.scheme, [p for p in ctx.train if p.label in ctx.scheme.labels]
        self.scorer_state = ScorerState(ctx.scheme, self.train, embedder, C, **options)
        self.ce_options = {"train_pairs": ce_pairs, "max_len": ce_max_len, "lr": ce_lr, "seed": seed}
        self.dev_queries, self.seed = dev_queries, seed
        self.encoder = None
        self.blend: dict | None = None
        self.digests: dict[str, str] | None = None
        self._prefetched: dict[tuple[str, str, str], float] = {}  # the last prefetch's cross-encoder scores

    def prepare(self, train: Sequence[Pair] | None = None, dev: Sequence[Pair] | None = None):
        """Fit the scorer and fine-tune the cross-encoder on `train` (default: the build context's) minus the dev
        queries, then choose the blend on them; `dev` is unused (the choice needs pairs neither model saw)."""
        from hiera_dspy.signals.cross_encoder import fine_tune

        pairs = [p for p in (train or self.train) if p.label in self.scheme.labels]
        labels = self.scheme.labels
        fit, held = dev_split(pairs, labels, self.dev_queries, self.seed)
        self.scorer_state.fit(fit)
        self.encoder = fine_tune(fit, self.scheme, **self.ce_options)
        held_triples = [(p.query, p.item_title, p.item_text) for p in held]
        self.encoder.accelerate(held_triples)  # ONNX Runtime from here on (int8 if it keeps the labels on held)
        scorer_p = [self._scorer_p(p.query, p.item_title, p.item_text) for p in held]
        ce_p = self.encoder.scores(held_triples)
        kappa, w, th = choose_blend([p.label for p in held], scorer_p, ce_p, labels)
        self.blend = {"weight": w, "threshold": th, "dev_kappa": kappa, "dev_pairs": len(held), "fit_pairs": len(fit),
                      "ce_pairs": getattr(self.encoder, "train_pairs", None)}
        self.digests, self._prefetched = None, {}  # new weights: saved by the next save_files
        return self

    def learned_from(self) -> list[str]:
        """What each part learned from, for the compile's report (after `prepare`)."""
        if self.blend is None:
            return []
        b = self.blend
        ce = f"{b['ce_pairs']:,} of them" if b.get("ce_pairs") is not None else "them"
        return [f"scorer: {b['fit_pairs']:,} pairs", f"cross-encoder: {ce} (one epoch)",
                f"blend weight {b['weight']:.1f}, threshold {b['threshold']:.2f}: chosen on {b['dev_pairs']} held-out "
                f"pairs of {b['dev_pairs'] // 2} train queries neither model saw (kappa {b['dev_kappa']:.3f} there)"]

    def _scorer_p(self, query: str, item_title: str, item_text: str) -> float:
        return self.scorer_state.score(query, item_title, item_text)[self.scheme.labels[-1]]

    def prefetch(self, pairs: Sequence[Pair]) -> None:
        """Score pairs about to be judged with the cross-encoder in batches (`forward` then reads their scores);
        only the last call's pairs are kept, so memory stays bounded by one batch of work."""
        if self.encoder is not None and pairs:
            keys = [(p.query, p.item_title, p.item_text) for p in pairs]
            self._prefetched = dict(zip(keys, (float(v) for v in self.encoder.scores(keys))))

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """The blended P(top label), thresholded; `scores` is the blend as a distribution."""
        if self.encoder is None or self.blend is None:
            raise RuntimeError("ce-blend is not fitted: call prepare(train) or load a compiled artifact")
        labels = self.scheme.labels
        scorer_p = self._scorer_p(query, item_title, item_text)
        ce_p = self._prefetched.get((query, item_title, item_text))
        if ce_p is None:
            ce_p = float(self.encoder.scores([(query, item_title, item_text)])[0])
        w = self.blend["weight"]
        mixed = w * ce_p + (1 - w) * scorer_p
        label = labels[-1] if mixed >= self.blend["threshold"] else labels[0]
        return dspy.Prediction(label=label, scores={labels[0]: 1 - mixed, labels[-1]: mixed}, cross_encoder=ce_p,
                               scorer=scorer_p, routed="scorer", reached_llm=False, delegated=False)

    def dump_extra(self) -> dict | None:
        """The scorer, the blend and the SHA-256 of every weight file (the weights: `save_files`)."""
        if self.blend is None:
            return None
        return {"scorer": self.scorer_state.dump(), "blend": self.blend, "cross_encoder": self.digests}

    def load_extra(self, extra: dict) -> None:
        """Restore the scorer and the blend; the weights come with `load_files`."""
        self.scorer_state.load(extra["scorer"])
        self.blend, self.digests = dict(extra["blend"]), extra["cross_encoder"]

    def save_files(self, folder: Path) -> None:
        """Write the cross-encoder's weights into `folder` and record their digests for `dump_extra`."""
        if self.encoder is not None:
            self.digests = self.encoder.save(folder)

    def load_files(self, folder: Path) -> None:
        """Load the weights `save_files` wrote, checked against the recorded digests (ValueError otherwise)."""
        from hiera_dspy.signals.cross_encoder import CrossEncoder

        if not self.digests:
            raise ValueError("the artifact records no cross-encoder weights: refit it (optimize.compile)")
        self.encoder = CrossEncoder.load(folder, self.digests, self.ce_options["max_len"])
        self._prefetched = {}


@register("ce-blend", "A cross-encoder (MiniLM fine-tuned on train) blended with the learned scorer; weight and "
          "threshold chosen on held-out train queries; no LM call", family="signals", lm_roles=(),
          options=SCORER_OPTIONS, **SCORER, **CE)
def _ce_blend(ctx: BuildContext, **config) -> CrossBlendProgram:
    return CrossBlendProgram(ctx, **config)
