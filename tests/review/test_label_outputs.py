"""eval.label's output files as a user meets them: qrels.txt of pairs without a `query_id` numbers the queries (as
`export --format qrels` does) and reads back; a resumed run writes into the new --out and names the new --known."""

from __future__ import annotations

import json

from labelling_helpers import write

from eval import label as eval_label
from hiera_dspy.data.trec import read_qrels
from hiera_dspy.labels import custom_scheme


def argv(pairs, out, *extra):
    return ["--dataset", f"jsonl:{pairs}", "--labels", "Bad,Good", "--method", "zero-shot", "--lm", "fake",
            "--knowledge", "none", "--out", str(out), *extra]


def test_qrels_of_pairs_without_query_ids_number_the_queries_and_read_back(tmp_path, patch_make_lm):
    """A pair without `query_id` is known by its query's text: qrels.txt cannot carry that text as its first column
    (`star wars 0 1892 3` has five columns), so the queries are numbered 1, 2, ... in run order."""
    patch_make_lm({"label": "Good"})
    rows = [{"id": f"p{i}", "query": q, "item_id": f"d{i}", "item_title": f"T{i}", "item_text": "x"}
            for i, q in enumerate(["star wars", "star wars", "alien"])]
    pairs = write(tmp_path / "pairs.jsonl", [json.dumps(r) for r in rows])
    eval_label.main(argv(pairs, tmp_path / "out"))
    assert all(len(line.split()) == 4 for line in (tmp_path / "out" / "qrels.txt").read_text().splitlines())
    qrels = read_qrels(tmp_path / "out" / "qrels.txt", custom_scheme("Bad,Good"))
    assert qrels == {("1", "d0"): 1, ("1", "d1"): 1, ("2", "d2"): 1}


def test_a_resumed_run_writes_into_the_new_out_and_names_the_new_known(tmp_path, patch_make_lm, capsys):
    patch_make_lm({"label": "Good"})
    rows = [{"id": f"p{i}", "query": "spy movie", "query_id": "q1", "item_id": f"d{i}", "item_title": f"T{i}",
             "item_text": "x"} for i in range(3)]
    pairs = write(tmp_path / "pairs.jsonl", [json.dumps(r) for r in rows])
    for name in ("first", "second"):  # the same judgments of the pairs' query, in two files
        write(tmp_path / f"{name}.jsonl", [json.dumps({"id": "k1", "query": "spy movie", "query_id": "q1",
                                                       "item_id": "d9", "item_title": "T", "item_text": "x",
                                                       "label": "Bad"})])
    first = eval_label.main(argv(pairs, tmp_path / "one", "--known", f"jsonl:{tmp_path / 'first.jsonl'}"))
    capsys.readouterr()
    second = eval_label.main(argv(pairs, tmp_path / "two", "--known", f"jsonl:{tmp_path / 'second.jsonl'}"))
    out = capsys.readouterr()
    assert second["run_id"] == first["run_id"]  # the same run, resumed
    assert (tmp_path / "two" / "labels.jsonl").is_file() and (tmp_path / "two" / "qrels.txt").is_file()
    assert "second.jsonl" in out.out and "first.jsonl" not in out.out
    assert "now go to" in out.err
