"""Field-level features and leave-query-out item priors of the learned scorer (no torch: a fake embedder)."""

from __future__ import annotations

import json

import numpy as np

from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair
from hiera_dspy.signals import RelevanceScorer
from hiera_dspy.signals.features import LexicalModel
from hiera_dspy.signals.field_features import FIELD_FEATURES, field_features, item_fields
from hiera_dspy.signals.item_prior import ItemPrior

TEXT = "Overview: A cop in space.\nYear: 1986\nGenres: Action, Science Fiction\nDirector: Jane Roe\nActors: Tom Hardy, Ann Lee"


class FakeEmbedder:
    """Two numbers a text: whether it says "space" or not (unit length)."""

    model_id = "test/fake"

    def encode(self, texts):
        rows = np.array([[1.0, 0.2] if "space" in t.lower() else [0.2, 1.0] for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _features(query: str, title: str = "Star Cop", text: str = TEXT) -> dict[str, float]:
    lexical = LexicalModel().fit([(title, text), ("Other", "Overview: nothing")])
    return dict(zip(FIELD_FEATURES, field_features(lexical, [(query, title, text)])[0]))


def test_item_fields_split_the_catalog_lines():
    fields = item_fields("Star Cop", TEXT + "\nA loose line")
    assert fields["director"] == "Jane Roe" and fields["year"] == "1986" and fields["title"] == "Star Cop"
    assert fields["overview"] == "A cop in space. A loose line"
    assert item_fields("T", "just prose")["overview"] == "just prose"


def test_field_features_say_which_field_matched():
    f = _features("tom hardy 80s action")
    assert f["actors_overlap"] == 0.5 and f["genres_overlap"] == 0.25 and f["title_overlap"] == 0.0
    assert f["actors_name"] == 1.0 and f["director_name"] == 0.0 and f["year_match"] == 1.0
    assert f["year"] == 1986.0 and f["query_year"] == 0.0 and f["unmatched_idf"] > 0
    g = _features("jane roe 1987")
    assert g["director_name"] == 1.0 and g["query_year"] == 1987.0 and g["year_match"] == 0.0
    assert _features("tom")["actors_name"] == 0.0  # a part of a name is not the name


def test_item_prior_leaves_the_own_query_out_while_fitting():
    triples = [("q1", "A", "x"), ("q2", "A", "x"), ("q3", "A", "x"), ("q1", "B", "y")]
    prior = ItemPrior(strength=1.0).fit(triples, [1, 1, 0, 0])
    fit_rows = prior.features(triples)
    p0 = 0.5
    assert fit_rows[0].tolist() == [(1 + p0) / (2 + 1), 2.0]   # q1 on A: q2 and q3 only
    assert fit_rows[2].tolist() == [(2 + p0) / (2 + 1), 2.0]   # q3 on A: q1 and q2
    assert fit_rows[3].tolist() == [p0, 0.0]                   # B was judged only for q1
    prior.forget_train()
    assert prior.features([("q9", "A", "x")])[0].tolist() == [(2 + p0) / (3 + 1), 3.0]
    again = ItemPrior.from_dict(json.loads(json.dumps(prior.to_dict())))
    assert np.array_equal(again.features(triples), prior.features(triples))


def _pairs(n_queries: int) -> list[Pair]:
    """Each query: a space film (relevant for even queries), a popular film relevant for most queries, a dud."""
    out = []
    for q in range(n_queries):
        query = f"space story {q}"
        out += [Pair(f"q{q}:a", query, "Space Cop", TEXT, "Relevant" if q % 2 == 0 else "Irrelevant", f"q{q}", "a"),
                Pair(f"q{q}:b", query, "Big Hit", "Overview: loved by all", "Relevant" if q % 5 else "Irrelevant",
                     f"q{q}", "b"),
                Pair(f"q{q}:c", query, "Dud", "Overview: nobody", "Irrelevant", f"q{q}", "c")]
    return out


def test_scorer_with_fields_and_prior_round_trips_and_learns_the_prior():
    scorer = RelevanceScorer(get_scheme("msrd"), embedder=FakeEmbedder(), features="query+fields+prior",
                             model="hgb").fit(_pairs(60))
    names = scorer.feature_names
    assert names[-2:] == ("item_prior", "item_judged") and "actors_name" in names
    doc = json.loads(json.dumps(scorer.to_dict()))
    loaded = RelevanceScorer.from_dict(doc, embedder=FakeEmbedder())
    test = _pairs(70)[-30:]
    assert loaded.predict_proba_many(test) == scorer.predict_proba_many(test)
    probs = {p.item_title: scorer.predict_proba(p)["Relevant"] for p in test[:3]}
    assert probs["Big Hit"] > 0.5 > probs["Dud"]  # the text says nothing about the query: the prior decides
    assert doc["item_prior"]["counts"] and len(doc["item_prior"]["counts"]) == 3


def test_fit_from_precomputed_rows_equals_fit():
    pairs = _pairs(30)
    options = {"embedder": FakeEmbedder(), "features": "query+fields+prior", "model": "hgb"}
    plain = RelevanceScorer(get_scheme("msrd"), **options).fit(pairs)
    wide = RelevanceScorer(get_scheme("msrd"), **options)
    wide.features.fit([(p.query, p.item_title, p.item_text) for p in pairs])
    wide.prior = ItemPrior().fit([(p.query, p.item_title, p.item_text) for p in pairs],
                                 [p.label == "Relevant" for p in pairs])
    rows = wide._matrix(pairs)  # leave-query-out priors, as fit builds them
    given = RelevanceScorer(get_scheme("msrd"), **options).fit(pairs, rows=rows)
    assert given.to_dict() == plain.to_dict()


def test_the_wide_matrix_holds_each_feature_sets_rows():
    from hiera_dspy.signals.feature_sets import WIDE, WIDE_SUBSETS, wide_columns

    pairs = _pairs(12)
    triples = [(p.query, p.item_title, p.item_text) for p in pairs]

    def rows(feature_set):
        scorer = RelevanceScorer(get_scheme("msrd"), embedder=FakeEmbedder(), features=feature_set, model="hgb")
        scorer.features.fit(triples)
        scorer.prior = ItemPrior().fit(triples, [p.label == "Relevant" for p in pairs])
        return scorer._matrix(pairs)

    wide = rows(WIDE)
    for feature_set in WIDE_SUBSETS:
        assert np.array_equal(wide[:, wide_columns(feature_set)], rows(feature_set)), feature_set
