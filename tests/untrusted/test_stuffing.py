"""Stuffing: hidden content, repetition and query echoes come out; an item's own facts stay."""

from __future__ import annotations

from hiera_dspy.untrusted.stuffing import destuff, echoes, query_terms

TEXT = "Overview: A crew meets a creature.\nDirector: Ridley Scott\nTags: space, horror"


def test_query_echoes_are_removed_but_name_fields_kept():
    assert destuff(TEXT + "\nTags: space horror movie, classic", "space horror movie") == (
        TEXT + "\nTags: classic", frozenset({"query-echo"}))
    assert destuff(TEXT, "ridley scott") == (TEXT, frozenset())  # the item's own director
    assert destuff(TEXT + "\nBest space horror movie!", "space horror movie").text == TEXT  # mostly the query
    assert destuff(TEXT + "\nA space horror movie set on a freighter.", "space horror movie").flags == frozenset()
    assert destuff(TEXT + "\nBest space horror movie!", "space horror movie", title="Space Horror").flags == set()


def test_echo_window_any_order_and_run_together():
    terms = query_terms("the space horror movie")
    assert terms == ["space", "horror", "movie"]
    assert echoes("movie of horror in space", terms) and echoes("#spacehorrormovie", terms)
    assert not echoes("space and, much later, a horror movie", terms)
    assert not echoes("alien alien", ["alien"])  # a one-word query never echoes


def test_hidden_content_and_repetition():
    assert destuff("A film.<!-- buy buy -->\n<span style='display:none'>x y</span>").flags == {"hidden"}
    assert destuff("A film.\n[//]: # (secret words)").text.strip() == "A film."
    assert destuff("alien alien alien alien film").text == "alien film"
    assert destuff("Bodies Bodies Bodies").flags == frozenset()  # a real title
    line = "A great film about a crew in space."
    assert destuff(f"{line}\n{line}") == (line, frozenset({"repetition"}))
