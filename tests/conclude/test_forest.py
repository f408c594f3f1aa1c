"""The forest plot of the conclusions (hiera_dspy.conclude.forest) renders a PNG of every system, exact values
included, beside the ranking before and after filling."""

from __future__ import annotations

from matplotlib.image import imread

from hiera_dspy.conclude.forest import draw
from hiera_dspy.conclude.holes import conclusions
from hiera_dspy.conclude.sample import Sample
from hiera_dspy.data.trec import RunLine
from hiera_dspy.labels import get_scheme


def test_the_forest_plot_renders_every_system(tmp_path):
    runs = {name: [] for name in ("a", "b", "c")}
    originals, records = {}, []
    for i in range(12):
        q = f"q{i}"
        originals[(q, "j")] = i % 2
        runs["a"].append(RunLine(q, "h", 1, 2.0, "a", 0))
        runs["b"].append(RunLine(q, "j", 1, 2.0, "b", 0))  # no hole: exact
        runs["c"].append(RunLine(q, "h" if i % 3 else "j", 1, 2.0, "c", 0))
        source = "human" if i < 6 else "machine"
        records.append({"id": f"{q}:h", "query_id": q, "item_id": "h", "machine_label": "Irrelevant",
                        "confidence": 0.8, "label": "Relevant" if source == "human" and i % 2 else "Irrelevant",
                        "source": source})
    sample = Sample([f"q{i}" for i in range(6)], 0, "random", "6")
    c = conclusions(runs, originals, records, sample, get_scheme("msrd"), 1)
    assert c["estimates"]["b"]["p@1"]["rule"] == "exact"
    before = {"a": {"ndcg@1": 0.0, "p@1": 0.0}, "b": {"ndcg@1": 0.5, "p@1": 0.5}, "c": {"ndcg@1": None, "p@1": 0.2}}
    path = draw(c, before, tmp_path / "forest.png")
    image = imread(path)
    assert image.shape[0] > 300 and image.shape[1] > 800 and image[..., :3].std() > 0.05  # drawn, not blank
