"""The canonical form a learned judge reads an item in (`item_form.py`), and the item prior's key: a re-cased,
re-ordered, relabelled item keeps its prior; an old prior keyed by hash reads as it always did."""

from __future__ import annotations

import json

import numpy as np

from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair
from hiera_dspy.signals import RelevanceScorer
from hiera_dspy.signals.cross_encoder import item_view
from hiera_dspy.signals.item_form import canonical_item, content_key, fold
from hiera_dspy.signals.item_prior import ItemPrior, item_key
from hiera_dspy.untrusted.rewordings import REWORDINGS, reword

TEXT = "Overview: A cop's \u201cspace\u201d case \u2013 in 2099.\nYear: 1986\nGenres: Action\nActors: Tom Hardy"


def test_fold_straightens_typography_and_spaces():
    assert fold("  It\u2019s \u201cA\u00a0B\u201d \u2014 C\u2026  \nD\t\tE ") == "It's \"A B\" - C...\nD E"


def test_canonical_item_relabels_and_orders_the_fields():
    title, text = canonical_item("Star Cop", "actors: Tom Hardy\nSome note\nPLOT:  A cop.\nRelease year: 1986")
    assert title == "Star Cop"
    assert text == "Overview: A cop.\nYear: 1986\nActors: Tom Hardy\nSome note"
    assert canonical_item("Star Cop", "Some note\nActors: Tom Hardy", loose=False) == ("Star Cop", "Actors: Tom Hardy")
    assert canonical_item("T", "just prose", loose=False) == ("T", "just prose")
    assert canonical_item("T", "just prose: with a colon\nline two") == ("T", "just prose: with a colon\nline two")


def test_canonical_item_is_idempotent_and_keeps_the_bundled_form():
    clean = "Overview: A cop in space.\nYear: 1986\nGenres: Action\nActors: Tom Hardy"
    assert canonical_item("Star Cop", clean) == ("Star Cop", clean)
    once = canonical_item("Star Cop", TEXT)
    assert canonical_item(*once) == once


def test_every_benign_edit_but_the_content_ones_keeps_the_content_key():
    pair = Pair("p", "cop", "Star Cop", TEXT, "Relevant", "q", "7")
    same = {"field-order", "title-lower", "title-upper", "title-case", "double-spaces", "label-plot",
            "labels-renamed", "typography"}
    for name in REWORDINGS:
        edited = reword(pair, name)
        if edited is None:
            continue
        kept = content_key(edited.item_title, edited.item_text) == content_key(pair.item_title, pair.item_text)
        assert kept == (name in same), name


def test_the_cross_encoder_reads_a_renamed_overview():
    renamed = TEXT.replace("Overview:", "Plot:").replace("Actors:", "Cast:")
    assert item_view("Star Cop", renamed) == item_view("Star Cop", TEXT)
    assert "space" in item_view("Star Cop", renamed)


def _triples():
    return [("q1", "Alien", TEXT), ("q2", "Alien", TEXT), ("q3", "Alien", TEXT), ("q1", "Brazil", "Overview: x")]


def test_a_recased_reordered_item_keeps_its_prior_by_id():
    prior = ItemPrior(strength=1.0).fit(_triples(), [1, 1, 0, 0], ids=["a", "a", "a", "b"])
    prior.forget_train()
    assert prior.key == "item_id"
    edited = reword(reword(Pair("p", "q9", "Alien", TEXT, None, "q9", "a"), "title-upper"), "field-order")
    edited = edited._replace(item_text=edited.item_text + "\nNow streaming.")  # content changed: the id still holds
    clean = prior.features([("q9", "Alien", TEXT)], ["a"])
    assert clean[0, 1] == 3.0
    assert prior.features([("q9", edited.item_title, edited.item_text)], ["a"]).tolist() == clean.tolist()
    # without its id, a re-cased and re-ordered item is found by its content key
    recased = reword(Pair("p", "q9", "Alien", TEXT, None, "q9", ""), "title-lower")
    assert prior.features([("q9", recased.item_title, reword(recased, "field-order").item_text)]).tolist() == \
        clean.tolist()
    # an id of another catalog (another title) does not borrow the item's rate
    assert prior.features([("q9", "Some Sofa", "")], ["a"])[0, 1] == 0.0


def test_without_ids_the_prior_keys_by_content():
    prior = ItemPrior(strength=1.0).fit(_triples(), [1, 1, 0, 0], ids=["a", "", "a", "b"])
    prior.forget_train()
    assert prior.key == "content"
    title, text = "ALIEN", reword(Pair("p", "q", "Alien", TEXT, None, "q", ""), "labels-renamed").item_text
    assert prior.features([("q9", title, text)])[0, 1] == 3.0


