"""Judgment lists read as known judgments (`hiera_dspy.data.judgment_lists`): TREC qrels and labelled JSONL, named by
a prefix or sniffed, texts looked up where a line has none, and every bad list refused with its file and line."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from hiera_dspy.data import CatalogEntry, DataError, judgment_lists
from hiera_dspy.data.judgment_lists import FORMATS, read_known
from hiera_dspy.labels import custom_scheme, get_scheme
from hiera_dspy.testing import write_trec_folder

TREC = get_scheme("trec")


def lines(path, *rows: str):
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def jsonl(path, *rows: dict):
    return lines(path, *(json.dumps(r) for r in rows))


def row(qid: str, item: str, label, text: str = "a passage") -> dict:
    return {"id": f"{qid}:{item}", "query": f"query {qid}", "query_id": qid, "item_id": item, "item_title": "",
            "item_text": text, "label": label}


def test_qrels_take_their_texts_from_the_corpus_and_count_what_is_missing(tmp_path):
    path = lines(tmp_path / "qrels.txt", "q1 0 d1 2", "q1 0 d2 0", "q2 0 d9 3", "q1 0 d1 2")
    counts: Counter = Counter()
    known = read_known(f"qrels:{path}", TREC, items={"d1": CatalogEntry("d1", "One", "text one"),
                                                     "d2": CatalogEntry("d2", "", "text two")},
                       queries={"q1": "first query"}, counts=counts)
    assert known.counts() == {"q1": 2, "q2": 1}
    first, second = known.for_query("q1")
    assert (first.item_id, first.grade, first.item_title, first.item_text, first.query, first.source) == (
        "d1", 2, "One", "text one", "first query", f"{path}:1")
    assert second.item_text == "text two"
    (missing,) = known.for_query("q2")
    assert missing.item_text is None and missing.query is None and missing.source == f"{path}:3"
    assert counts == {"judgments": 3, "duplicates": 1, "without_text": 1}


def test_labelled_jsonl_keeps_its_own_texts_and_counts_its_unlabelled_rows(tmp_path):
    path = jsonl(tmp_path / "known.jsonl", row("q1", "d1", "Highly relevant", "own text"), row("q1", "d2", None),
                 row("q2", "d3", "3"))
    counts: Counter = Counter()
    known = read_known(f"jsonl:{path}", TREC, items={"d1": CatalogEntry("d1", "", "corpus text")}, counts=counts)
    (j,) = known.for_query("q1")
    assert (j.grade, j.item_text, j.query, j.source) == (2, "own text", "query q1", f"{path}:1")
    assert known.for_query("q2")[0].grade == 3  # a raw grade of the scheme is its label
    assert counts == {"judgments": 2, "unlabelled": 1, "without_text": 0}


def test_a_trec_folder_gives_its_qrels_with_the_texts_of_its_topics_and_corpus(tmp_path):
    folder = write_trec_folder(tmp_path / "bench", queries=2, passages=2)
    with open(folder / "qrels.txt", "a") as fh:
        fh.write("q1 0 gone 1\n")
    counts: Counter = Counter()
    known = read_known(f"trec:{folder}", TREC, counts=counts)
    assert read_known(str(folder), TREC) == known  # a folder is sniffed as one
    first = known.for_query("q0")[0]
    assert first.query.startswith("what about ") and first.item_text.endswith("A passage on something else.")
    assert first.source == f"{folder / 'qrels.txt'}:1"
    assert counts == {"judgments": 5, "without_text": 1}


def test_a_path_without_a_prefix_is_sniffed(tmp_path):
    qrels = lines(tmp_path / "judged", "q1 0 d1 1")
    as_json = jsonl(tmp_path / "judged.txt", row("q1", "d1", "Related"))
    assert read_known(str(qrels), TREC).for_query("q1")[0].grade == 1
    assert read_known(str(as_json), TREC).for_query("q1")[0].item_text == "a passage"
    other = lines(tmp_path / "notes.csv", "query,doc,grade")
    with pytest.raises(DataError, match=r"notes.csv, line 1: not a judgment list .* --known FORMAT:"):
        read_known(str(other), TREC)
    bad_first = lines(tmp_path / "bad", "q1 Q0 d1 x", "q1 0 d2 1")  # qrels by its iteration column: the grade's error
    with pytest.raises(DataError, match=r"bad, line 1: column 4 \(grade\): 'x' is not an integer"):
        read_known(str(bad_first), TREC)


@pytest.mark.parametrize("body, message", [
    (["q1 0 d1 2", "q1 0 d2 1", "q1 0 d1 3"],
     r"qrels.txt, line 3, grade: query 'q1' item 'd1' is judged 'Perfectly relevant' \(grade 3\) here and "
     r"'Highly relevant' \(grade 2\) on .*qrels.txt, line 1; .*keep the right line"),
    (["q1 0 d1 2", "q1 0 d2 4"],
     r"qrels.txt, line 2: column 4 \(grade\): 4 is outside the scheme 'trec' .*map the file's grades onto it"),
    (["q1 0 d1"], r"qrels.txt, line 1: expected 4 columns"),
])
def test_a_bad_qrels_list_names_file_line_and_field(tmp_path, body, message):
    with pytest.raises(DataError, match=message):
        read_known(f"qrels:{lines(tmp_path / 'qrels.txt', *body)}", TREC)


def test_a_bad_jsonl_list_names_file_line_and_field(tmp_path):
    scale = jsonl(tmp_path / "scale.jsonl", row("q1", "d1", "Great"))
    with pytest.raises(DataError, match=r'scale.jsonl, line 1: field "label": unknown label .*map the file'):
        read_known(f"jsonl:{scale}", TREC)
    twice = jsonl(tmp_path / "twice.jsonl", row("q1", "d1", "Related"), row("q1", "d1", "Related") | {"id": "x"},
                  row("q1", "d1", "Irrelevant") | {"id": "y"})
    with pytest.raises(DataError, match=r"twice.jsonl, line 3, grade: .*'Irrelevant'.* on .*twice.jsonl, line 1"):
        read_known(f"jsonl:{twice}", TREC)


def test_a_missing_or_empty_list_says_what_to_give(tmp_path):
    with pytest.raises(DataError, match="not found; --known names a judgment list"):
        read_known(f"qrels:{tmp_path / 'nope.txt'}", TREC)
    with pytest.raises(DataError, match="no topics file"):
        read_known(str(tmp_path), TREC)  # a folder is a TREC folder, or nothing
    with pytest.raises(DataError, match="the file is empty"):
        read_known(str(lines(tmp_path / "empty.txt")), TREC)


def test_the_same_judgments_give_the_same_digest_wherever_they_were_read(tmp_path):
    scheme = custom_scheme("Bad,Good")
    a = read_known(str(lines(tmp_path / "a.txt", "q1 0 d1 1", "q1 0 d2 0")), scheme)
    b = read_known(str(lines(tmp_path / "b.txt", "q1   0  d1  1", "", "q1 0 d2 0")), scheme)
    c = read_known(str(lines(tmp_path / "c.txt", "q1 0 d1 0", "q1 0 d2 0")), scheme)
    assert a.digest() == b.digest() != c.digest()
    assert a.without({("q1", "d1")}).keys() == {("q1", "d2")}


def test_a_new_format_is_one_module_and_one_line(tmp_path, monkeypatch):
    """The module doc's promise: a Quepid-like CSV reader, dropped in as a module, reads through read_known."""
    (tmp_path / "known_csv_test.py").write_text(textwrap.dedent('''
        """A CSV judgment list: query_id,doc_id,rating (a test's format)."""
        from hiera_dspy.data.known import KnownJudgment

        def read(path, scheme, counts):
            for lineno, text in enumerate(path.read_text().splitlines(), 1):
                if lineno > 1 and text.strip():
                    qid, doc, rating = text.split(",")
                    yield KnownJudgment(qid, doc, int(rating), source=f"{path}:{lineno}")

        def looks_like(path, head):
            return head == "query_id,doc_id,rating"
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(FORMATS, "csv", "known_csv_test")
    path = lines(tmp_path / "quepid.csv", "query_id,doc_id,rating", "q1,d1,1", "q1,d1,2")
    with pytest.raises(DataError, match=r"quepid.csv, line 3, grade: .* on .*quepid.csv, line 2"):
        read_known(str(path), TREC)  # sniffed, and the shared checks hold for it too
    assert "csv" in judgment_lists.FORMAT_REGISTRY


TOOL_LISTS = Path(__file__).parents[1] / "fixtures" / "judgment_lists"


@pytest.mark.parametrize("spec, sniffed", [("quepid:quepid_ratings.csv", True), ("srw:srw_import.json", True),
                                           ("esltr:esltr_plugin_demo.txt", False), ("esltr:esltr_quepid.txt", False)])
def test_the_tools_lists_are_known_judgments(spec, sniffed):
    """Quepid, OpenSearch SRW and LTR lists read as --known judgments, with or without their FORMAT: prefix; the
    same judgments as their own readers give."""
    import importlib

    fmt, _, name = spec.partition(":")
    scheme = get_scheme("trec") if fmt != "esltr" or "quepid" in name else custom_scheme("a,b,c,d,e")
    own = importlib.import_module(f"hiera_dspy.data.{fmt}").read_known(TOOL_LISTS / name, scheme)
    known = read_known(f"{fmt}:{TOOL_LISTS / name}", scheme)
    assert [(j.query_id, j.item_id, j.grade) for j in known] == [(j.query_id, j.item_id, j.grade) for j in own]
    assert len(known) > 0
    if sniffed:
        assert [j.item_id for j in read_known(TOOL_LISTS / name, scheme)] == [j.item_id for j in known]
