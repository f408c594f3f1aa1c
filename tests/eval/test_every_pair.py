"""eval.run end to end with the fake LM: judgments that end in an error count as wrong in metrics.json."""

import json
import re
import zlib

import pytest

from eval import run
from hiera_dspy.metrics.classification import classification_metrics


def test_errors_count_in_kappa(tmp_path, patch_make_lm, monkeypatch):
    monkeypatch.setenv("HIERA_RETRY_BASE_DELAY", "0")  # the unparseable label is retried: no backoff sleep here
    # the fake Judge says Relevant, or (for about a third of the queries, retries included) an unparseable label
    def label(prompt):
        query = re.search(r"\[\[ ## query ## \]\]\n(.*)", prompt).group(1)
        return "Maybe" if zlib.crc32(query.encode()) % 3 == 0 else "Relevant"

    patch_make_lm({"label": label})
    out = tmp_path / "o"
    metrics = run.main(["--dataset", "msrd", "--split", "dev", "--method", "judge-only", "--limit", "12",
                        "--knowledge", "none", "--out", str(out), "--max-error-rate", "1"])
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    errors = [r for r in rows if r["error"]]
    assert len(rows) == 12 and 0 < len(errors) < 12
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["n"] == 12 and saved["unlabelled"] == len(errors) and saved["coverage"] == pytest.approx(
        1 - len(errors) / 12)
    gold, pred = [r["gold"] for r in rows], [r["label"] for r in rows]
    labels = ["Irrelevant", "Relevant"]
    assert saved["kappa"] == pytest.approx(classification_metrics(gold, pred, labels)["kappa"])
    # the errored pairs are wrong: accuracy over every pair is below the answered-only view
    right = sum(g == p for g, p in zip(gold, pred))
    assert saved["accuracy"] == pytest.approx(right / 12)
    answered = [(g, p) for g, p in zip(gold, pred) if p is not None]
    assert saved["answered_only"]["accuracy"] == pytest.approx(sum(g == p for g, p in answered) / len(answered))
    assert saved["answered_only"]["kappa"] != saved["kappa"]
    assert metrics["kappa"] == saved["kappa"]
