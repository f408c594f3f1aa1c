import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, f1_score

from hiera_dspy.metrics.agreement import NO_LABEL
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics, metrics_from_confusion

LABELS = ["0", "1", "2"]
# 7 pairs, the last without a label (None: an error). Confusion (rows=gold, cols=pred, then "(no label)"):
#   gold 0: [1, 1, 0, 0]   gold 1: [0, 2, 0, 1]   gold 2: [1, 0, 1, 0]
GOLD = ["0", "0", "1", "1", "2", "2", "1"]
PRED = ["0", "1", "1", "1", "2", "0", None]
# Every pair: correct 4/7.
#   F1_c = 2tp/(row+col), the unlabelled pair a miss of gold 1: 2/4, 4/6, 2/3 -> macro = (1/2 + 2/3 + 2/3)/3 = 11/18
#   kappa, "(no label)" an extra class: po = 4/7, pe = (2*2 + 3*3 + 2*1 + 0*1)/49 = 15/49
#     -> (28/49 - 15/49) / (34/49) = 13/34
#   balanced accuracy = mean recall (1/2, 2/3, 1/2) = 5/9
# Answered only (the 6 labelled pairs): acc 4/6, F1 (1/2 + 4/5 + 2/3)/3 = 59/90, kappa 1/2, balanced acc 2/3.


def test_seven_pair_example_scores_every_pair():
    m = classification_metrics(GOLD, PRED, LABELS)
    assert (m["n"], m["answered"], m["unlabelled"], m["labels"]) == (7, 6, 1, LABELS)
    assert m["coverage"] == pytest.approx(6 / 7)
    assert m["accuracy"] == pytest.approx(4 / 7)
    assert m["macro_f1"] == pytest.approx(11 / 18)
    assert m["kappa"] == pytest.approx(13 / 34)
    assert m["balanced_accuracy"] == pytest.approx(5 / 9)
    assert m["confusion"] == [[1, 1, 0, 0], [0, 2, 0, 1], [1, 0, 1, 0]]
    assert m["confusion_columns"] == [*LABELS, NO_LABEL]


