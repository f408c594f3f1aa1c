"""TREC formats: run, qrels, topics and corpus round trip; every kind of bad line names file and line (or is skipped
and counted)."""

from __future__ import annotations

import json

import pytest
from labelling_helpers import write

from hiera_dspy.data import DataError
from hiera_dspy.data.trec import (
    format_qrels,
    format_run,
    ranked,
    read_corpus,
    read_qrels,
    read_run,
    read_topics,
    write_qrels,
    write_run,
)
from hiera_dspy.labels import custom_scheme, get_scheme

SCHEME = custom_scheme("Bad,Fair,Good")


def test_run_round_trip_and_trec_eval_order(tmp_path):
    ranking = {"q1": [("d3", 2.5), ("d1", 1.0)], "q": [("d9", 0.25)]}
    path = write_run(tmp_path / "x.run", ranking, "tag")
    lines = read_run(path)
    assert [(rl.qid, rl.docid, rl.rank, rl.score, rl.tag) for rl in lines] == [
        ("q1", "d3", 1, 2.5, "tag"), ("q1", "d1", 2, 1.0, "tag"), ("q", "d9", 1, 0.25, "tag")]
    assert format_run({q: [(rl.docid, rl.score) for rl in ls] for q, ls in ranked(lines).items()}, "tag") == \
        path.read_text()
    # ranks in the file are ignored: score descending, ties by docid descending (trec_eval)
    tie = read_run(write(tmp_path / "t.run", ["q Q0 a 1 1.0 t", "q Q0 c 2 1.0 t", "q Q0 b 3 5.0 t"]))
    assert [rl.docid for rl in ranked(tie)["q"]] == ["b", "c", "a"]


def test_qrels_round_trip_keeps_order_and_grades(tmp_path):
    qrels = {("q2", "d1"): 2, ("q1", "d5"): 0, ("q1", "d2"): 1}
    path = write_qrels(tmp_path / "qrels.txt", qrels)
    assert path.read_text() == "q2 0 d1 2\nq1 0 d5 0\nq1 0 d2 1\n" == format_qrels(qrels)
    assert list(read_qrels(path, SCHEME).items()) == list(qrels.items())


def test_topics_tsv_and_jsonl(tmp_path):
    tsv = write(tmp_path / "topics.tsv", ["1\tred shoes", "2\tblue\tsocks"])
    assert read_topics(tsv) == {"1": "red shoes", "2": "blue\tsocks"}
    jsonl = write(tmp_path / "topics.jsonl", [json.dumps({"qid": 7, "query": "spy film"})])
    assert read_topics(jsonl) == {"7": "spy film"}


def test_corpus_extra_fields_join_the_text(tmp_path):
    path = write(tmp_path / "corpus.jsonl", [
        json.dumps({"id": "m1", "title": "Alien", "overview": "A crew meets a creature.",
                    "genres": ["horror", "sci-fi"], "year": 1979, "metadata": {"skip": True}}),
        json.dumps({"_id": "b2", "title": "", "text": "BEIR style"})])
    corpus = read_corpus(path)
    assert corpus["m1"].title == "Alien"
    assert corpus["m1"].text == "Overview: A crew meets a creature.\nGenres: horror, sci-fi\nYear: 1979"
    assert corpus["b2"].text == "BEIR style"


@pytest.mark.parametrize("reader, lines, fragment", [
    (read_run, ["q1 Q0 d1 1 1.0 t", "q1 Q0 d2 2 0.5"],
     "line 2: expected 6 columns (qid Q0 docid rank score tag), got 5"),
    (read_run, ["q1 Q0 d1 1 high t"], "line 1: column 5 (score): 'high' is not a number"),
    (read_run, ["q1 Q0 d1 1 1 t", "q1 Q0 d1 2 0 t"], "line 2: docid 'd1' listed twice for qid 'q1' (first on line 1)"),
    (lambda p, **kw: read_qrels(p, SCHEME, **kw), ["q1 0 d1 1", "q1 0 d2 3"],
     "line 2: column 4 (grade): 3 is outside the scheme 'custom' (0..2: 0=Bad, 1=Fair, 2=Good)"),
    (lambda p, **kw: read_qrels(p, SCHEME, **kw), ["q1 0 d1 -1"], "line 1: column 4 (grade): -1 is outside"),
    (lambda p, **kw: read_qrels(p, SCHEME, **kw), ["q1 d1 1"], "line 1: expected 4 columns"),
    (read_topics, ["1\tok", "2 no tab here"], "line 2: expected qid<TAB>query (no TAB found)"),
    (read_corpus, ['{"id": "a", "title": "x"}', '{"title": "y"}'], 'line 2: missing field "id"'),
])
def test_bad_line_names_file_and_line(tmp_path, reader, lines, fragment):
    path = write(tmp_path / "input.txt", lines)
    with pytest.raises(DataError) as err:
        reader(path)
    assert str(err.value).startswith(f"{path}, line ") and fragment in str(err.value)
    skipped = []
    if len(lines) > 1:  # skip mode keeps the good lines and counts the bad one
        reader(path, on_bad_row="skip", skipped=skipped)
        assert len(skipped) == 1 and skipped[0]["file"] == path


def test_msrd_grades_are_the_scheme_index(tmp_path):
    path = write(tmp_path / "qrels.txt", ["q 0 d 1"])
    assert read_qrels(path, get_scheme("msrd")) == {("q", "d"): 1}


def test_atomic_write_never_leaves_half_a_file(tmp_path):
    from hiera_dspy.store.files import write_atomic

    path = write_atomic(tmp_path / "qrels.txt", "q 0 d 1\n")
    assert oct(path.stat().st_mode & 0o777) != oct(0o600)  # usual permissions, not mkstemp's
    with pytest.raises(TypeError):
        write_atomic(path, None)  # fails while writing
    assert path.read_text() == "q 0 d 1\n" and [p.name for p in tmp_path.iterdir()] == ["qrels.txt"]
