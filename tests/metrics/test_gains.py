"""Graded labels as measures read them: each scheme's nDCG gains (ESCI's 1 / 0.1 / 0.01 / 0 from the Shopping
Queries paper, the grades elsewhere), the same in the streaming evaluator and in ir_measures, the quadratic-weighted
kappa equal to scikit-learn's, and Home Depot's raters' mean kept beside its bin."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.conclude.per_query import named_measures, per_query
from hiera_dspy.conclude.retrieval import evaluate
from hiera_dspy.data.trec import RunLine
from hiera_dspy.labels import LabelScheme, get_scheme
from hiera_dspy.metrics.agreement import confusion, quadratic_kappa


def test_scheme_gains_and_their_integer_form_for_pytrec_eval():
    esci = get_scheme("esci")
    assert [esci.gain(g) for g in range(4)] == [0.0, 0.01, 0.1, 1.0]
    assert esci.gain_map() == {0: 0, 1: 1, 2: 10, 3: 100}  # scaled by 100: nDCG is scale-free
    for name in ("msrd", "wands", "homedepot", "trec"):
        scheme = get_scheme(name)
        assert scheme.gain_map() is None and [scheme.gain(g) for g in range(len(scheme.labels))] == list(
            range(len(scheme.labels)))
    assert LabelScheme.from_dict(esci.to_dict()).gains == esci.gains
    assert "gains" not in get_scheme("msrd").to_dict()  # a scheme without gains records what it always did
    with pytest.raises(ValueError, match="non-decreasing"):
        LabelScheme("x", ("a", "b"), gains=(1.0, 0.0))
    trec = get_scheme("trec")
    assert trec.from_raw("2") == "Highly relevant" and trec.is_relevant("Highly relevant")
    assert not trec.is_relevant("Related")


@pytest.mark.parametrize("name", ["esci", "trec", "wands"])
def test_streamed_ndcg_equals_ir_measures_with_the_schemes_gains(name):
    scheme = get_scheme(name)
    rng = np.random.default_rng(3)
    k = len(scheme.labels)
    qrels = {(f"q{q}", f"d{d}"): int(rng.integers(0, k)) for q in range(6) for d in range(8) if rng.random() < 0.7}
    lines = [RunLine(f"q{q}", f"d{d}", r + 1, 10.0 - r, "sys", 0) for q in range(6)
             for r, d in enumerate(rng.permutation(8))]
    streamed = evaluate(lines, qrels, scheme, depth=5)
    queries = sorted({q for q, _ in qrels})
    values = per_query(lines, qrels, queries, named_measures(scheme, 5))
    assert streamed["ndcg@5"] == pytest.approx(values["ndcg@5"].mean())
    assert streamed["p@5"] == pytest.approx(values["p@5"].mean())
    if name == "esci":  # the gains matter: grade gains would give another value
        plain = evaluate(lines, qrels, LabelScheme("plain", scheme.labels, relevant_from=scheme.relevant_from), 5)
        assert plain["ndcg@5"] != pytest.approx(streamed["ndcg@5"])


def test_quadratic_kappa_equals_scikit_learns_and_counts_a_missing_label_as_fully_wrong():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(0)
    for k in (2, 3, 4):
        labels = [str(i) for i in range(k)]
        gold = rng.integers(0, k, 300)
        pred = np.clip(gold + rng.integers(-1, 2, 300), 0, k - 1)
        cm = confusion([str(g) for g in gold], [str(p) for p in pred], labels)
        assert float(quadratic_kappa(cm)) == pytest.approx(cohen_kappa_score(gold, pred, weights="quadratic"))
    cm = confusion(["0", "1", "2", "2"], ["0", "1", "2", None], ["0", "1", "2"])
    worst = confusion(["0", "1", "2", "2"], ["0", "1", "2", "0"], ["0", "1", "2"])
    assert float(quadratic_kappa(cm)) < 1.0
    assert float(quadratic_kappa(cm)) == pytest.approx(float(quadratic_kappa(worst)), abs=0.15)


def test_home_depot_keeps_the_raters_mean_beside_its_bin(tmp_path):
    from hiera_dspy.data import load_dataset

    (tmp_path / "train.csv").write_text("id,product_uid,product_title,search_term,relevance\n"
                                        "1,100001,Simpson Strong-Tie angle,angle bracket,3\n"
                                        "2,100001,Simpson Strong-Tie angle,l bracket,2.33\n"
                                        "3,100002,BEHR paint,deck over,1.33\n", encoding="latin-1")
    pairs = load_dataset(f"homedepot:{tmp_path}").split("all")
    assert [(p.label, p.grade) for p in pairs] == [("Highly relevant", 2.0),
                                                   ("Partially relevant", pytest.approx(1.33)),
                                                   ("Irrelevant", pytest.approx(0.33))]
