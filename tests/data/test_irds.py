"""`irds:ID` through ir_datasets, on a dataset registered from local files with ir_datasets' own components (no
download): the same pairs as `trec:` of the same files, documents looked up by id only, bad qrels named or skipped,
an unknown id or a missing package a clear error."""

from __future__ import annotations

import builtins

import pytest

from hiera_dspy.data import BadRows, DataError, load_dataset
from hiera_dspy.data.irds import benchmark
from hiera_dspy.labels import get_scheme
from hiera_dspy.testing import register_irds, write_trec_folder

pytest.importorskip("ir_datasets")


def test_the_same_pairs_and_splits_as_the_trec_folder(tmp_path):
    folder = write_trec_folder(tmp_path / "dl")
    spec = register_irds(f"hiera-test/{tmp_path.name}", folder)
    data, same = load_dataset(spec), load_dataset(f"trec:{folder}")
    assert data.name == spec and data.scheme.name == "trec"
    for split in ("all", "train", "dev", "eval"):
        assert data.split(split) == same.split(split)


def test_documents_are_looked_up_only_for_judged_and_retrieved_ids(tmp_path, monkeypatch):
    import ir_datasets

    folder = write_trec_folder(tmp_path / "dl", queries=2, passages=4)
    with open(folder / "corpus.jsonl", "a") as fh:
        fh.write('{"id": "spare", "text": "never judged"}\n{"id": "ranked", "text": "retrieved only"}\n')
    spec = register_irds(f"hiera-test/{tmp_path.name}", folder)
    dataset = ir_datasets.load(spec[5:])
    monkeypatch.setattr(type(dataset), "docs_iter", lambda self: pytest.fail("the whole corpus was iterated"),
                        raising=False)
    topics, corpus, qrels, _ = benchmark(spec[5:], get_scheme("trec"), BadRows(), ["ranked"])
    assert set(corpus) == {d for _, d in qrels} | {"ranked"} and "spare" not in corpus
    assert len(topics) == 2 and len(qrels) == 8


def test_a_bad_qrel_is_named_or_skipped_and_counted(tmp_path):
    folder = write_trec_folder(tmp_path / "dl", queries=2, passages=4)
    with open(folder / "qrels.txt", "a") as fh:
        fh.write("q0 0 p0-9 1\nq1 0 p0-0 7\n")  # an unknown passage, a grade outside 0-3
    spec = register_irds(f"hiera-test/{tmp_path.name}", folder)
    with pytest.raises(DataError, match=r"irds:.* qrels, qrel 10 \(qid q1, docid p0-0\): grade 7 is outside"):
        load_dataset(spec)
    data = load_dataset(spec, on_bad_row="skip")
    errors = [row["error"] for row in data.notes["skipped_rows"]]
    assert len(errors) == 2 and "outside the scheme" in errors[0] and "'p0-9' is not in the corpus" in errors[1]
    assert len(data.split("all")) == 8


def test_an_unknown_id_and_a_missing_package_say_what_to_do(monkeypatch):
    with pytest.raises(DataError, match="knows no dataset 'no/such-dataset'"):
        load_dataset("irds:no/such-dataset")
    real_import = builtins.__import__

    def no_irds(name, *args, **kwargs):
        if name == "ir_datasets":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_irds)
    with pytest.raises(DataError, match=r"not installed; pip install 'hiera-dspy\[irds\]'"):
        load_dataset("irds:msmarco-passage/trec-dl-2020/judged")