def test_answered_only_view():
    a = classification_metrics(GOLD, PRED, LABELS)["answered_only"]
    assert a["n"] == 6
    assert a["accuracy"] == pytest.approx(4 / 6) and a["macro_f1"] == pytest.approx(59 / 90)
    assert a["kappa"] == pytest.approx(0.5) and a["balanced_accuracy"] == pytest.approx(2 / 3)


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_matches_sklearn_with_no_label_as_a_class():
    m = classification_metrics(GOLD, PRED, LABELS)
    pred = [NO_LABEL if p is None else p for p in PRED]
    assert m["kappa"] == pytest.approx(cohen_kappa_score(GOLD, pred, labels=[*LABELS, NO_LABEL]))
    assert m["macro_f1"] == pytest.approx(f1_score(GOLD, pred, labels=LABELS, average="macro"))
    assert m["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(GOLD, pred))
    v = metrics_from_confusion(np.array(m["confusion"]))
    for k in ("accuracy", "macro_f1", "kappa", "balanced_accuracy"):
        assert float(v[k]) == pytest.approx(m[k])


def test_an_error_lowers_kappa_it_used_to_hide():
    """Dropping the failed pairs flattered a method: here the labelled pairs are all right."""
    gold, pred = ["0", "1", "0", "1", "0", "1"], ["0", "1", "0", "1", None, None]
    m = classification_metrics(gold, pred, ["0", "1"])
    assert m["answered_only"]["kappa"] == 1.0 and m["answered_only"]["accuracy"] == 1.0
    # po = 4/6, pe = (3*2 + 3*2)/36 = 1/3 -> (2/3 - 1/3) / (2/3) = 1/2
    assert m["kappa"] == pytest.approx(0.5) and m["accuracy"] == pytest.approx(4 / 6)


def test_absent_class_not_counted_in_macro_f1_and_degenerate_kappa():
    # label "2" never occurs: macro over {"0","1"}: F1_0 = 2/3, F1_1 = 2*1/(1+2) = 2/3
    m = classification_metrics(["0", "0", "1"], ["0", "1", "1"], LABELS)
    assert m["macro_f1"] == pytest.approx(2 / 3)
    same = classification_metrics(["0", "0"], ["0", "0"], LABELS)
    assert same["accuracy"] == 1.0 and same["kappa"] is None  # pe = 1 -> undefined


def test_all_unlabelled_and_validation():
    m = classification_metrics(["0", "1"], [None, None], LABELS)
    assert m["n"] == 2 and m["answered"] == 0 and m["unlabelled"] == 2 and m["coverage"] == 0
    assert m["accuracy"] == 0 and m["macro_f1"] == 0 and m["kappa"] == 0  # po = pe = 0
    assert m["answered_only"] == {"n": 0, "accuracy": None, "macro_f1": None, "kappa": None,
                                  "balanced_accuracy": None, "weighted_kappa": None}
    assert m["confusion"] == [[0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0]]
    assert bootstrap_ci(["0"], [None], LABELS, "accuracy") == (0.0, 0.0)
    assert bootstrap_ci([], [], LABELS, "accuracy") == (None, None)
    empty = classification_metrics([], [], LABELS)
    assert empty["n"] == 0 and empty["coverage"] is None and empty["accuracy"] is None and empty["kappa"] is None
    with pytest.raises(ValueError):
        classification_metrics(["0"], ["x"], LABELS)
    with pytest.raises(ValueError):
        classification_metrics(["0"], [], LABELS)
    with pytest.raises(ValueError):
        bootstrap_ci(GOLD, PRED, LABELS, "nope")


@pytest.mark.parametrize("metric", ["accuracy", "macro_f1", "kappa", "balanced_accuracy"])
def test_bootstrap_deterministic_and_contains_point(metric):
    gold, pred = GOLD * 10, PRED * 10  # 70 pairs, 10 of them without a label
    point = classification_metrics(gold, pred, LABELS)[metric]
    a = bootstrap_ci(gold, pred, LABELS, metric, n_resamples=500, seed=7)
    assert a == bootstrap_ci(gold, pred, LABELS, metric, n_resamples=500, seed=7)
    assert a != bootstrap_ci(gold, pred, LABELS, metric, n_resamples=500, seed=8)
    assert a[0] < point < a[1]
    assert 0.0 <= a[1] - a[0] < 0.6


def test_one_kappa_for_metrics_and_the_cascade_rule():
    """The cascade's tau rule (hiera_dspy.methods.learned_scorer) and ce-blend's blend choice read the same kappa as the
    reports (hiera_dspy.metrics.agreement)."""
    import numpy as np

    from hiera_dspy.methods import cross, learned_scorer
    from hiera_dspy.metrics.agreement import kappa_of_labels

    assert learned_scorer.kappa_of_labels is kappa_of_labels
    gold, pred = np.array([0, 0, 1, 1, 1]), np.array([0, 1, 1, 1, 0])  # ce-blend's objective on grade indices
    assert cross.objective("kappa")(gold, pred, 2) == pytest.approx(kappa_of_labels(list(gold), list(pred)))
    answered = [(g, p) for g, p in zip(GOLD, PRED) if p is not None]
    assert kappa_of_labels([g for g, _ in answered], [p for _, p in answered]) == pytest.approx(0.5)
    assert kappa_of_labels(["0", "0"], ["0", "0"]) == 0.0  # undefined (chance agreement 1): 0 for the rule


def test_bootstrap_narrows_with_alpha():
    wide = bootstrap_ci(GOLD * 10, PRED * 10, LABELS, "accuracy", alpha=0.01)
    narrow = bootstrap_ci(GOLD * 10, PRED * 10, LABELS, "accuracy", alpha=0.2)
    assert wide[0] <= narrow[0] and narrow[1] <= wide[1]
