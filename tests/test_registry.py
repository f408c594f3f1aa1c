"""One registry pattern (hiera_dspy.registry): datasets, label schemes, engines, sample draws, methods, commands and
retrieval measures are each a `Registry` of `Entry`s (name, one-line doc, parameters, loader) built from the place
their entries are declared, so a one-line addition there is in the registry, its help and its errors at once."""

from __future__ import annotations

import pytest

from hiera_dspy.benchmark.draws import DRAW_REGISTRY
from hiera_dspy.cli.main import COMMAND_REGISTRY
from hiera_dspy.conclude.retrieval import MEASURE_REGISTRY, MEASURES, measure_key
from hiera_dspy.data import DATASETS, LOADERS
from hiera_dspy.engines import ENGINE_REGISTRY, ENGINES
from hiera_dspy.errors import UnknownName
from hiera_dspy.labels import SCHEME_REGISTRY, get_scheme
from hiera_dspy.methods import METHOD_REGISTRY
from hiera_dspy.methods.params import Param

REGISTRIES = {"dataset": DATASETS, "label scheme": SCHEME_REGISTRY, "engine": ENGINE_REGISTRY,
              "sample draw": DRAW_REGISTRY, "method": METHOD_REGISTRY, "command": COMMAND_REGISTRY,
              "retrieval measure": MEASURE_REGISTRY}


@pytest.mark.parametrize("kind", REGISTRIES)
def test_every_entry_has_a_name_a_one_line_doc_and_a_loader(kind):
    registry = REGISTRIES[kind]
    assert registry.kind == kind and len(registry) >= 2
    for name, entry in registry.items():
        assert entry.name == name and entry.doc and "\n" not in entry.doc and entry.loader is not None, name
    assert registry.help().count(": ") >= len(registry)


@pytest.mark.parametrize("kind", REGISTRIES)
def test_an_unknown_name_lists_the_names_there_are(kind):
    registry = REGISTRIES[kind]
    with pytest.raises(UnknownName, match=f"unknown {kind} 'no-such-thing'") as err:
        registry["no-such-thing"]
    assert all(name in str(err.value) for name in registry)
    assert "no-such-thing" not in registry


def test_a_line_in_the_old_table_is_an_entry(monkeypatch):
    monkeypatch.setitem(LOADERS, "mine", "hiera_dspy.data.jsonl:load")
    monkeypatch.setitem(ENGINES, "mine", ("hiera_dspy.engines.threads", "my engine"))
    assert DATASETS["mine"].load() is DATASETS["jsonl"].load() and DATASETS["mine"].doc == DATASETS["jsonl"].doc
    assert ENGINE_REGISTRY["mine"].doc == "my engine" and "mine: my engine" in ENGINE_REGISTRY.help()


def test_a_method_declares_its_parameters_with_their_types():
    params = METHOD_REGISTRY["hiera"].params
    assert "delegation" in params and isinstance(params["delegation"], Param)
    assert METHOD_REGISTRY["hiera"].load() is not None


def test_the_lookups_go_through_the_registries():
    assert get_scheme("msrd") is SCHEME_REGISTRY["msrd"].load()
    with pytest.raises(KeyError, match="unknown label scheme 'x'; label schemes: .*msrd"):
        get_scheme("x")


def test_a_measure_declares_its_cutoff_and_is_picked_by_name():
    assert set(MEASURE_REGISTRY) == {"ndcg", "p"} and MEASURE_REGISTRY["p"].params == {"k": int}
    assert MEASURE_REGISTRY["ndcg"].load() is MEASURES["ndcg"] and measure_key("p", 5) == "p@5"
    with pytest.raises(UnknownName, match="unknown retrieval measure 'map'; retrieval measures: ndcg, p"):
        measure_key("map", 10)
