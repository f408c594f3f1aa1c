"""Stuffing: hidden content, repetition and query echoes come out; an item's own facts stay."""

from __future__ import annotations

from hiera_dspy.untrusted.stuffing import destuff, echoes, query_terms

TEXT = "Overview: A crew meets a creature.\nDirector: Ridley Scott\nTags: space, horror"


def test_query_echoes_are_removed_but_name_fields_kept():
    text = "Overview: A crew meets a creature.\nDirector: Ridley Scott"
    assert destuff(text + "\nTags: space horror movie, classic", "space horror movie") == (
        text + "\nTags: classic", frozenset({"query-echo"}))
    assert destuff(TEXT, "ridley scott") == (TEXT, frozenset())  # the item's own director
    assert destuff(TEXT + "\nBest space horror movie!", "space horror movie").text == TEXT  # mostly the query
    # any free-text sentence repeating the query goes, even once among its own words, even when the title names it
    assert destuff(TEXT + "\nA space horror movie set on a freighter.", "space horror movie").text == TEXT
    assert destuff(TEXT + "\nNot a space horror movie.", "space horror movie", title_names_query=True).text == TEXT
    named = "Overview: A crew meets a creature.\nTags: space horror movie, classic"
    assert destuff(named, "space horror movie", title_names_query=True) == (named, frozenset())  # its own tags
    assert destuff(named + "\nTags: space horror movie", "space horror movie", title_names_query=True) == (
        named, frozenset({"keyword-list"}))  # but not a second tags line


def test_a_second_index_field_keyword_lists_and_a_pumped_title_go():
    assert destuff(TEXT + "\nKeywords: cooking, yoga") == (TEXT, frozenset({"keyword-list"}))
    assert destuff(TEXT + "\ncooking, yoga, car insurance, dog food") == (TEXT, frozenset({"keyword-list"}))
    assert destuff(TEXT + "\ncooking and yoga.").flags == frozenset()
    pumped = "More Alien Covenant, more Alien Covenant."
    assert destuff(f"{TEXT}\n{pumped}", title="Alien: Covenant") == (TEXT, frozenset({"repetition"}))
    overview = "Overview: Alien Covenant follows Alien: Prometheus... and Alien Covenant ends it."
    assert destuff(overview, title="Alien: Covenant").flags == frozenset()  # a prose field may name it twice


def test_echo_window_any_order_and_run_together():
    terms = query_terms("the space horror movie")
    assert terms == ["space", "horror", "movie"]
    assert echoes("movie of horror in space", terms) and echoes("#spacehorrormovie", terms)
    assert not echoes("space and, much later, a horror movie", terms)
    assert not echoes("alien alien", ["alien"])  # a one-word query never echoes
    assert echoes("the witches, sadly, of eastwick", query_terms("witch of eastwick"))  # plural, one word between
    assert not echoes("the witches who came from eastwick", query_terms("witch of eastwick"))


def test_hidden_content_and_repetition():
    assert destuff("A film.<!-- buy buy -->\n<span style='display:none'>x y</span>").flags == {"hidden"}
    assert destuff("A film.\n[//]: # (secret words)").text.strip() == "A film."
    assert destuff("alien alien alien alien film").text == "alien film"
    assert destuff("Bodies Bodies Bodies").flags == frozenset()  # a real title
    line = "A great film about a crew in space."
    assert destuff(f"{line}\n{line}") == (line, frozenset({"repetition"}))
