"""The judgment-list writers: each format round-trips a 1,000-judgment file to identical content (written, read,
written again: the same bytes; read back: the same judgments), and writes what each tool's documentation shows; a
format is one module and one line of `FORMATS` (a toy format added that way is read, sniffed and written)."""

from __future__ import annotations

import json
import random
import textwrap
from collections import Counter

import pytest

from hiera_dspy.data import FORMATS
from hiera_dspy.data.judgment_lists import WRITERS, read_known, read_list, token_ids, write_list
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import get_scheme

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
    ids = token_ids(known.by_query, keep=str.isdigit) if fmt == "esltr" else {q: q for q in known.by_query}
    expect = [(ids[j.query_id], j.item_id, j.grade) for j in known]  # LTR's ids are numbers (its demo reads \d+)
    assert [(j.query_id, j.item_id, j.grade) for j in back] == expect
    if fmt != "qrels":  # qrels carry no query text
        assert [j.query for j in back] == [j.query for j in known]


def test_each_writer_writes_the_documented_shape(tmp_path):
    known = Known.of(TREC, [KnownJudgment("1", "1370", 3, query="star trek"),
                            KnownJudgment("2", "B077ZJXCTS", 0, query="red dress, long")])
    text = {fmt: write_list(fmt, tmp_path / fmt, known, name="Imported Judgments").read_text() for fmt in WRITERS}
    assert text["esltr"] == ("# qid:1: star trek\n# qid:2: red dress, long\n"  # the plugin's demo loader needs them
                             "3 qid:1 # 1370\n0 qid:2 # B077ZJXCTS\n")
    assert text["quepid"] == 'query,docid,rating\nstar trek,1370,3\n"red dress, long",B077ZJXCTS,0\n'
    assert text["qrels"] == "1 0 1370 3\n2 0 B077ZJXCTS 0\n"
    body = json.loads(text["srw"])
    assert body["type"] == "IMPORT_JUDGMENT" and body["name"] == "Imported Judgments"
    assert body["judgmentRatings"][1] == {"query": "red dress, long",
                                          "ratings": [{"docId": "B077ZJXCTS", "rating": "0.000"}]}


def test_token_formats_number_queries_whose_ids_are_texts():
    known = Known.of(TREC, [KnownJudgment("star trek", "a", 1, query="star trek"),
                            KnownJudgment("alien", "b", 2, query="alien")])
    assert token_ids(known.by_query) == {"star trek": "1", "alien": "2"}
    assert token_ids(["q9"]) == {"q9": "q9"} and token_ids(["q9"], keep=str.isdigit) == {"q9": "1"}


def test_a_text_format_refuses_a_query_without_text_and_leaves_no_file(tmp_path):
    known = Known.of(TREC, [KnownJudgment("q1", "d1", 1, source="qrels.txt:1")])
    with pytest.raises(RequestError, match="query 'q1' .judgment qrels.txt:1. has no text, and Quepid knows a query"):
        write_list("quepid", tmp_path / "r.csv", known)
    assert not (tmp_path / "r.csv").exists()


def test_quepid_writes_a_formula_cell_as_text_and_reads_it_back(tmp_path):
    """A query that starts with =, +, - or @ is a formula to a spreadsheet: written after a space, as Quepid writes
    it; read back, the same query."""
    known = Known.of(TREC, [KnownJudgment(q, "d1", 1, query=q) for q in ("=HYPERLINK(\"x\")", "+1", "-x", "@sum",
                                                                           "plain")])
    path = write_list("quepid", tmp_path / "r.csv", known)
    cells = [line.split(",")[0] for line in path.read_text().splitlines()[1:]]
    assert cells == ['" =HYPERLINK(""x"")"', " +1", " -x", " @sum", "plain"]
    assert [j.query for j in read_list(f"quepid:{path}", TREC)] == [j.query for j in known]


def test_a_toy_format_is_one_module_and_one_line(tmp_path, monkeypatch):
    """A new format: one module (read, looks_like, write) and one line in FORMATS; it is then read as --known
    (named or sniffed) and written by export."""
    (tmp_path / "toy_list_format.py").write_text(textwrap.dedent('''
        """A toy judgment list: `TOY|query_id|item_id|grade` a line."""
        from hiera_dspy.data.known import KnownJudgment

        def read(path, scheme, counts):
            for lineno, text in enumerate(path.read_text().splitlines(), 1):
                _, qid, doc, grade = text.split("|")
                yield KnownJudgment(qid, doc, int(grade), source=f"{path}:{lineno}")

        def looks_like(path, head):
            return head.startswith("TOY|")

        def write(known, **_):
            for j in known:
                yield f"TOY|{j.query_id}|{j.item_id}|{j.grade}\\n"
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(FORMATS, "toy", "toy_list_format")
    known = Known.of(TREC, [KnownJudgment("q1", "d1", 2), KnownJudgment("q2", "d9", 0)])
    path = write_list("toy", tmp_path / "list.toy", known)
    assert path.read_text() == "TOY|q1|d1|2\nTOY|q2|d9|0\n"
    counts: Counter = Counter()
    back = read_known(str(path), TREC, counts=counts)  # sniffed by its first line
    assert [(j.query_id, j.item_id, j.grade) for j in back] == [("q1", "d1", 2), ("q2", "d9", 0)]
    assert counts["judgments"] == 2 and "toy" in WRITERS


def test_an_ltr_list_names_each_querys_keywords_as_the_plugins_demo_loader_reads_them(tmp_path):
    """The LTR plugin's demo loader reads `# qid:N: keywords` headers and `grade qid:N # docid` lines (N digits) and
    looks every line's qid up among the headers: every qid written has its header."""
    import re

    known = Known.of(TREC, [KnownJudgment("star trek", "1370", 3, query="star trek", item_title="Star Trek"),
                            KnownJudgment("rambo", "7555", 4 - 1, query="rambo"),
                            KnownJudgment("star trek", "1371", 0, query="star trek")])
    text = write_list("esltr", tmp_path / "judgments.txt", known).read_text().splitlines()
    keywords = {int(m[1]): m[2] for line in text if (m := re.match(r"# qid:(\d+): (.*)$", line))}
    judged = [re.match(r"(\d)\s+qid:(\d+)\s+#\s+(\w+)", line) for line in text if not line.startswith("#")]
    assert keywords == {1: "star trek", 2: "rambo"}
    assert [(int(m[1]), keywords[int(m[2])], m[3]) for m in judged] == [(3, "star trek", "1370"),
                                                                         (0, "star trek", "1371"), (3, "rambo", "7555")]
    assert text[2] == "3 qid:1 # 1370 Star Trek"  # the document's title after its id, as in the demo
