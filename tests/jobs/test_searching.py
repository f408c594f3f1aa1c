"""The search's library part (`hiera_dspy.jobs.searching`): the knowledge sources a search may try, and a dataset
without the splits a search needs refused before any trial."""

import pytest

from hiera_dspy.errors import RequestError
from hiera_dspy.jobs import searching


def test_knowledge_sources(monkeypatch):
    class Data:
        catalog = [object()]

    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    assert searching.knowledge_sources("auto", Data()) == ["none", "catalog"]
    assert searching.knowledge_sources("none", Data()) == ["none"]
    monkeypatch.setenv("TAVILY_API_KEY", "x")
    assert searching.knowledge_sources("auto", Data()) == ["none", "catalog", "web"]
    assert searching.knowledge_sources("web", Data()) == ["none", "web"]


def test_a_dataset_without_a_dev_split_is_refused(msrd):
    only_train = type("Data", (), {"splits": {"train": msrd.splits["train"]}})()
    with pytest.raises(RequestError, match="has no 'dev' split to search with"):
        searching.check_splits(only_train, "jsonl:x")
