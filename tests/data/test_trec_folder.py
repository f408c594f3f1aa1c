"""`trec:FOLDER`: every judged pair a labelled Pair under the `trec` scheme, splits grouped by query, gzipped corpora;
a qrel for an unknown query or passage, a passage without text, a grade outside the scheme: a DataError naming file
and line, or skipped and counted; long passages kept whole here and counted."""

from __future__ import annotations

import gzip
import json

import pytest

from hiera_dspy.data import DataError, load_dataset
from hiera_dspy.data.trec_folder import files
from hiera_dspy.labels import get_scheme
from hiera_dspy.testing import write_trec_folder


def test_every_judgment_is_a_labelled_pair_with_query_grouped_splits(tmp_path):
    folder = write_trec_folder(tmp_path / "dl", queries=12, passages=8)
    data = load_dataset(f"trec:{folder}")
    assert data.scheme.name == "trec" and data.default_split == "eval"
    pairs = data.split("all")
    assert len(pairs) == 96 and pairs[0].id == "q0:p0-0" and (pairs[0].query_id, pairs[0].item_id) == ("q0", "p0-0")
    assert [p.label for p in pairs[:4]] == list(get_scheme("trec").labels)  # grade i is label i
    assert pairs[0].query.startswith("what about ") and pairs[0].item_title == ""
    queries = {name: {p.query_id for p in data.split(name)} for name in ("train", "dev", "eval")}
    assert all(queries.values())
    train, dev, held_out = queries["train"], queries["dev"], queries["eval"]
    assert not (train & dev or train & held_out or dev & held_out)
    assert {entry.id for entry in data.catalog} >= {p.item_id for p in pairs}
    assert data.notes["queries"] == 12 and data.notes["long_items"] == 0


def test_a_gzipped_corpus_and_jsonl_topics_read_the_same(tmp_path):
    folder = write_trec_folder(tmp_path / "a", queries=4)
    plain = load_dataset(f"trec:{folder}").split("all")
    corpus = (folder / "corpus.jsonl").read_bytes()
    (folder / "corpus.jsonl").unlink()
    (folder / "corpus.jsonl.gz").write_bytes(gzip.compress(corpus))
    topics = [line.split("\t") for line in (folder / "topics.tsv").read_text().splitlines()]
    (folder / "topics.tsv").unlink()
    (folder / "topics.jsonl").write_text("".join(json.dumps({"qid": q, "query": t}) + "\n" for q, t in topics))
    assert load_dataset(f"trec:{folder}").split("all") == plain


def test_a_missing_or_doubled_file_says_what_the_folder_needs(tmp_path):
    folder = write_trec_folder(tmp_path / "a", queries=2)
    (folder / "qrels.txt").rename(folder / "judgments.txt")
    with pytest.raises(DataError, match="no qrels file .*qrels.txt"):
        files(folder)
    (folder / "judgments.txt").rename(folder / "qrels.txt")
    (folder / "topics.jsonl").write_text('{"qid": "q0", "query": "x"}\n')
    with pytest.raises(DataError, match="2 topics files"):
        load_dataset(f"trec:{folder}")
    with pytest.raises(DataError, match="needs a folder"):
        load_dataset("trec")


def _bad(folder, kind):
    if kind == "unknown query":
        with open(folder / "qrels.txt", "a") as fh:
            fh.write("q99 0 p0-1 2\n")
        return "qrels.txt, line 17: qid 'q99' is not in the topics"
    if kind == "unknown passage":
        with open(folder / "qrels.txt", "a") as fh:
            fh.write("q1 0 nowhere 1\n")
        return "qrels.txt, line 17: docid 'nowhere' is not in the corpus"
    if kind == "grade":
        lines = (folder / "qrels.txt").read_text().splitlines()
        lines[4] = lines[4][:-1] + "4"
        (folder / "qrels.txt").write_text("\n".join(lines) + "\n")
        return "qrels.txt, line 5: column 4 (grade): 4 is outside the scheme 'trec'"
    lines = (folder / "corpus.jsonl").read_text().splitlines()  # a passage without text
    lines[2] = json.dumps({"id": "p0-2", "text": ""})
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    return 'corpus.jsonl, line 3: both "title" and "text" are empty'


@pytest.mark.parametrize("kind", ["unknown query", "unknown passage", "grade", "no text"])
def test_a_bad_row_names_file_and_line_or_is_skipped_and_counted(tmp_path, kind):
    folder = write_trec_folder(tmp_path / "a", queries=2)
    message = _bad(folder, kind)
    with pytest.raises(DataError) as err:
        load_dataset(f"trec:{folder}")
    assert message in str(err.value) and "--on-bad-row skip" in str(err.value)
    data = load_dataset(f"trec:{folder}", on_bad_row="skip")
    skipped = data.notes["skipped_rows"]
    assert skipped and message.split(", line ")[1].split(": ", 1)[1] in skipped[0]["error"]
    assert len(data.split("all")) == 16 - (kind in ("grade", "no text"))


def test_a_long_passage_is_kept_whole_and_counted(tmp_path):
    folder = write_trec_folder(tmp_path / "a", queries=2, long_passage=265_000)
    data = load_dataset(f"trec:{folder}")
    assert len(data.split("all")[0].item_text) == 265_000
    assert data.notes["long_items"] == 1 and data.notes["longest_item"] == 265_000
