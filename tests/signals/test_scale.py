"""Learning from many pairs: texts embedded once (disk cache by content hash), the msrd pool split, C chosen on a
query-grouped dev split, interaction features and class weights, all with a tiny fake embedder (no torch)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair
from hiera_dspy.signals import RelevanceScorer, tokenize
from hiera_dspy.signals.embed_cache import CachedEmbedder
from hiera_dspy.signals.selection import query_grouped_split

VOCAB = ("alien", "horror", "toy", "space", "story", "red", "fox")


class CountingEmbedder:
    """Vocabulary counts, L2-normalised; remembers every text it embedded."""

    model_id = "test/count"

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen += list(texts)
        rows = []
        for text in texts:
            tokens = tokenize(text)
            v = np.array([tokens.count(w) + 0.1 * (i == 0) for i, w in enumerate(VOCAB)], dtype=np.float64)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows)


def _pairs(n_queries: int = 12) -> list[Pair]:
    out = []
    for q in range(n_queries):
        word = VOCAB[q % len(VOCAB)]
        out.append(Pair(f"q{q}:a", f"{word} film", f"{word.title()} Story", f"A {word} tale", "Relevant", f"q{q}", "a"))
        out.append(Pair(f"q{q}:b", f"{word} film", "Quiet Pond", "Nothing here", "Irrelevant", f"q{q}", "b"))
        out.append(Pair(f"q{q}:c", f"{word} film", "Still Lake", "Nothing at all", "Irrelevant", f"q{q}", "c"))
    return out


def test_each_distinct_text_is_embedded_once_across_calls_and_processes(tmp_path):
    inner = CountingEmbedder()
    cache = CachedEmbedder(inner, tmp_path / "vectors.sqlite", batch_size=2)
    first = cache.encode(["alien", "toy story", "alien", "red fox"])
    assert inner.seen == ["alien", "toy story", "red fox"] and cache.computed == 3
    again = CachedEmbedder(CountingEmbedder(), tmp_path / "vectors.sqlite")  # another process: the same file
    second = again.encode(["red fox", "alien"])
    assert again.inner.seen == [] and np.array_equal(second, first[[3, 0]]) and len(again) == 3
    assert first.dtype == np.float64 and np.allclose(np.linalg.norm(first, axis=1), 1.0)


def test_query_grouped_split_keeps_a_query_on_one_side():
    fit, dev = query_grouped_split(_pairs(), dev_share=0.25, seed=0)
    assert len({p.query_id for p in dev}) == 3 and not {p.query_id for p in fit} & {p.query_id for p in dev}
    assert len(fit) + len(dev) == 36


def test_interactions_fit_round_trip_and_c_chosen_on_dev():
    emb = CountingEmbedder()
    scorer = RelevanceScorer(get_scheme("msrd"), embedder=emb, features="interactions", C_grid=[0.01, 1.0, 100.0],
                             class_weight="balanced").fit(_pairs())
    assert len(scorer.feature_names) == 5 + 2 * len(VOCAB) and scorer.C in (0.01, 1.0, 100.0)
    assert set(scorer.C_losses) == {0.01, 1.0, 100.0} and scorer.C == min(scorer.C_losses, key=scorer.C_losses.get)
    doc = json.loads(json.dumps(scorer.to_dict()))
    loaded = RelevanceScorer.from_dict(doc, embedder=CountingEmbedder())
    test = [Pair("t", "fox film", "Fox Story", "A fox tale", None, "t", "x")]
    assert loaded.predict_proba_many(test) == scorer.predict_proba_many(test)
    assert loaded.predict_many(test) == ["Relevant"] and doc["params"]["class_weight"] == "balanced"


def test_interactions_need_an_embedder_and_balanced_weights_shift_the_prior():
    with pytest.raises(ValueError, match="needs an embedder"):
        RelevanceScorer(get_scheme("msrd"), embedder=None, features="interactions")
    plain = RelevanceScorer(get_scheme("msrd"), embedder=None).fit(_pairs())
    balanced = RelevanceScorer(get_scheme("msrd"), embedder=None, class_weight="balanced").fit(_pairs())
    unsure = Pair("u", "alien film", "Alien Pond", "Nothing", None, "u", "y")
    assert balanced.predict_proba(unsure)["Relevant"] > plain.predict_proba(unsure)["Relevant"]


def test_the_pool_split_reads_like_the_bundled_pairs_and_leaves_out_dev_queries(msrd):
    pool = msrd.split("pool")
    assert len(pool) == 108669 and msrd.notes["pool"] == {"pairs": 108669, "excluded_queries": 279,
                                                          "not_in_catalog": 0}
    by_id = {p.id: p for p in pool}
    assert all(by_id[p.id] == p for p in msrd.split("train"))  # the bundled train pairs, byte for byte
    assert not {p.query_id for p in pool} & {p.query_id for p in msrd.split("dev")}
    assert sum(p.label == "Relevant" for p in pool) == 15447


def test_probe_stacked_probes_a_sample_and_the_scorer_learns_from_all(msrd):
    from hiera_dspy.methods import BuildContext, build, probe_states

    prompts: list[str] = []

    def embed(prompt: str) -> np.ndarray:
        prompts.append(prompt)
        return np.array([len(prompt) % 7, prompt.count("a"), prompt.count("e"), 1.0])

    train = msrd.split("train")[:60]
    with probe_states.use_embedder(embed):
        program = build("probe-stacked", BuildContext(msrd.scheme, train=train), embedder="lexical", probe_pairs=20,
                        folds=3)
        program.prepare(train)
    assert len(prompts) == 20 and program.config["probe_pairs"] == 20  # hidden states of 20 pairs only
    assert program.scorer_state.scorer.features.lexical.n_docs == len({(p.item_title, p.item_text) for p in train})


def test_trees_fit_and_reload_to_the_same_probabilities():
    scorer = RelevanceScorer(get_scheme("msrd"), embedder=None, model="hgb", features="query").fit(_pairs(70))
    assert scorer.feature_names[-5:] == ("query_terms", "query_max_idf", "title_terms", "title_in_query",
                                         "query_in_title")
    doc = json.loads(json.dumps(scorer.to_dict()))
    loaded = RelevanceScorer.from_dict(doc)
    test = _pairs(77)[-21:]
    assert loaded.predict_proba_many(test) == scorer.predict_proba_many(test)
    assert loaded.predict_many(test) == [p.label for p in test] and doc["model"] == "hgb"


def test_query_features_by_hand():
    from hiera_dspy.signals.features import LexicalModel
    from hiera_dspy.signals.query_features import query_features

    lexical = LexicalModel().fit([("Red Fox", "a fox"), ("Blue Owl", "an owl")])
    rows = query_features(lexical, [("the red fox", "Red Fox", ""), ("fox", "Red Fox Returns", "")])
    assert rows[:, [0, 2, 3, 4]].tolist() == [[2, 2, 1, 0], [1, 3, 0, 1]]
    assert rows[0, 1] == rows[1, 1] == lexical.idf["fox"]
