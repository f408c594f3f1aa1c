"""Manipulation families: seeded, placed where they say, every order family caught by the screen."""

from __future__ import annotations

import pytest

from hiera_dspy.records import Pair
from hiera_dspy.untrusted.families import FAMILIES, attack, opposite_of_gold, phrasings
from hiera_dspy.untrusted.screen import program_inputs, screen_pair

LABELS = ("Irrelevant", "Relevant")
PAIRS = [Pair("p1", "space horror movie", "Alien", "Overview: A crew meets a creature.\nYear: 1979", "Irrelevant",
              "q1", "i1"),
         Pair("p2", "ridley scott alien", "Alien", "Overview: A crew meets a creature.\nDirector: Ridley Scott",
              "Relevant", "q2", "i2")]
ORDERS = [f for f in FAMILIES if f.startswith("order-")]


def test_every_family_has_train_and_test_phrasings_and_is_seeded():
    assert all(f.train and f.test and f.review for f in FAMILIES.values())
    a, b = (attack(PAIRS[0], "claim", "Relevant", LABELS, seed=3) for _ in range(2))
    assert a == b and a.id == "p1#manip:claim" and "space horror movie" in a.item_text
    assert opposite_of_gold(PAIRS[0], LABELS) == "Relevant" and opposite_of_gold(PAIRS[1], LABELS) == "Irrelevant"


@pytest.mark.parametrize(("family", "split"), [(f, s) for f in ORDERS + ["stuffing-hidden", "claim"]
                                               for s in ("train", "test", "review")])
def test_the_screen_takes_the_attack_out(family, split):
    for pair in PAIRS:
        for i in range(len(phrasings(family, split))):
            hostile = attack(pair, family, opposite_of_gold(pair, LABELS), LABELS, split, 0, i)
            screened, flags = screen_pair(hostile)
            assert LABELS[0] not in screened.item_title + screened.item_text.replace("Relevant", "")
            assert "Relevant" not in screened.item_title + screened.item_text, (family, split, i)
            assert flags, (family, split, i)


@pytest.mark.parametrize("family", ORDERS + ["claim"])
def test_the_screen_restores_the_clean_item_exactly(family):
    # what makes a flip impossible for any deterministic judge: the hostile copy's judged input is the clean one's
    for pair in PAIRS:
        for split in ("train", "test", "review"):
            for i in range(len(phrasings(family, split))):
                hostile = attack(pair, family, opposite_of_gold(pair, LABELS), LABELS, split, 0, i)
                assert program_inputs(hostile) == program_inputs(pair), (family, split, i)
    control = attack(PAIRS[0], "control", "Relevant", LABELS, "review", 0, 0)
    assert program_inputs(control) != program_inputs(PAIRS[0])


def test_the_screen_is_idempotent_on_every_hostile_copy():
    for pair in PAIRS:
        for family in FAMILIES:
            for split in ("train", "test", "review"):
                for i in range(len(phrasings(family, split))):
                    once, _ = screen_pair(attack(pair, family, opposite_of_gold(pair, LABELS), LABELS, split, 0, i))
                    assert screen_pair(once)[0] == once, (family, split, i)
