"""`bench.trecdl_features` on a small synthetic TREC folder, the late-interaction features from word vectors (no
model weights): every pair judged by a late-lr that never saw its query, on each seed and feature set, and the
summary's means and win counts read from the per-seed rows."""

from __future__ import annotations

import numpy as np

from bench import trecdl, trecdl_features
from hiera_dspy.signals import late_interaction
from hiera_dspy.signals.late_interaction import LateInteraction
from hiera_dspy.testing import write_trec_folder
from tests.signals.test_late_interaction import WordEncoder


def test_each_feature_set_is_cross_validated_on_every_seed_and_summarised(tmp_path, monkeypatch):
    folder = write_trec_folder(tmp_path / "trec", queries=15, passages=8, seed=2)
    monkeypatch.setattr(late_interaction, "late_features", LateInteraction(WordEncoder()).features)
    pairs = trecdl.load_pairs(folder, tmp_path)
    gold = np.array([trecdl.LABELS.index(p.label) for p in pairs])
    table = trecdl.late_table(pairs, tmp_path)
    assert (tmp_path / "late_features.npy").is_file() and len(next(iter(table.values()))) == 3
    results = {}
    with trecdl.late_from_table(table):
        for seed in (0, 1):
            for name in ("late", "late+coverage"):
                predicted = trecdl_features.cross_validated(pairs, name, seed, folds=3)
                assert predicted.shape == gold.shape and set(predicted.tolist()) <= {0, 1, 2, 3}
                results[seed, name] = trecdl.agreement(gold, predicted)
    assert results[0, "late"]["kappa"] > 0.2  # the synthetic grades are learnable out of fold
    text = trecdl_features.markdown(results, [0, 1], ["late", "late+coverage"], len(pairs), 3)
    wins = sum(results[s, "late+coverage"]["kappa"] > results[s, "late"]["kappa"] for s in (0, 1))
    mean = np.mean([results[s, "late+coverage"]["kappa"] for s in (0, 1)])
    assert f"| late+coverage | {mean:.3f} ({wins} of 2) |" in text
