"""A judgment list's queries matched to the pairs' by id, else by normalised text (`data/known_match.py`): Quepid and
SRW lists, which name queries by their text, against TREC topics and JSONL pairs match every query they share; a list
matching none is an error naming its queries; one matching some is a warning with the counts."""

import json

import pytest

from hiera_dspy.data import DataError, load_dataset
from hiera_dspy.data.known import Known, KnownJudgment
from hiera_dspy.data.known_evidence import read_evidence, use
from hiera_dspy.data.known_match import matched, normalised
from hiera_dspy.labels import get_scheme
from hiera_dspy.review.known_report import known_section, known_summary
from hiera_dspy.testing import write_trec_folder

TREC = get_scheme("trec")


def test_normalised_text_folds_case_width_punctuation_and_spaces():
    assert normalised("  Star   WARS: Episode IV?! ") == normalised("star wars episode iv") == "star wars episode iv"
    assert normalised("ｃｏｆｆｅｅ") == "coffee" and normalised(None) == ""


def test_a_query_named_by_text_takes_the_pairs_id_and_ids_that_match_stay():
    known = Known.of(TREC, [KnownJudgment("Star Wars!", "d1", 2, query="Star Wars!", source="r.csv:2"),
                            KnownJudgment("q2", "d2", 1, query="whatever", source="r.csv:3")])
    counts: dict = {}
    out = matched(known, {"q1": "star wars", "q2": "star trek"}, counts)
    assert out.counts() == {"q1": 1, "q2": 1} and out.for_query("q1")[0].query == "star wars"
    assert counts == {"matched_queries": 2, "text_matched_queries": 1}


@pytest.fixture
def topics(tmp_path):
    """A TREC folder (topics q0..q3: "what about X and Y") and its topics' texts."""
    folder = write_trec_folder(tmp_path / "bench", queries=4, passages=2)
    return folder, dict(line.split("\t") for line in (folder / "topics.tsv").read_text().splitlines())


def quepid(path, rows):
    path.write_text("query,docid,rating\n" + "".join(f'"{q}",{d},{g}\n' for q, d, g in rows))
    return f"quepid:{path}"


def srw(path, rows):
    by_query: dict = {}
    for q, d, g in rows:
        by_query.setdefault(q, []).append({"docId": d, "rating": f"{g}.000"})
    path.write_text(json.dumps({"name": "Imported Judgments", "type": "IMPORT_JUDGMENT",
                                "judgmentRatings": [{"query": q, "ratings": r} for q, r in by_query.items()]}))
    return f"srw:{path}"


@pytest.mark.parametrize("write", [quepid, srw])
def test_a_text_named_list_matches_every_query_it_shares_with_trec_topics(topics, tmp_path, write):
    folder, texts = topics
    dataset = load_dataset(f"trec:{folder}")
    pairs = dataset.split("all")
    shared = [texts["q0"].upper() + "?", f"  {texts['q2']} ", texts["q3"].title()]
    spec = write(tmp_path / "list", [(q, f"new{i}", i % 4) for i, q in enumerate(shared)] + [("not a topic", "x", 1)])
    evidence = read_evidence(spec, "error", dataset, pairs)
    assert set(evidence.known.by_query) == {"q0", "q2", "q3", "not a topic"}
    found = use(evidence, False, {})
    assert (found["matched_queries"], found["text_matched_queries"], found["outside_queries"]) == (3, 3, 1)
    warning = "Warning: 1 of the list's 4 queries match no query of the pairs to judge"
    assert warning in known_summary(found) and warning in "\n".join(known_section(found))


@pytest.mark.parametrize("write", [quepid, srw])
def test_a_text_named_list_matches_jsonl_pairs_and_its_pair_judgments_are_the_pairs_own(tmp_path, write):
    pairs_file = tmp_path / "pairs.jsonl"
    pairs_file.write_text("".join(json.dumps({"id": f"p{i}", "query_id": f"n{i}", "query": q, "item_id": f"d{i}",
                                              "item_title": "", "item_text": "a passage", "label": "Related"}) + "\n"
                                  for i, q in enumerate(["Star Wars", "red dress, long"])))
    dataset = load_dataset(f"jsonl:{pairs_file}", scheme=TREC)
    spec = write(tmp_path / "list", [("star wars", "d9", 3), ("RED DRESS LONG", "d8", 0)])
    evidence = read_evidence(spec, "error", dataset, dataset.split("all"))
    assert evidence.known.counts() == {"n0": 1, "n1": 1} and evidence.counts["outside_queries"] == 0
    own = write(tmp_path / "own", [("star wars", "d0", 3)])  # the pair n0/d0 itself, named by its text
    with pytest.raises(DataError, match="is a known judgment and a pair to judge"):
        read_evidence(own, "error", dataset, dataset.split("all"))


def test_a_list_matching_no_query_is_an_error_naming_its_first_queries(topics, tmp_path):
    folder, _ = topics
    dataset = load_dataset(f"trec:{folder}")
    spec = quepid(tmp_path / "r.csv", [(f"unrelated query {i}", f"d{i}", 1) for i in range(5)])
    with pytest.raises(DataError) as err:
        read_evidence(spec, "error", dataset, dataset.split("all"))
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'r.csv'}: none of the list's 5 queries is a query of the pairs")
    assert "'unrelated query 0', 'unrelated query 1', 'unrelated query 2' and 2 more" in message
    assert "q0 ('what about" in message
