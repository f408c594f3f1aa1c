"""eval.export: a labelling run's final labels, a holes run's filled benchmark and a judged run's labels, written as
each tool's judgment list and read back; one format converted into another; a request naming no judgments refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from labelling_helpers import ANSWERS, holes_argv

from eval import export as eval_export
from eval import holes as eval_holes
from hiera_dspy.data.judgment_lists import read_list
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import custom_scheme, get_scheme

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "judgment_lists"


def test_a_labelling_runs_final_labels_as_quepid_and_srw(labelled, tmp_path):
    run_id, out = labelled
    records = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    final = [r for r in records if r["label"]]
    summary = eval_export.main(["--run", run_id, "--format", "quepid", "--out", str(tmp_path / "ratings.csv")])
    assert summary["judgments"] == len(final) == 4  # the escalated, undecided pair has no final label
    scheme = custom_scheme("Bad,Good")
    back = read_list(f"quepid:{tmp_path / 'ratings.csv'}", scheme)
    texts = {json.loads(p)["id"]: json.loads(p)["query"] for p in (out / "pairs.jsonl").read_text().splitlines()}
    assert [(j.query, j.item_id, scheme.labels[j.grade]) for j in back] == \
        [(texts[r["id"]], r["item_id"], r["label"]) for r in final]
    eval_export.main(["--run", run_id, "--format", "srw", "--out", str(tmp_path / "list.json")])
    body = json.loads((tmp_path / "list.json").read_text())
    assert body["name"] == "list" and len(body["judgmentRatings"]) == 4


def test_a_holes_runs_filled_benchmark_as_an_ltr_list(bench, patch_make_lm, tmp_path):
    patch_make_lm(ANSWERS)
    filled = eval_holes.main(holes_argv(bench, tmp_path / "filled"))
    eval_export.main(["--run", filled["run_id"], "--format", "esltr", "--out", str(tmp_path / "judgments.txt")])
    text = (tmp_path / "judgments.txt").read_text().splitlines()
    headers = dict(line[6:].split(": ", 1) for line in text if line.startswith("# qid:"))  # N -> the query's text
    lines = [line for line in text if not line.startswith("#")]
    topics = dict(line.split("\t") for line in Path(bench["topics"]).read_text().splitlines())
    qrels = (tmp_path / "filled" / "qrels.txt").read_text().splitlines()
    assert sorted((topics[q], d, g) for q, _, d, g in map(str.split, qrels)) == \
        sorted((headers[line.split()[1][4:]], line.split()[3], line.split()[0]) for line in lines)  # the same ones
    assert text[0] == "# qid:1: spy movie" and lines[0] == "1 qid:1 # d1"  # by query, the given judgments first


def test_a_judged_runs_labels(tmp_path, patch_make_lm):
    from eval import run as eval_run

    patch_make_lm()
    run = eval_run.main(["--dataset", "msrd", "--split", "dev", "--limit", "4", "--method", "zero-shot", "--lm", "fake",
                         "--knowledge", "none", "--out", str(tmp_path / "run")])
    run_id = run["run_id"] if isinstance(run, dict) else run.run_id
    eval_export.main(["--run", run_id, "--format", "qrels", "--out", str(tmp_path / "qrels.txt")])
    predictions = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    qrels = read_list(f"qrels:{tmp_path / 'qrels.txt'}", get_scheme("msrd"))
    labelled = [p for p in predictions if p["label"] and not p["error"]]
    assert len(qrels) == len(labelled) > 0


def test_one_format_into_another(tmp_path):
    eval_export.main(["--from", f"srw:{FIXTURES / 'srw_import.json'}", "--format", "quepid",
                      "--out", str(tmp_path / "ratings.csv")])
    text = (tmp_path / "ratings.csv").read_text().splitlines()
    assert text[:2] == ["query,docid,rating", "red dress,B077ZJXCTS,3"] and len(text) == 11


def test_skipped_rows_of_a_list_are_counted(tmp_path, capsys):
    (tmp_path / "r.csv").write_text("query,docid,rating\nq,d1,1\nq,d2,9\n", encoding="utf-8")
    done = eval_export.main(["--from", f"quepid:{tmp_path / 'r.csv'}", "--on-bad-row", "skip", "--format", "qrels",
                             "--out", str(tmp_path / "q.txt")])
    assert (done["judgments"], done["skipped"]) == (1, 1)
    assert "skipped 1 bad row(s) (--on-bad-row skip); the first:" in capsys.readouterr().err


def test_a_request_without_judgments_is_refused(tmp_path):
    with pytest.raises(RequestError, match="no such run"):
        eval_export.main(["--run", "nope", "--format", "srw", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        eval_export.main(["--format", "srw", "--out", str(tmp_path / "x.json")])  # argparse: --run or --from


def test_a_run_judged_with_labels_exports_without_them_again(tmp_path, patch_make_lm):
    """The run's config keeps its scale (config.json too): `export --run` reads its dataset back on that scale."""
    from eval import run as eval_run

    patch_make_lm({"label": "Good"})
    rows = [{"id": f"p{i}", "query": "spy movie", "query_id": "q1", "item_id": f"d{i}", "item_title": f"T{i}",
             "item_text": "x", "label": "Good" if i % 2 else "Bad"} for i in range(4)]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = eval_run.main(["--dataset", f"jsonl:{pairs}", "--labels", "Bad,Good", "--split", "all", "--method",
                         "zero-shot", "--lm", "fake", "--knowledge", "none", "--out", str(tmp_path / "run")])
    run_id = run["run_id"] if isinstance(run, dict) else run.run_id
    assert json.loads((tmp_path / "run" / "config.json").read_text())["scheme"]["labels"] == ["Bad", "Good"]
    eval_export.main(["--run", run_id, "--format", "qrels", "--out", str(tmp_path / "qrels.txt")])
    assert (tmp_path / "qrels.txt").read_text().splitlines() == [f"q1 0 d{i} 1" for i in range(4)]
