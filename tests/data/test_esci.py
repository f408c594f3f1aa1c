"""ESCI loader on a small fixture in the official parquet format (examples + products), and on a local HF dataset."""

from collections import Counter

import datasets
import pandas as pd
import pytest

from hiera_dspy.data import CatalogEntry, DataError, esci, load_dataset
from hiera_dspy.records import Pair

LETTERS = "ESCI"
FULL = {"E": "Exact", "S": "Substitute", "C": "Complement", "I": "Irrelevant"}


def _examples_and_products():
    """10 us queries with one product per label (small version), plus rows the default filters must drop."""
    examples, products = [], []
    for q in range(10):
        for k, letter in enumerate(LETTERS):
            pid = f"B0{q}{k}"
            examples.append(dict(example_id=100 + 4 * q + k, query=f"query {q}", query_id=q, product_id=pid,
                                 product_locale="us", esci_label=letter, small_version=1, large_version=1,
                                 split="train" if q < 8 else "test"))
            products.append(dict(product_id=pid, product_title=f"Title {q}-{k}", product_description=None,
                                 product_bullet_point=None, product_brand=None, product_color=None,
                                 product_locale="us"))
    # Quirks: HTML-free description, multi-line bullets, missing colour; same product id in two locales.
    products[0].update(product_description="A sturdy thing.", product_bullet_point="Fast\n\n  Safe  \n",
                       product_brand="Acme")
    products.append(dict(products[0], product_locale="es", product_title="Título es", product_brand="Marca"))
    examples += [
        dict(examples[0], example_id=900, query="consulta", query_id=90, product_locale="es"),  # other locale
        dict(examples[1], example_id=901, query="large only", query_id=91, small_version=0),  # large version only
        dict(examples[2], example_id=902, query="no product", query_id=92, product_id="NOPE"),  # no product row
    ]
    return pd.DataFrame(examples), pd.DataFrame(products)


@pytest.fixture
def folder(tmp_path):
    examples, products = _examples_and_products()
    examples.to_parquet(tmp_path / "shopping_queries_dataset_examples.parquet", index=False)
    products.to_parquet(tmp_path / "shopping_queries_dataset_products.parquet", index=False)
    return tmp_path


def test_official_folder_records_and_counts(folder):
    ds = load_dataset(f"esci:{folder}")
    assert ds.default_split == "eval" and ds.scheme.name == "esci"
    everything = ds.split("all")
    assert len(everything) == 40 and ds.notes["examples_without_product"] == 1
    assert everything[0] == Pair(
        id="esci:100", query="query 0", item_title="Title 0-0",
        item_text="Brand: Acme\nBullet points:\n- Fast\n- Safe\nDescription: A sturdy thing.",
        label="Exact", query_id="0", item_id="B000")
    assert everything[7] == Pair(id="esci:107", query="query 1", item_title="Title 1-3", item_text="",
                                      label="Irrelevant", query_id="1", item_id="B013")
    # 10 queries x 4 labels: 6 / 2 / 2 queries, each contributing one pair per label.
    assert {name: len(ds.split(name)) for name in ("eval", "train", "dev")} == {"eval": 24, "train": 8, "dev": 8}
    assert Counter(p.label for p in ds.split("eval")) == {label: 6 for label in FULL.values()}
    assert len(ds.catalog) == 40 and ds.catalog[0] == CatalogEntry("B000", "Title 0-0", everything[0].item_text)


def test_locale_and_version_options(folder):
    es = esci.load(str(folder), None, locale="es")
    assert [(p.id, p.item_title, p.item_text.splitlines()[0]) for p in es.split("all")] == [
        ("esci:900", "Título es", "Brand: Marca")]
    large = esci.load(str(folder), None, version="large")
    assert len(large.split("all")) == 41 and large.split("all")[-1].id == "esci:901"
    assert len(esci.load(str(folder), None, locale="all").split("all")) == 41
    with pytest.raises(DataError, match="version must be 'small' or 'large'"):
        esci.load(str(folder), None, version="medium")


def test_missing_file_names_file_columns_and_source(tmp_path):
    with pytest.raises(DataError) as err:
        esci.load(str(tmp_path), None)
    message = str(err.value)
    assert "shopping_queries_dataset_examples.parquet: file not found" in message
    assert "esci_label" in message and "github amazon-science/esci-data" in message


