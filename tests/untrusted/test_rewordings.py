"""The benign edits (`hiera_dspy.untrusted.rewordings`) and `python -m bench.stability` on a tiny run of the bundled
MSRD data (nothing from outside the repository)."""

from __future__ import annotations

import json

import pytest

from hiera_dspy.records import Pair
from hiera_dspy.untrusted.rewordings import REWORDINGS, reword
from tests.bench_command import run_bench

MOVIE = Pair("m", "alien", "The Thing from another World", "Overview: A crew wakes. A creature hunts them.\nYear: 1979\nGenres: Horror\n"
             "Director: Ridley Scott\nActors: Sigourney Weaver, Tom Skerritt", "Relevant", "q", "i")
PASSAGE = Pair("t", "roof life", "", "Metal roofs last long. They resist fire - and rot.", "Related", "q", "d")


def test_each_edit_changes_the_item_and_keeps_the_rest():
    for name in REWORDINGS:
        edited = reword(MOVIE, name)
        assert edited is not None, name
        assert (edited.item_title, edited.item_text) != (MOVIE.item_title, MOVIE.item_text), name
        assert edited._replace(id=MOVIE.id, item_title=MOVIE.item_title, item_text=MOVIE.item_text) == MOVIE
        assert edited.id == f"m#edit:{name}"


def test_the_edits_say_what_they_did():
    assert reword(MOVIE, "field-order").item_text.split("\n")[-1].startswith("Overview: ")
    assert reword(MOVIE, "title-upper").item_title == "THE THING FROM ANOTHER WORLD"
    assert reword(MOVIE, "labels-renamed").item_text.startswith("Plot: ")
    assert "Cast: Sigourney Weaver, Tom Skerritt" in reword(MOVIE, "labels-renamed").item_text
    assert reword(MOVIE, "drop-sentence").item_text.startswith("Overview: A crew wakes.\nYear")
    assert "\u2013" in reword(PASSAGE, "typography").item_text
    assert reword(MOVIE, "availability").item_text.endswith("\nNow available to stream in HD.")


def test_edits_that_do_not_fit_a_passage_give_none():
    for name in ("field-order", "title-lower", "label-plot", "labels-renamed"):
        assert reword(PASSAGE, name) is None, name
    assert reword(PASSAGE, "drop-sentence").item_text == "Metal roofs last long."


@pytest.mark.slow  # a bench run: ~7 s (CI runs the slow tests; the default suite stays under 10 minutes)
def test_the_bench_reports_flips_per_edit_and_family(tmp_path):
    run_bench("stability", "measure", "--dataset", "msrd", "--judges", "embed-lr", "--embedder", "lexical",
              "--pairs", "10", "--families", "control,claim", "--tag", "tiny", "--out", tmp_path)
    run = json.loads((tmp_path / "msrd-tiny.json").read_text())
    assert run["pairs"] == 10 and run["label_counts"] == {"Irrelevant": 5, "Relevant": 5}
    assert set(run["cells"]) >= {"title-lower", "field-order", "attack: control", "attack: claim"}
    cell = run["cells"]["title-lower"]["embed-lr"]
    assert cell["n"] == 10 and 0 <= cell["flips"] <= 10 and 0 <= cell["accuracy"] <= 1
    run_bench("stability", "report", "--out", tmp_path)
    assert "| title-lower | 10 |" in (tmp_path.parent / f"{tmp_path.name}.md").read_text()
