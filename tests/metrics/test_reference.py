"""The embed-lr reference is an explicit object: fitted once, shared by every summary line it is given to."""

from __future__ import annotations

from hiera_dspy.data import load_dataset
from hiera_dspy.metrics.reference import ReferenceScorer, summary_line
from hiera_dspy.signals import RelevanceScorer


def test_reference_scores_every_pair_and_fits_once(monkeypatch):
    """A judgment without a label is wrong in the comparison too (McNemar over every pair, as hiera_dspy.metrics), and the
    scorer is fitted once (a compile's before/after lines share it)."""
    monkeypatch.setenv("HIERA_REFERENCE_EMBEDDER", "lexical")
    fits = []
    real_fit = RelevanceScorer.fit
    monkeypatch.setattr(RelevanceScorer, "fit", lambda self, pairs: fits.append(1) or real_fit(self, pairs))
    data = load_dataset("msrd")
    pairs = data.split("dev", 6)
    reference = ReferenceScorer(data)
    ref = reference.labels(pairs)
    rows = [{"id": p.id, "gold": p.label, "label": None, "error": "boom"} for p in pairs]  # every judgment failed
    line = summary_line(rows, list(data.scheme.labels), reference, pairs, "zero-shot")
    right = sum(r == p.label for r, p in zip(ref, pairs))
    assert right > 0
    assert f"b={right} c=0" in line, line
    assert len(fits) == 1


def test_no_reference_without_a_train_split_or_when_turned_off(monkeypatch):
    data = load_dataset("msrd")
    pairs = data.split("dev", 3)
    rows = [{"id": p.id, "gold": p.label, "label": p.label} for p in pairs]
    assert summary_line(rows, list(data.scheme.labels)) == summary_line(rows, list(data.scheme.labels), None, pairs)
    assert "embed-lr" not in summary_line(rows, list(data.scheme.labels), None, pairs)
    monkeypatch.setenv("HIERA_REFERENCE", "none")
    assert ReferenceScorer(data).labels(pairs) is None


def test_a_graded_line_says_the_weighted_kappa_and_the_rmse_against_the_raters_mean():
    """Home Depot's pairs keep the raters' mean (`Pair.grade`, 0-2): the line scores the labels against it, and a
    judgment without a label is counted, not given a grade."""
    from hiera_dspy.records import Pair

    labels = ["Irrelevant", "Partially relevant", "Highly relevant"]
    grades = [0.0, 0.33, 1.0, 1.67, 2.0, 2.0]
    pairs = [Pair(f"p{i}", "q", "t", "", labels[round(g)], "q", f"i{i}", grade=g) for i, g in enumerate(grades)]
    said = [labels[0], labels[0], labels[1], labels[2], labels[2], None]
    rows = [{"id": p.id, "gold": p.label, "label": s} for p, s in zip(pairs, said)]
    line = summary_line(rows, labels, None, pairs)
    rmse = (sum((labels.index(s) - g) ** 2 for s, g in zip(said[:5], grades[:5])) / 5) ** 0.5
    assert f"RMSE {rmse:.3f} against the source's graded value" in line, line
    assert "on 5 labelled pairs (1 without a label)" in line
    assert "quadratic-weighted kappa" in line
    assert "RMSE" not in summary_line(rows, labels) and "quadratic-weighted" in summary_line(rows, labels)
    binary = summary_line([{"id": "a", "gold": "Relevant", "label": "Relevant"},
                           {"id": "b", "gold": "Irrelevant", "label": "Relevant"}], ["Irrelevant", "Relevant"])
    assert "weighted" not in binary


def _labelled_file(tmp_path, n_queries: int = 30):
    """MSRD train pairs of `n_queries` queries written as a user's labelled JSONL file (its own train/dev splits)."""
    import json

    data = load_dataset("msrd")
    chosen, rows = [], {}
    for p in data.splits["train"]:
        if p.query_id not in rows and len(rows) >= n_queries:
            continue
        rows.setdefault(p.query_id, []).append(p)
    chosen = [p for ps in rows.values() for p in ps]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"id": f"mine:{i}", "query": p.query, "item_title": p.item_title,
                                        "item_text": p.item_text, "label": p.label, "query_id": p.query_id,
                                        "item_id": p.item_id}) + "\n" for i, p in enumerate(chosen)))
    return path, data.scheme