def test_missing_column_lists_found_columns(folder):
    _, products = _examples_and_products()
    products.drop(columns=["product_title"]).to_parquet(folder / "shopping_queries_dataset_products.parquet")
    with pytest.raises(DataError, match=r"products.parquet: missing column\(s\) \['product_title'\]; found \[") as err:
        esci.load(str(folder), None)
    assert "amazon-science/esci-data" in str(err.value)


def test_unreadable_parquet_and_unknown_label(folder):
    examples, _ = _examples_and_products()
    examples.loc[5, "esci_label"] = "X"
    examples.to_parquet(folder / "shopping_queries_dataset_examples.parquet")
    with pytest.raises(DataError, match=r"examples.parquet, example_id 105: column 'esci_label': unknown label 'X'"):
        esci.load(str(folder), None)
    (folder / "shopping_queries_dataset_products.parquet").write_text("product_id,product_title\n")
    with pytest.raises(DataError, match="products.parquet: not a readable parquet file"):
        esci.load(str(folder), None)


def _hf_rows():
    """tasksource/esci style: examples merged with products, labels spelled out, an aggregated product_text."""
    examples, products = _examples_and_products()
    merged = examples.merge(products, on=["product_id", "product_locale"])
    merged["esci_label"] = merged["esci_label"].map(FULL)
    merged["product_text"] = "aggregated " + merged["product_title"]
    return merged.drop(columns=["split"])


def test_from_hf_dataset_merged_columns():
    rows = _hf_rows()
    dd = datasets.DatasetDict({"train": datasets.Dataset.from_pandas(rows[rows.query_id < 8], preserve_index=False),
                               "test": datasets.Dataset.from_pandas(rows[rows.query_id >= 8], preserve_index=False)})
    ds = esci.from_hf_dataset(dd, None)
    everything = ds.split("all")
    assert len(everything) == 40 and everything[0].id == "esci:100" and everything[0].label == "Exact"
    assert everything[0].item_text.startswith("Brand: Acme\n")
    assert everything[1].item_text == "aggregated Title 0-1"  # no product fields: falls back to product_text
    assert everything[-1] == Pair(id="esci:139", query="query 9", item_title="Title 9-3",
                                       item_text="aggregated Title 9-3", label="Irrelevant", query_id="9",
                                       item_id="B093")
    assert Counter(p.label for p in ds.split("eval")) == {label: 6 for label in FULL.values()}


def test_from_hf_dataset_label_column_classlabel_and_minimal_columns():
    names = ["Irrelevant", "Complement", "Substitute", "Exact"]
    text = datasets.Value("string")
    features = datasets.Features({"query": text, "product_id": text, "product_title": text,
                                  "label": datasets.ClassLabel(names=names)})
    local = datasets.Dataset.from_dict({"query": ["a", "a", "b"], "product_id": ["p1", "p2", "p1"],
                                        "product_title": ["T1", "T2", "T1"], "label": [3, 0, 1]}, features=features)
    pairs = esci.from_hf_dataset(local, None).split("all")
    assert [(p.id, p.label, p.query_id, p.item_id) for p in pairs] == [
        ("esci:a:p1", "Exact", "a", "p1"), ("esci:a:p2", "Irrelevant", "a", "p2"),
        ("esci:b:p1", "Complement", "b", "p1")]


def test_from_hf_dataset_missing_columns_lists_found():
    local = datasets.Dataset.from_dict({"query": ["a"], "asin": ["p1"], "title": ["T"]})
    with pytest.raises(DataError) as err:
        esci.from_hf_dataset(local, None, name="esci:hf:someone/esci")
    message = str(err.value)
    assert "esci:hf:someone/esci: missing column(s) ['product_id', 'product_title', 'esci_label or label']" in message
    assert "found ['query', 'asin', 'title']" in message


def test_hf_spec_calls_load_dataset(monkeypatch):
    local = datasets.Dataset.from_pandas(_hf_rows(), preserve_index=False)
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda name: calls.append(name) or local)
    ds = load_dataset("esci:hf:tasksource/esci")
    assert calls == ["tasksource/esci"] and ds.name == "esci:hf:tasksource/esci" and len(ds.split("all")) == 40
