"""bench.local_probs' reasoning table scores every pair: a failed judgment is wrong, not dropped."""

from __future__ import annotations

from hiera_dspy.data import load_dataset


def test_reasoning_table_counts_a_failed_judgment_as_wrong(monkeypatch):
    import argparse

    import bench.local_probs as bench

    dev = load_dataset("msrd").split("dev")[:4]
    ok = {"Relevant": 0.8, "Irrelevant": 0.2}

    def stored(p, label, error=None):
        fields = {} if error else {"label": label, "sampled_label": label, "label_probs": ok}
        return {"id": p.id, "fields": fields, "error": error, "seconds": 2.0, "tokens": 100}

    rp = {p.id: stored(p, p.label) for p in dev[:3]} | {dev[3].id: stored(dev[3], None, "AdapterParseError: x")}
    zs = {p.id: stored(p, p.label) for p in dev}
    monkeypatch.setattr(bench, "judged", lambda *a, **k: rp)
    args = argparse.Namespace(reasoning_limit=4)
    scores = {p.id: {"Irrelevant": 0.5, "Relevant": 0.5} for p in dev}
    text = bench.reasoning_table(args, [], dev, scores, zs, ["Irrelevant", "Relevant"], 0.01)
    sampled = next(line for line in text.splitlines() if line.startswith("| reasoning+probs (sampled)"))
    assert "| 4 |" in sampled and "| 0.750 |" in sampled  # 3 right of 4: the failure is wrong, not dropped
