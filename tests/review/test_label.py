"""eval.label on pairs without gold: labels with confidence and source, qrels grades = scheme index, no metric faked;
pairs with gold are scored; outputs are written atomically; jsonl accepts rows without a label."""

from __future__ import annotations

import json

import pytest
from labelling_helpers import ANSWERS, write

from eval import label as eval_label
from eval import run as eval_run
from hiera_dspy.data import load_dataset
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import custom_scheme


def argv(pairs, out, *extra):
    return ["--dataset", f"jsonl:{pairs}", "--labels", "Bad,Good", "--method", "dream", "--lm", "fake",
            "--knowledge", "none", "--out", str(out), *extra]


def test_jsonl_without_labels_is_an_unlabelled_split(unlabelled):
    ds = load_dataset(f"jsonl:{unlabelled}", custom_scheme("Bad,Good"))
    assert list(ds.splits) == ["all"] and all(p.label is None for p in ds.split())


def test_labels_qrels_and_no_metrics_without_gold(unlabelled, patch_make_lm, tmp_path, capsys):
    patch_make_lm(ANSWERS)
    out = tmp_path / "mine"
    summary = eval_label.main(argv(unlabelled, out))
    records = {r["id"]: r for r in map(json.loads, (out / "labels.jsonl").read_text().splitlines())}
    assert set(records["p1"]) >= {"id", "query_id", "item_id", "label", "confidence", "distribution", "escalated",
                                  "method", "confidence_source", "source", "machine_label"}
    assert [(r["label"], r["confidence"], r["escalated"]) for r in records.values()] == [
        ("Good", 1.0, False), ("Bad", 1.0, False), ("Good", 0.75, False), (None, 0.0, True), ("Good", 1.0, False)]
    assert {r["confidence_source"] for r in records.values()} == {"dream-agreement"}
    assert (out / "qrels.txt").read_text() == "q1 0 d1 1\nq2 0 d2 0\nq3 0 d3 1\nq5 0 d5 1\n"
    assert not (out / "metrics.json").exists()
    assert "metrics skipped" in capsys.readouterr().err
    assert summary["escalated"] == 1 and summary["labelled"] == 4
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*"))  # temp files renamed away


def test_pairs_with_gold_are_scored(tmp_path, patch_make_lm):
    patch_make_lm(ANSWERS)
    rows = [{"id": "g1", "query": "spy movie", "item_title": "A", "item_text": "a", "label": "Good"},
            {"id": "g2", "query": "cat film", "item_title": "B", "item_text": "b", "label": "Good"},
            {"id": "u3", "query": "cat film", "item_title": "C", "item_text": "c"}]
    pairs = write(tmp_path / "mixed.jsonl", [json.dumps(r) for r in rows])
    eval_label.main(argv(pairs, tmp_path / "out"))
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["n"] == 2 and metrics["accuracy"] == 0.5 and metrics["gold_pairs"] == 2


def test_eval_run_on_unlabelled_pairs_scores_nothing(unlabelled, patch_make_lm, tmp_path):
    patch_make_lm(ANSWERS)
    metrics = eval_run.main(["--dataset", f"jsonl:{unlabelled}", "--labels", "Bad,Good", "--method", "dream",
                             "--lm", "fake", "--knowledge", "none", "--out", str(tmp_path / "r")])
    assert metrics["n"] == 0 and metrics["accuracy"] is None and metrics["kappa"] is None and metrics["pairs"] == 5


def test_a_learned_method_without_labelled_pairs_says_so(unlabelled, tmp_path):
    with pytest.raises(HieraError, match="embed-lr: .*labelled train pairs"):
        eval_label.main(["--dataset", f"jsonl:{unlabelled}", "--labels", "Bad,Good", "--method", "embed-lr",
                         "--set", "embedder=lexical", "--lm", "fake", "--knowledge", "none",
                         "--out", str(tmp_path / "o")])


def test_label_engines_agree_and_dry_run_sends_nothing(unlabelled, patch_make_lm, tmp_path, capsys):
    """eval.label takes eval.run's --engine and --dry-run: the async engine labels like the threads engine, and a dry
    run prints an estimate, starts no run and writes no output."""
    patch_make_lm(ANSWERS)
    labels = {}
    for engine in ("threads", "async"):
        out = tmp_path / engine
        eval_label.main(argv(unlabelled, out, "--engine", engine, "--store", str(tmp_path / f"{engine}.sqlite")))
        labels[engine] = [json.loads(line)["label"] for line in (out / "labels.jsonl").read_text().splitlines()]
    assert labels["async"] == labels["threads"] and labels["threads"].count(None) == 1
    capsys.readouterr()
    dry = tmp_path / "dry"
    assert eval_label.main(argv(unlabelled, dry, "--dry-run", "--store", str(tmp_path / "dry.sqlite"))) == {}
    assert "tokens" in capsys.readouterr().out
    assert not dry.exists() or not any(dry.iterdir())
