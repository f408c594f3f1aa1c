"""The readers of the tools' judgment lists (Quepid ratings CSV, OpenSearch SRW import JSON, Elasticsearch LTR lists):
the files written from each tool's documentation (tests/fixtures/judgment_lists/README.md) load with the exact
records; a rating outside the scale or a query without an id is a DataError naming file, line or field and the remedy,
or a counted skip; as a dataset, the texts come from the corpus beside the file."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from hiera_dspy.data import DataError, esltr, load_dataset, quepid, srw
from hiera_dspy.data.judgment_lists import read_known, read_list
from hiera_dspy.data.tool_lists import rating_grade
from hiera_dspy.labels import custom_scheme, get_scheme

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "judgment_lists"
TREC = get_scheme("trec")
FIVE = custom_scheme("Bad,Poor,Fair,Good,Perfect", name="five")


def rows(known) -> list[tuple]:
    return [(j.query_id, j.item_id, j.grade, j.query) for j in known]


def test_quepid_reads_the_import_dialogs_example():
    unrated: list[int] = []
    known = quepid.read_known(FIXTURES / "quepid_ratings.csv", TREC, unrated=unrated)
    assert rows(known) == [("star wars", "3574597", 3, "star wars"), ("I like, commas!", "1370", 2, "I like, commas!")]
    assert unrated == [3, 4]  # a document listed but not rated, a query with none: Quepid's own rows, not bad ones
    assert list(known)[1].source.endswith("quepid_ratings.csv:5")


def test_quepids_rows_without_a_rating_are_counted_apart_as_known_judgments():
    """Read as --known judgments, the rows not rated yet are left out and counted (`unrated`), as the docs say."""
    counts: Counter = Counter()
    known = read_known(f"quepid:{FIXTURES / 'quepid_ratings.csv'}", TREC, counts=counts)
    assert len(known) == 2 and counts["unrated"] == 2 and counts["judgments"] == 2


def test_srw_reads_the_documented_import_body_and_get_response():
    body = srw.read_known(FIXTURES / "srw_import.json", TREC)
    assert len(body) == 10 and list(body.by_query) == ["red dress", "blue jeans"]
    assert rows(body)[:2] == [("red dress", "B077ZJXCTS", 3, "red dress"), ("red dress", "B071S6LTJJ", 2, "red dress")]
    assert list(body)[9].source.endswith("srw_import.json:judgmentRatings[1].ratings[4]")
    assert rows(srw.read_known(FIXTURES / "srw_get_response.json", TREC)) == rows(body)


def test_esltr_reads_the_plugins_demo_and_quepids_lines():
    demo = esltr.read_known(FIXTURES / "esltr_plugin_demo.txt", FIVE)  # the demo grades 0-4
    assert len(demo) == 10 and demo.counts() == {"1": 5, "2": 3, "3": 2}
    first = list(demo)[0]
    assert (first.query_id, first.item_id, first.grade, first.query, first.item_title) == \
        ("1", "7555", 4, "rambo", "Rambo")  # the header names the query; the rest of the line is the title
    lines = esltr.read_known(FIXTURES / "esltr_quepid.txt", TREC)
    assert rows(lines) == [("1", "1370", 3, "star trek"), ("1", "1368", 2, "star trek"), ("2", "9755", 0, "star wars")]


def test_the_plugins_demo_on_a_0_3_scale_names_the_line_and_the_remedy():
    with pytest.raises(DataError) as exc:
        esltr.read_known(FIXTURES / "esltr_plugin_demo.txt", TREC)
    message = str(exc.value)
    assert "esltr_plugin_demo.txt, line 9" in message and "rating '4' is outside the scheme 'trec' (0..3" in message
    assert "--labels" in message and "--on-bad-row skip" in message


GOOD = {"quepid": "star wars,1,3\n", "esltr": "3 qid:1 # 1370 star trek\n",
        "srw": {"query": "red dress", "ratings": [{"docId": "B077ZJXCTS", "rating": "3.000"}]}}


@pytest.mark.parametrize("fmt, bad, where", [
    ("quepid", ",2,1\n", "line 3: column query: empty"),
    ("quepid", "star wars,2,7\n", "line 3: rating '7' is outside the scheme 'trec'"),
    ("srw", {"ratings": [{"docId": "a", "rating": "1.000"}]}, "judgmentRatings[1].query: missing or empty"),
    ("srw", {"query": "q", "ratings": [{"docId": "a", "rating": "2.5"}]},
     "judgmentRatings[1].ratings[0]: rating '2.5' is not a whole grade"),
    ("srw", {"query": "q", "ratings": [{"rating": "1"}]}, "judgmentRatings[1].ratings[0].docId: missing"),
    ("esltr", "3 # 1371 star trek\n", "line 2: no `qid:N` after the grade"),
    ("esltr", "1 qid:1 # 1371 star wars\n", "line 2: qid:1 is 'star trek' on line 1"),
])
def test_a_bad_row_is_an_error_naming_where_or_a_counted_skip(tmp_path, fmt, bad, where):
    path = tmp_path / f"list.{fmt}"
    text = (json.dumps({"judgmentRatings": [GOOD[fmt], bad]}) if fmt == "srw" else
            ("query,docid,rating\n" if fmt == "quepid" else "") + GOOD[fmt] + bad)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as exc:
        read_list(f"{fmt}:{path}", TREC)
    assert f"{path}, {where}" in str(exc.value) and "--on-bad-row skip" in str(exc.value)
    skipped: list[dict] = []
    known = read_list(f"{fmt}:{path}", TREC, on_bad_row="skip", skipped=skipped)
    assert len(known) == 1 and len(skipped) == 1 and skipped[0]["file"] == str(path)


def test_a_pair_judged_twice_is_a_bad_row(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("query,docid,rating\nq,d,1\nq,d,2\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 3: query 'q' document 'd' judged twice .first at line 2"):
        quepid.read_known(path, TREC)


def test_rating_grades_take_whole_decimals_and_refuse_the_rest():
    assert [rating_grade(v, TREC) for v in (3, "3", "3.000", " 0 ")] == [3, 3, 3, 0]
    for value, message in [("", "empty"), ("x", "not a number"), ("-1", "outside"), ("1.5", "not a whole grade"),
                           (True, "empty")]:
        with pytest.raises(ValueError, match=message):
            rating_grade(value, TREC)


def test_a_list_with_a_corpus_beside_it_is_a_dataset(tmp_path):
    shutil.copy(FIXTURES / "srw_import.json", tmp_path / "judgments.json")
    docs = ["B077ZJXCTS", "B071S6LTJJ", "B01IDSPDJI", "B07QRCGL3G", "B074V6Q1DR", "B07L9V4Y98", "B01N0DSRJC",
            "B001CRAWCQ", "B075DGJZRM"]  # B009ZD297U is missing: a bad row
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "title": f"Product {d}", "text": "a dress"})
                                                   + "\n" for d in docs), encoding="utf-8")
    with pytest.raises(DataError, match=r"judgments.json, judgmentRatings\[1\].ratings\[4\]: docid 'B009ZD297U' "
                                        r"is not in the corpus"):
        load_dataset(f"srw:{tmp_path / 'judgments.json'}")
    dataset = load_dataset(f"srw:{tmp_path / 'judgments.json'}", on_bad_row="skip")
    pairs = dataset.split("all")
    assert len(pairs) == 9 and dataset.notes["queries"] == 2 and len(dataset.notes["skipped_rows"]) == 1
    assert (pairs[0].id, pairs[0].query, pairs[0].item_title, pairs[0].label) == \
        ("red dress:B077ZJXCTS", "red dress", "Product B077ZJXCTS", "Perfectly relevant")


def test_a_list_without_a_corpus_says_where_to_put_one(tmp_path):
    shutil.copy(FIXTURES / "quepid_ratings.csv", tmp_path / "ratings.csv")
    with pytest.raises(DataError, match="carries no document texts; put a corpus.jsonl"):
        load_dataset(f"quepid:{tmp_path / 'ratings.csv'}")
