"""A run's settings read once from the store as a frozen record (`hiera_dspy.store.run_settings`)."""

from __future__ import annotations

import dataclasses

import pytest

from hiera_dspy.labels import get_scheme
from hiera_dspy.store.run_settings import RunSettings, read_settings
from hiera_dspy.store.run_store import RunStore

SCHEME = get_scheme("trec").to_dict()


def _store(tmp_path, run_id: str, identity: dict) -> RunStore:
    store = RunStore(tmp_path / "store.sqlite")
    store.start_run(run_id, identity)
    return store


def test_a_holes_run_reads_its_labelling_section(tmp_path):
    labelling = {"kind": "holes", "out": str(tmp_path / "out"), "scheme": SCHEME, "depth": 10, "ci": 0.9,
                 "qrels": "/q.txt", "runs": ["/a.run"]}
    store = _store(tmp_path, "h1", {"method": "hiera", "config": {"k": 1}, "dataset": "holes:/q.txt",
                                    "labelling": labelling})
    s = read_settings(store, "h1")
    assert (s.run_id, s.method, s.dataset, dict(s.config)) == ("h1", "hiera", "holes:/q.txt", {"k": 1})
    assert s.kind() == "holes" and s.labelling.out == tmp_path / "out"
    assert s.labelling.scheme.labels == get_scheme("trec").labels
    assert (s.labelling.get("depth"), s.labelling.get("ci"), s.labelling.get("absent", 3)) == (10, 0.9, 3)


def test_a_label_run_and_a_judged_run_with_its_scale(tmp_path):
    label = RunSettings.of("l1", {"method": "zero", "labelling": {"kind": "label", "out": "o", "scheme": SCHEME}})
    assert label.kind() == "label" and label.scheme is None
    judged = RunSettings.of("j1", {"method": "zero", "dataset": "msrd", "split": "test", "limit": 5,
                                   "scheme": SCHEME})
    assert judged.kind() is None and judged.labelling is None
    assert (judged.split, judged.limit, judged.scheme.name) == ("test", 5, "trec")


def test_an_older_run_without_a_scale_or_method_reads(tmp_path):
    old = RunSettings.of("o1", {"config": {}})
    assert (old.method, old.scheme, old.labelling, old.dataset) == ("?", None, None, None)


def test_an_unknown_run_reads_as_none(tmp_path):
    assert read_settings(_store(tmp_path, "r1", {"method": "m"}), "nope") is None


def test_the_settings_are_frozen_and_read_only():
    s = RunSettings.of("r1", {"method": "m", "config": {"k": 1}, "labelling": {"kind": "label", "out": "o",
                                                                              "scheme": SCHEME}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.method = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.identity["method"] = "other"  # type: ignore[index]
    with pytest.raises(TypeError):
        s.config["k"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        s.labelling.section["out"] = "elsewhere"  # type: ignore[index]
