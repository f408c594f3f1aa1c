"""The calibration check of the judge's probabilities on the decided holes (hiera_dspy.conclude.calibration): a
calibrated independent judge passes, an over-confident one and one whose errors go together within a query are
flagged, and the plan's spread is inflated by the check."""

from __future__ import annotations

import numpy as np
import pytest

from hiera_dspy.conclude.calibration import check, line
from hiera_dspy.conclude.sample_size import plan
from hiera_dspy.labels import get_scheme

MSRD = get_scheme("msrd")


def records(p: np.ndarray, truth: np.ndarray, per_query: int) -> list[dict]:
    out = []
    for i, (pi, yi) in enumerate(zip(p, truth)):
        label = "Relevant" if pi >= 0.5 else "Irrelevant"
        out.append({"id": f"q{i // per_query}:d{i}", "query_id": f"q{i // per_query}", "item_id": f"d{i}",
                    "machine_label": label, "confidence": max(pi, 1 - pi), "source": "human",
                    "label": "Relevant" if yi else "Irrelevant"})
    return out


def test_a_calibrated_independent_judge_passes():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, 600)
    c = check(records(p, rng.random(600) < p, 6), [f"q{i}" for i in range(100)], MSRD)
    assert abs(c["z"]) < 2 and abs(c["spiegelhalter_z"]) < 2 and c["dispersion"] == pytest.approx(1, abs=0.3)
    assert not c["flag"] and c["inflation"] < 1.2


def test_an_over_confident_judge_is_flagged_and_the_plan_inflated():
    # finding 6: a judge 95% sure and right 70% of the time got a width plan of 30 where 63 were needed
    rng = np.random.default_rng(1)
    p = np.where(rng.random(600) < 0.5, 0.95, 0.05)
    truth = np.where(rng.random(600) < 0.7, p > 0.5, p < 0.5)
    c = check(records(p, truth, 6), [f"q{i}" for i in range(100)], MSRD)
    assert c["flag"] and c["spiegelhalter_z"] > 4 and c["inflation"] > 2
    assert "under-asks" in line(c)
    x = rng.uniform(0, 1, 400)
    sims = [{"p@10": {"A": x + rng.normal(0, 0.1, 400)}} for _ in range(5)]
    (plain,), (inflated,) = (plan({"p@10": {"A": x}}, sims, inflation=f) for f in (1.0, c["inflation"]))
    assert inflated.sd == pytest.approx(plain.sd * c["inflation"]) and inflated.n_width > 2 * plain.n_width


def test_errors_that_go_together_within_a_query_raise_the_dispersion():
    # calibrated on average, but a query's holes are all right or all wrong together
    rng = np.random.default_rng(2)
    p = np.full(600, 0.5)
    truth = np.repeat(rng.random(100) < 0.5, 6)
    c = check(records(p, truth, 6), [f"q{i}" for i in range(100)], MSRD)
    assert abs(c["z"]) < 3 and c["dispersion"] > 3 and c["flag"]


def test_no_decided_hole_means_no_check():
    assert check([], ["q1"], MSRD) is None and "no decided hole yet" in line(None)


def graded_records(kind: str, seed: int = 5, queries: int = 40, per_query: int = 20) -> list[dict]:
    """A graded judge (TREC's 0-3) over queries whose share of relevant holes differs: its label right with chance
    c, its distribution the posterior given the query's grade shares ("calibrated"), the same with a quarter of the
    mass off its top grade ("overconfident"), or with the shares over every query ("correlated": calibrated over
    the benchmark, wrong the same way on every hole of a query whose shares differ); the person's label the truth."""
    scheme = get_scheme("trec")
    rng = np.random.default_rng(seed)
    truth = {f"q{i}": rng.choice(4, per_query, p=rng.dirichlet(np.ones(4) * 0.5)) for i in range(queries)}
    overall = sum(np.bincount(g, minlength=4) for g in truth.values())
    out = []
    for q, grades in truth.items():
        shares = np.bincount(grades, minlength=4)
        for d, g in enumerate(grades):
            c = rng.uniform(0.55, 0.95)
            label = g if rng.random() < c else rng.choice([k for k in range(4) if k != g])
            dist = np.full(4, (1 - c) / 3)
            dist[label] = c
            dist = dist * (overall if kind == "correlated" else shares)
            dist /= dist.sum()
            if kind == "overconfident":
                top = int(np.argmax(dist))
                dist = dist / 4
                dist[top] = 0.0
                dist[top] = 1 - dist.sum()
            out.append({"id": f"{q}:d{d}", "query_id": q, "item_id": f"d{d}", "source": "human",
                        "machine_label": scheme.labels[int(np.argmax(dist))], "confidence": float(dist.max()),
                        "distribution": dict(zip(scheme.labels, dist.tolist())), "label": scheme.labels[int(g)]})
    return out


@pytest.mark.parametrize("kind,flagged", [("calibrated", False), ("overconfident", True), ("correlated", True)])
def test_the_check_flags_the_graded_judges_whose_plan_would_under_ask(kind, flagged):
    # bench.conclusions --plan-check's judges in small: over 20 decided queries of a graded scheme the check flags
    # the over-confident judge (Brier) and the one whose errors go together within a query (dispersion), and
    # passes the calibrated one; a flag that disappears lets the plan under-ask (docs/conclusions.md)
    c = check(graded_records(kind), [f"q{i}" for i in range(20)], get_scheme("trec"))
    assert c["flag"] is flagged
    assert (c["inflation"] > 1.4) is flagged
