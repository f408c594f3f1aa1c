"""The paper's sampling protocol: deterministic, balanced per label, query-disjoint eval / train / dev."""

import random
from collections import Counter

from hiera_dspy.data.sampling import balanced_sample, make_splits
from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair

SCHEME = get_scheme("wands")  # Irrelevant, Partial, Exact


def _pairs(n_queries=1000, per_query=6):
    """Unbalanced on purpose: labels drawn 50% Irrelevant, 30% Partial, 20% Exact."""
    rng = random.Random(7)
    return [Pair(id=f"p{q}-{i}", query=f"q{q}", item_title=f"t{i}", item_text="", query_id=f"q{q}", item_id=f"t{i}",
                 label=rng.choices(SCHEME.labels, weights=(5, 3, 2))[0])
            for q in range(n_queries) for i in range(per_query)]


def test_deterministic_and_independent_of_input_order():
    pairs = _pairs()
    first = make_splits(pairs, SCHEME)
    assert make_splits(pairs, SCHEME) == first
    shuffled = pairs[:]
    random.Random(1).shuffle(shuffled)
    assert make_splits(shuffled, SCHEME) == first and make_splits(pairs[::-1], SCHEME) == first
    assert make_splits(pairs, SCHEME, seed=43)["eval"] != first["eval"]


def test_balanced_per_label_with_requested_sizes():
    splits = make_splits(_pairs(), SCHEME)
    # eval: 1000 // 3 = 333 per label; train/dev: 100 per label (the pools hold enough of each label).
    assert Counter(p.label for p in splits["eval"]) == {label: 333 for label in SCHEME.labels}
    for name in ("train", "dev"):
        assert Counter(p.label for p in splits[name]) == {label: 100 for label in SCHEME.labels}
    for pairs in splits.values():
        assert len({p.id for p in pairs}) == len(pairs)


def test_rare_label_caps_every_label():
    pairs = _pairs(n_queries=20)
    exact = sum(p.label == "Exact" for p in pairs)
    sample = balanced_sample(pairs, SCHEME, n=1000)
    assert Counter(p.label for p in sample) == {label: exact for label in SCHEME.labels}


def test_query_disjoint_splits():
    pairs = _pairs()
    splits = make_splits(pairs, SCHEME)
    queries = {name: {p.query_id for p in split} for name, split in splits.items()}
    assert not queries["eval"] & queries["train"] and not queries["eval"] & queries["dev"]
    assert not queries["train"] & queries["dev"]
    assert all(queries.values())


def test_balanced_head_of_a_split_sees_every_label():
    from hiera_dspy.data import load_dataset

    dev = load_dataset("msrd").split("dev", 4, balanced=True)
    assert sorted(p.label for p in dev) == ["Irrelevant", "Irrelevant", "Relevant", "Relevant"]
    assert [p.label for p in load_dataset("msrd").split("dev", 4)] == ["Relevant"] * 4  # the plain head is not