def _watch_fits(monkeypatch) -> tuple[dict, list]:
    """Record each fitted scorer's training pair ids and each prediction's (scorer, pair ids)."""
    fitted, predicted, alive = {}, [], []  # `alive` keeps each scorer, so no later one is given its id
    real_fit, real_predict = RelevanceScorer.fit, RelevanceScorer.predict_many

    def fit(self, pairs):
        alive.append(self)
        fitted[id(self)] = {p.id for p in pairs}
        return real_fit(self, pairs)

    def predict_many(self, pairs):
        predicted.append((id(self), [p.id for p in pairs]))
        return real_predict(self, pairs)

    monkeypatch.setattr(RelevanceScorer, "fit", fit)
    monkeypatch.setattr(RelevanceScorer, "predict_many", predict_many)
    return fitted, predicted


def test_a_labelled_file_judged_whole_gets_a_reference_never_fitted_on_the_pair_it_scores(
        patch_make_lm, tmp_path, capsys, monkeypatch):
    """`--split all` of a labelled file holds its own train split: the reference is cross-fitted by query on the
    judged pairs, each pair scored by a model whose training did not include it, and the line and metrics.json say
    so."""
    import json

    import eval.run as run_cli

    monkeypatch.setenv("HIERA_REFERENCE_EMBEDDER", "lexical")
    path, scheme = _labelled_file(tmp_path)
    fitted, predicted = _watch_fits(monkeypatch)
    patch_make_lm({"label": lambda p: "Relevant" if "action" in p.lower() else "Irrelevant"})
    run_cli.main(["--dataset", f"jsonl:{path}", "--scheme", "msrd", "--split", "all", "--method", "zero-shot",
                  "--knowledge", "none", "--lm", "fake", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert "embed-lr (5-fold by query on these pairs) on the same pairs: " in out, out
    judged = {json.loads(line)["id"] for line in (path.read_text().splitlines())}
    scored = [(scorer, i) for scorer, ids in predicted for i in ids]
    assert {i for _, i in scored} == judged  # every judged pair scored once by the reference
    assert len(scored) == len(judged)
    assert not [i for scorer, i in scored if i in fitted[scorer]]  # none by a model fitted on it
    assert len(fitted) == 5
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["reference"]["fitted"] == "5-fold by query on these pairs"
    assert metrics["reference"]["method"] == "embed-lr" and "p_value" in metrics["reference"]["mcnemar"]


def test_the_dev_split_keeps_the_reference_fitted_on_train_and_too_few_queries_leave_it_out(monkeypatch, tmp_path):
    """MSRD's dev pairs share nothing with its train split: embed-lr fitted on train, as before. Pairs among the
    train pairs that span fewer queries than folds: no reference, and the line says why."""
    from hiera_dspy.metrics.reference import summarize

    monkeypatch.setenv("HIERA_REFERENCE_EMBEDDER", "lexical")
    data = load_dataset("msrd")
    labels = list(data.scheme.labels)
    dev = data.split("dev", 40)
    rows = [{"id": p.id, "gold": p.label, "label": p.label} for p in dev]
    reference = ReferenceScorer(data)
    line, record = summarize(rows, labels, reference, dev, "zero-shot")
    n_train = sum(p.label in labels for p in data.splits["train"])
    assert f"embed-lr (fitted on train, {n_train:,} pairs) on the same pairs: " in line, line
    assert record["fitted"] == f"fitted on train, {n_train:,} pairs"
    assert reference.labels(dev) == reference._scorer.predict_many(dev)

    queries = sorted({p.query_id for p in data.splits["train"]})[:3]
    few = [p for p in data.splits["train"] if p.query_id in queries]
    rows = [{"id": p.id, "gold": p.label, "label": p.label} for p in few]
    line, record = summarize(rows, labels, reference, few, "zero-shot")
    assert line.endswith("; no embed-lr reference: these pairs are among its train pairs and span 3 queries, too few "
                         "for 5 folds by query"), line
    assert record == {"method": "embed-lr", "left_out": line.split("no embed-lr reference: ")[1]}


def test_labelling_a_labelled_file_closes_with_the_cross_fitted_reference(patch_make_lm, tmp_path, capsys,
                                                                           monkeypatch):
    import json

    import eval.label as label_cli

    monkeypatch.setenv("HIERA_REFERENCE_EMBEDDER", "lexical")
    path, _ = _labelled_file(tmp_path, n_queries=40)
    patch_make_lm({"label": lambda p: "Relevant" if "action" in p.lower() else "Irrelevant"})
    label_cli.main(["--dataset", f"jsonl:{path}", "--scheme", "msrd", "--method", "zero-shot", "--knowledge", "none",
                    "--lm", "fake", "--out", str(tmp_path / "labelled")])
    out = capsys.readouterr().out
    assert "; embed-lr (5-fold by query on these pairs) on the same pairs: " in out, out
    metrics = json.loads((tmp_path / "labelled" / "metrics.json").read_text())
    assert metrics["reference"]["fitted"] == "5-fold by query on these pairs"
