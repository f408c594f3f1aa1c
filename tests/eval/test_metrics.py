import numpy as np
import pytest

from eval.metrics import bootstrap_ci, classification_metrics, metrics_from_confusion

LABELS = ["0", "1", "2"]
# 6 judged pairs + 1 unlabelled (None). Confusion (rows=gold, cols=pred):
#   gold 0: [1, 1, 0]   gold 1: [0, 2, 0]   gold 2: [1, 0, 1]
# row sums 2,2,2; col sums 2,3,1; correct = 4/6.
GOLD = ["0", "0", "1", "1", "2", "2", "1"]
PRED = ["0", "1", "1", "1", "2", "0", None]
# F1_c = 2tp/(row+col): 2/4=1/2, 4/5, 2/3 -> macro = (15+24+20)/90 = 59/90
# kappa: po = 2/3, pe = (2*2 + 2*3 + 2*1)/36 = 1/3 -> (2/3-1/3)/(1-1/3) = 1/2
# balanced accuracy = mean recall (1/2, 1, 1/2) = 2/3


def test_six_pair_example():
    m = classification_metrics(GOLD, PRED, LABELS)
    assert m["n"] == 6 and m["unlabelled"] == 1 and m["labels"] == LABELS
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["macro_f1"] == pytest.approx(59 / 90)
    assert m["kappa"] == pytest.approx(0.5)
    assert m["balanced_accuracy"] == pytest.approx(2 / 3)
    assert m["confusion"] == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]


def test_vectorised_path_matches_sklearn():
    m = classification_metrics(GOLD, PRED, LABELS)
    v = metrics_from_confusion(np.array(m["confusion"]))
    for k in ("accuracy", "macro_f1", "kappa", "balanced_accuracy"):
        assert float(v[k]) == pytest.approx(m[k])


def test_absent_class_not_counted_in_macro_f1_and_degenerate_kappa():
    # label "2" never occurs: macro over {"0","1"}: F1_0 = 2/3, F1_1 = 2*1/(1+2) = 2/3
    m = classification_metrics(["0", "0", "1"], ["0", "1", "1"], LABELS)
    assert m["macro_f1"] == pytest.approx(2 / 3)
    same = classification_metrics(["0", "0"], ["0", "0"], LABELS)
    assert same["accuracy"] == 1.0 and same["kappa"] is None  # pe = 1 -> undefined


def test_all_unlabelled_and_validation():
    m = classification_metrics(["0", "1"], [None, None], LABELS)
    assert m["n"] == 0 and m["unlabelled"] == 2 and m["accuracy"] is None
    assert m["confusion"] == [[0] * 3] * 3
    assert bootstrap_ci(["0"], [None], LABELS, "accuracy") == (None, None)
    with pytest.raises(ValueError):
        classification_metrics(["0"], ["x"], LABELS)
    with pytest.raises(ValueError):
        classification_metrics(["0"], [], LABELS)
    with pytest.raises(ValueError):
        bootstrap_ci(GOLD, PRED, LABELS, "nope")


@pytest.mark.parametrize("metric", ["accuracy", "macro_f1", "kappa", "balanced_accuracy"])
def test_bootstrap_deterministic_and_contains_point(metric):
    gold, pred = GOLD * 10, PRED * 10  # 60 judged pairs
    point = classification_metrics(gold, pred, LABELS)[metric]
    a = bootstrap_ci(gold, pred, LABELS, metric, n_resamples=500, seed=7)
    assert a == bootstrap_ci(gold, pred, LABELS, metric, n_resamples=500, seed=7)
    assert a != bootstrap_ci(gold, pred, LABELS, metric, n_resamples=500, seed=8)
    assert a[0] < point < a[1]
    assert 0.0 <= a[1] - a[0] < 0.6


def test_bootstrap_narrows_with_alpha():
    wide = bootstrap_ci(GOLD * 10, PRED * 10, LABELS, "accuracy", alpha=0.01)
    narrow = bootstrap_ci(GOLD * 10, PRED * 10, LABELS, "accuracy", alpha=0.2)
    assert wide[0] <= narrow[0] and narrow[1] <= wide[1]
