"""metrics_from_rows on hand-computed rows."""

from __future__ import annotations

import pytest

from hiera_dspy.runs.tally import metrics_from_rows

LABELS = ["Irrelevant", "Relevant"]
I, R = LABELS


def row(gold, label, *, tokens=0, calls=0, by_role=None, seconds=1.0, delegated=None, error=None, human=None,
        escalated=False, fields=None):
    return {"id": f"{gold}-{label}-{tokens}", "gold": gold, "label": label, "tokens": tokens, "lm_calls": calls,
            "tokens_by_role": by_role or {}, "seconds": seconds, "delegated": delegated, "error": error,
            "human_label": human, "escalated": escalated, "fields": fields or {}}


ROWS = [
    row(R, R, tokens=100, calls=2, by_role={"judge": 60, "relation": 40}, seconds=1.0, delegated=True),
    row(R, I, tokens=50, calls=1, by_role={"judge": 50}, seconds=2.0, delegated=False,
        fields={"parse_recovered": True}),
    row(I, I, tokens=50, calls=1, by_role={"judge": 50}, seconds=3.0, delegated=False),
    row(I, R, human=I, tokens=200, calls=4, by_role={"judge": 100, "relation": 100}, seconds=4.0, delegated=True),
    row(R, None, error="RuntimeError: boom", seconds=0.1),
    row(I, None, escalated=True, tokens=10, calls=1, by_role={"judge": 10}, seconds=5.0, delegated=True),
]


def test_hand_computed():
    m = metrics_from_rows(ROWS, LABELS)
    # final labels: R, I, I, I (human label overrides R), None (error), None (escalated, no human decision)
    # every pair: gold R R I I R I / pred R I I I - -  (- = "(no label)", always wrong)
    assert m["n"] == 6 and m["answered"] == 4 and m["unlabelled"] == 2 and m["pairs"] == 6
    assert m["coverage"] == pytest.approx(4 / 6)
    assert m["accuracy"] == pytest.approx(3 / 6)
    assert m["confusion"] == [[2, 0, 1], [1, 1, 1]]  # rows gold (I, R), columns predicted (I, R, no label)
    # kappa: po = 3/6, pe = (3*3 + 3*1 + 0*2)/36 = 1/3 -> (1/2 - 1/3) / (2/3) = 1/4
    assert m["kappa"] == pytest.approx(0.25)
    # F1(I) = 2*2/(3+3) = 2/3; F1(R) = 2*1/(3+1) = 1/2
    assert m["macro_f1"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert m["balanced_accuracy"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    # the answered-only view: gold R R I I / pred R I I I
    # kappa: po = 3/4, pe = (2/4)(3/4) + (2/4)(1/4) = 1/2 -> 1/2; F1(I) = 0.8, F1(R) = 2/3
    a = m["answered_only"]
    assert a["n"] == 4 and a["accuracy"] == pytest.approx(3 / 4) and a["kappa"] == pytest.approx(0.5)
    assert a["macro_f1"] == pytest.approx((0.8 + 2 / 3) / 2) and a["balanced_accuracy"] == pytest.approx(3 / 4)
    assert m["errors"] == 1 and m["escalations"] == 1 and m["human_labels"] == 1 and m["parse_recovered"] == 1
    # cost columns over the 5 rows without an error
    assert m["tokens_per_judgment"] == pytest.approx((100 + 50 + 50 + 200 + 10) / 5)
    assert m["lm_calls_per_judgment"] == pytest.approx((2 + 1 + 1 + 4 + 1) / 5)
    assert m["tokens_by_role"] == pytest.approx({"judge": (60 + 50 + 50 + 100 + 10) / 5, "relation": 140 / 5})
    assert m["seconds_per_judgment"] == pytest.approx(3.0)
    assert m["seconds_p50"] == 3.0 and m["seconds_p95"] == pytest.approx(1 + 0.95 * 4)  # numpy linear: 4.8
    assert m["delegation_rate"] == pytest.approx(3 / 5)
    assert m["llm_share"] == 1.0  # every row without an error made an LM call
    assert m["labels"] == LABELS
    # a cascade: rows the learned scorer labelled (no LM call) lower the share of pairs that reached an LLM
    cascade = metrics_from_rows(ROWS + [row(R, R, calls=0, seconds=0.1), row(I, I, calls=0, seconds=0.1),
                                        row(I, I, calls=0, seconds=0.1, error="x")], LABELS)
    assert cascade["llm_share"] == pytest.approx(5 / 7)
    # a judgment DSPy's cache answered made no LM call but was still sent to the LLM part; scorer/knowledge steps not
    cached = {**row(R, R, calls=0), "steps": [{"role": "scorer", "calls": 0}, {"role": "judge", "calls": 0}]}
    scorer_only = {**row(I, I, calls=0), "steps": [{"role": "scorer", "calls": 0}, {"role": "knowledge", "calls": 0}]}
    assert metrics_from_rows([cached, scorer_only], LABELS)["llm_share"] == 0.5


def test_human_label_overrides_model_label():
    rows = [row(R, I, human=R, delegated=False), row(I, R, human=I, delegated=False)]
    m = metrics_from_rows(rows, LABELS)
    assert m["accuracy"] == 1.0 and m["human_labels"] == 2
    without = metrics_from_rows([{**r, "human_label": None} for r in rows], LABELS)
    assert without["accuracy"] == 0.0 and without["kappa"] == pytest.approx(-1.0)


def test_human_label_fills_an_escalated_row():
    rows = [row(R, R), row(I, None, escalated=True, human=I)]
    m = metrics_from_rows(rows, LABELS)
    assert m["n"] == 2 and m["unlabelled"] == 0 and m["accuracy"] == 1.0 and m["escalations"] == 1
    assert m["coverage"] == 1.0


def test_perfect_agreement():
    rows = [row(R, R), row(I, I), row(R, R)]
    m = metrics_from_rows(rows, LABELS)
    assert m["accuracy"] == 1.0 and m["kappa"] == 1.0 and m["macro_f1"] == 1.0
    assert m["delegation_rate"] is None  # no row says whether it was delegated


def test_only_errors():
    rows = [row(R, None, error="boom"), row(I, None, error="boom")]
    m = metrics_from_rows(rows, LABELS)
    assert m["n"] == 2 and m["answered"] == 0 and m["coverage"] == 0 and m["errors"] == 2
    assert m["accuracy"] == 0 and m["kappa"] == 0 and m["answered_only"]["accuracy"] is None
    assert m["tokens_per_judgment"] is None and m["lm_calls_per_judgment"] is None
    assert m["seconds_per_judgment"] is None and m["delegation_rate"] is None and m["tokens_by_role"] == {}


def test_three_labels_macro_f1_over_present_labels():
    labels = ["Irrelevant", "Partial", "Exact"]
    rows = [row("Exact", "Exact"), row("Exact", "Partial"), row("Partial", "Partial")]
    m = metrics_from_rows(rows, labels)
    # Irrelevant is absent from gold and pred: averaged over Partial (F1 2/3) and Exact (F1 2/3)
    assert m["macro_f1"] == pytest.approx(2 / 3)
    assert m["confusion"] == [[0, 0, 0, 0], [0, 1, 0, 0], [0, 1, 1, 0]]


def test_unknown_label_is_refused():
    with pytest.raises(ValueError, match="not in label set"):
        metrics_from_rows([row(R, "Maybe")], LABELS)
