"""The field's agreement measures: binary kappa on the scheme's binary view, Krippendorff's alpha (ordinal, the
krippendorff package), quadratic kappa and their bootstrap CIs, from the same confusion counts a tally keeps."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from hiera_dspy.labels import get_scheme
from hiera_dspy.metrics.agreement import binary_confusion, confusion, ordinal_alpha, ordinal_alpha_batch
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics
from hiera_dspy.runs.tally import metrics_from_rows

TREC = list(get_scheme("trec").labels)
GOLD = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0, 1, 2, 3]
PRED = [0, 1, 0, 1, 2, 0, 2, 3, 1, 3, 2, None, 0, 0, 3, 3]


def _labels(grades):
    return [None if g is None else TREC[g] for g in grades]


def test_the_binary_view_is_the_schemes_cut():
    scheme = get_scheme("trec")
    assert scheme.binary_from == 2 and scheme.binary("Related") == "not relevant"
    assert scheme.binary("Highly relevant") == "relevant" and scheme.binary(None) is None
    assert get_scheme("msrd").binary_from == 1


def test_binary_kappa_is_kappa_of_the_folded_labels():
    m = classification_metrics(_labels(GOLD), _labels(PRED), TREC, binary_from=2)
    answered = [(g, p) for g, p in zip(GOLD, PRED) if p is not None]
    expected_cm = [[sum(g < 2 and p < 2 for g, p in answered), sum(g < 2 and p >= 2 for g, p in answered), 0],
                   [sum(g >= 2 and p < 2 for g, p in answered), sum(g >= 2 and p >= 2 for g, p in answered), 1]]
    assert m["binary_confusion"] == expected_cm
    fold = ["rel" if g >= 2 else "not" for g in GOLD], ["rel" if p is not None and p >= 2 else
                                                        ("none" if p is None else "not") for p in PRED]
    assert m["binary_kappa"] == pytest.approx(cohen_kappa_score(*fold))


def test_alpha_is_the_krippendorff_packages_over_the_labelled_pairs():
    data = [GOLD, [np.nan if p is None else p for p in PRED]]
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    cm = confusion(_labels(GOLD), _labels(PRED), TREC)
    assert ordinal_alpha(cm) == pytest.approx(expected)
    assert np.isnan(ordinal_alpha(np.zeros((4, 5), dtype=int)))
    assert ordinal_alpha(confusion(TREC, TREC, TREC)) == pytest.approx(1.0)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_vectorised_alpha_of_bootstrap_resamples_is_the_packages(k):
    rng = np.random.default_rng(k)
    cms = rng.integers(0, 7, size=(40, k, k + 1))
    cms[0] = 0
    cms[0, 0, 0] = 1  # one pair: undefined
    batch = ordinal_alpha_batch(cms)
    one_by_one = np.array([ordinal_alpha(cm) for cm in cms])
    assert np.isnan(batch[0]) and np.isnan(one_by_one[0])
    assert batch[1:] == pytest.approx(one_by_one[1:], abs=1e-12)


def test_binary_confusion_folds_any_batch_of_matrices():
    cms = np.stack([confusion(_labels(GOLD), _labels(PRED), TREC)] * 3)
    folded = binary_confusion(cms, 2)
    assert folded.shape == (3, 2, 3) and folded.sum() == 3 * len(GOLD)
    with pytest.raises(ValueError, match="leaves no label"):
        binary_confusion(cms, 0)


def test_cis_cover_their_point_and_need_the_cut():
    gold, pred = _labels(GOLD) * 5, _labels(PRED) * 5
    m = classification_metrics(gold, pred, TREC, binary_from=2)
    for name in ("binary_kappa", "krippendorff_alpha"):
        low, high = bootstrap_ci(gold, pred, TREC, name, binary_from=2, n_resamples=200)
        assert low < m[name] < high
    with pytest.raises(ValueError, match="needs binary_from"):
        bootstrap_ci(gold, pred, TREC, "binary_kappa")


def test_a_tally_gives_the_same_field_measures():
    rows = [{"id": str(i), "gold": g, "label": p, "error": None if p else "boom"}
            for i, (g, p) in enumerate(zip(_labels(GOLD), _labels(PRED)))]
    tallied = metrics_from_rows(rows, TREC, 2)
    direct = classification_metrics(_labels(GOLD), _labels(PRED), TREC, binary_from=2)
    for name in ("binary_kappa", "krippendorff_alpha", "binary_confusion", "weighted_kappa"):
        assert tallied[name] == direct[name]


def test_resampling_whole_queries_widens_the_interval_when_a_querys_pairs_agree_together():
    from hiera_dspy.metrics.classification import bootstrap_cis

    gold, pred, queries = [], [], []
    for q in range(20):  # a query's 10 pairs are all right or all wrong together
        for i in range(10):
            g = TREC[i % 4]
            gold.append(g)
            pred.append(g if q % 3 else TREC[(i + 1) % 4])
            queries.append(f"q{q}")
    by_pair = bootstrap_cis(gold, pred, TREC, ["kappa", "krippendorff_alpha"], n_resamples=300)
    by_query = bootstrap_cis(gold, pred, TREC, ["kappa", "krippendorff_alpha"], n_resamples=300, groups=queries)
    for name in by_pair:
        assert by_query[name][1] - by_query[name][0] > 1.3 * (by_pair[name][1] - by_pair[name][0])
    with pytest.raises(ValueError, match="3 keys for 200 pairs"):
        bootstrap_cis(gold, pred, TREC, ["kappa"], groups=queries[:3])
