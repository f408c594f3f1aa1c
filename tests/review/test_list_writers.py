"""The judgment-list writers: each format round-trips a 1,000-judgment file to identical content (written, read,
written again: the same bytes; read back: the same judgments), and writes what each tool's documentation shows."""

from __future__ import annotations

import json
import random

import pytest

from hiera_dspy.data.judgment_lists import read_list
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import get_scheme
from hiera_dspy.review.list_writers import WRITERS, token_ids, write_list

TREC = get_scheme("trec")


def thousand(ids_are_texts: bool) -> Known:
    """1,000 judgments of 50 queries, texts with commas, quotes, '#' and non-ASCII; ids tokens or the texts."""
    rng = random.Random(56)
    out = []
    for i in range(1000):
        q = i % 50
        text = f'query {q}, "quoted" #{q} café'
        out.append(KnownJudgment(query_id=text if ids_are_texts else f"q{q}", item_id=f"doc-{i * 7919 % 100003}",
                                 grade=rng.randrange(4), query=text))
    return Known.of(TREC, out)


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_1000_judgment_file_round_trips_to_identical_content(tmp_path, fmt):
    known = thousand(ids_are_texts=fmt in ("quepid", "srw"))  # what these formats read back: the text is the id
    first = write_list(fmt, tmp_path / f"first.{fmt}", known, name="round trip")
    back = read_list(f"{fmt}:{first}", TREC)
    second = write_list(fmt, tmp_path / f"second.{fmt}", back, name="round trip")
    assert second.read_bytes() == first.read_bytes()
    assert len(back) == 1000 and len(back.by_query) == 50
    expect = [(j.query_id, j.item_id, j.grade) for j in known]
    assert [(j.query_id, j.item_id, j.grade) for j in back] == expect
    if fmt != "qrels":  # qrels carry no query text
        assert [j.query for j in back] == [j.query for j in known]


def test_each_writer_writes_the_documented_shape(tmp_path):
    known = Known.of(TREC, [KnownJudgment("1", "1370", 3, query="star trek"),
                            KnownJudgment("2", "B077ZJXCTS", 0, query="red dress, long")])
    text = {fmt: write_list(fmt, tmp_path / fmt, known, name="Imported Judgments").read_text() for fmt in WRITERS}
    assert text["esltr"] == "3 qid:1 # 1370 star trek\n0 qid:2 # B077ZJXCTS red dress, long\n"
    assert text["quepid"] == 'query,docid,rating\nstar trek,1370,3\n"red dress, long",B077ZJXCTS,0\n'
    assert text["qrels"] == "1 0 1370 3\n2 0 B077ZJXCTS 0\n"
    body = json.loads(text["srw"])
    assert body["type"] == "IMPORT_JUDGMENT" and body["name"] == "Imported Judgments"
    assert body["judgmentRatings"][1] == {"query": "red dress, long",
                                          "ratings": [{"docId": "B077ZJXCTS", "rating": "0.000"}]}


def test_token_formats_number_queries_whose_ids_are_texts():
    known = Known.of(TREC, [KnownJudgment("star trek", "a", 1, query="star trek"),
                            KnownJudgment("alien", "b", 2, query="alien")])
    assert token_ids(known) == {"star trek": "1", "alien": "2"}
    assert token_ids(Known.of(TREC, [KnownJudgment("q9", "a", 1)])) == {"q9": "q9"}


def test_a_text_format_refuses_a_query_without_text_and_leaves_no_file(tmp_path):
    known = Known.of(TREC, [KnownJudgment("q1", "d1", 1, source="qrels.txt:1")])
    with pytest.raises(RequestError, match="query 'q1' .judgment qrels.txt:1. has no text, and Quepid knows a query"):
        write_list("quepid", tmp_path / "r.csv", known)
    assert not (tmp_path / "r.csv").exists()