def test_a_prior_saved_before_keys_reads_items_by_their_exact_hash():
    old = {"strength": 1.0, "p0": 0.5, "counts": {item_key("Alien", TEXT): [2.0, 3.0]}}
    prior = ItemPrior.from_dict(json.loads(json.dumps(old)))
    assert prior.key == "hash"
    assert prior.features([("q", "Alien", TEXT)]).tolist() == [[(2 + 0.5) / (3 + 1), 3.0]]
    assert prior.features([("q", "ALIEN", TEXT)], ["x"]).tolist() == [[0.5, 0.0]]  # as before: a stranger
    assert "key" not in old and ItemPrior.from_dict(prior.to_dict()).key == "hash"


def test_the_id_keyed_prior_round_trips_through_json():
    prior = ItemPrior(strength=1.0).fit(_triples(), [1, 1, 0, 0], ids=["a", "a", "a", "b"])
    prior.forget_train()
    again = ItemPrior.from_dict(json.loads(json.dumps(prior.to_dict())))
    rows = [("q9", "alien", TEXT), ("q9", "Brazil", "Overview: x")]
    assert again.features(rows, ["a", ""]).tolist() == prior.features(rows, ["a", ""]).tolist()


class FakeEmbedder:
    model_id = "test/fake"

    def encode(self, texts):
        rows = np.array([[1.0, 0.2] if "space" in t.lower() else [0.2, 1.0] for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _pairs():
    items = [(f"Film {i}", f"Overview: {'A space cop' if i % 2 else 'A baker'} story.\nYear: {1980 + i}\n"
              f"Genres: Drama\nActors: Actor {i}") for i in range(12)]
    return [Pair(f"p{q}-{i}", f"space film {q}", t, x, "Relevant" if (i % 2 and q % 3) else "Irrelevant", f"q{q}",
                 f"m{i}") for q in range(8) for i, (t, x) in enumerate(items)]


def test_the_scorer_labels_a_reworded_item_as_the_clean_one():
    scorer = RelevanceScorer(get_scheme("msrd"), embedder=FakeEmbedder(), features="query+prior").fit(_pairs())
    assert scorer.item_form == "fields" and scorer.prior.key == "item_id"  # a catalog of field lines only
    fresh = [p._replace(query="space cop", query_id="new") for p in _pairs()[:12]]
    clean = scorer.predict_proba_many(fresh)
    for name in ("field-order", "title-lower", "labels-renamed", "typography", "double-spaces", "availability",
                 "availability-label"):
        edited = [reword(p, name) or p for p in fresh]
        assert scorer.predict_proba_many(edited) == clean, name
    loaded = RelevanceScorer.from_dict(json.loads(json.dumps(scorer.to_dict())), embedder=FakeEmbedder())
    assert loaded.item_form == "fields" and loaded.predict_proba_many(fresh) == clean


def test_a_catalog_with_other_lines_keeps_reading_them():
    pairs = [p._replace(item_text=p.item_text + "\nA loose note") if i % 5 == 0 else p for i, p in enumerate(_pairs())]
    scorer = RelevanceScorer(get_scheme("msrd"), embedder=FakeEmbedder(), features="query").fit(pairs)
    assert scorer.item_form == "canonical"
    passages = [p._replace(item_title="", item_text=f"A passage about {p.item_title}.") for p in _pairs()]
    assert RelevanceScorer(get_scheme("msrd"), embedder=None, features="query").fit(passages).item_form == "canonical"


def test_a_scorer_saved_before_item_forms_reads_items_raw():
    scorer = RelevanceScorer(get_scheme("msrd"), embedder=FakeEmbedder(), features="query+prior").fit(_pairs())
    saved = scorer.to_dict()
    saved.pop("item_form")
    assert RelevanceScorer.from_dict(saved, embedder=FakeEmbedder()).item_form == "raw"


def test_a_catalog_of_titles_reads_no_text_added_later():
    titles = [p._replace(item_text="") for p in _pairs()]
    scorer = RelevanceScorer(get_scheme("msrd"), embedder=FakeEmbedder(), features="query+prior").fit(titles)
    assert scorer.item_form == "title"
    fresh = [p._replace(query="space cop", query_id="new") for p in titles[:12]]
    edited = [reword(p, "availability") for p in fresh]
    assert all(p.item_text for p in edited) and scorer.predict_proba_many(edited) == scorer.predict_proba_many(fresh)
