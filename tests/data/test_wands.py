"""WANDS loader on a small fixture in the official format: TAB-separated `.csv` files with CSV quoting."""

from collections import Counter

import pytest

from hiera_dspy.data import CatalogEntry, DataError, load_dataset, wands
from hiera_dspy.records import Pair

LABELS = ("Exact", "Partial", "Irrelevant")
PRODUCT_HEADER = ("product_id\tproduct_name\tproduct_class\tcategory hierarchy\tproduct_description\t"
                  "product_features\trating_count\taverage_rating\treview_count")


def _write(folder, queries=None, products=None, labels=None):
    """10 queries (ids with a gap, one CSV-quoted, one without class), 30 products, one label of each kind a query."""
    query_ids = [0, 1, 2, 3, 4, 5, 6, 7, 208, 9]
    if queries is None:
        queries = ["query_id\tquery\tquery_class"] + [f"{q}\tquery {q}\tClass {q}" for q in query_ids]
        queries[9] = '208\t"fawkes 36"" blue vanity"\tVanities'
        queries[2] = "1\tsmart coffee table\t"
    if products is None:
        products = [PRODUCT_HEADER] + [f"{p}\tproduct {p}\tBeds\tFurniture / Beds\t\t\t\t\t" for p in range(30)]
        products[1] = ("0\tsolid wood platform bed\tBeds|Kids Beds\tFurniture / Bedroom Furniture / Beds\t"
                       "good , deep sleep .\toverallwidth-sidetoside:64.7|producttype : platform bed| : gray wood|"
                       "empty:|\t15.0\t4.5\t15.0")
    if labels is None:
        labels = ["id\tquery_id\tproduct_id\tlabel"] + [
            f"{10 + 3 * i + k}\t{q}\t{3 * i + k}\t{label}" for i, q in enumerate(query_ids)
            for k, label in enumerate(LABELS)]
    for name, lines in (("query.csv", queries), ("product.csv", products), ("label.csv", labels)):
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_official_folder_records_and_counts(tmp_path):
    ds = load_dataset(f"wands:{_write(tmp_path)}")
    assert ds.default_split == "eval" and ds.scheme.name == "wands"
    everything = ds.split("all")
    assert len(everything) == 30
    text = ("Class: Beds|Kids Beds\nCategory: Furniture / Bedroom Furniture / Beds\nDescription: good , deep sleep .\n"
            "Features:\n- overallwidth-sidetoside: 64.7\n- producttype: platform bed\n- gray wood")
    assert everything[0] == Pair(id="wands:10", query="query 0", item_title="solid wood platform bed", item_text=text,
                                 label="Exact", query_id="0", item_id="0")
    assert everything[5] == Pair(id="wands:15", query="smart coffee table", item_title="product 5",
                                 item_text="Class: Beds\nCategory: Furniture / Beds", label="Irrelevant",
                                 query_id="1", item_id="5")
    assert everything[24].query == 'fawkes 36" blue vanity' and everything[24].query_id == "208"
    assert {name: len(ds.split(name)) for name in ("eval", "train", "dev")} == {"eval": 18, "train": 6, "dev": 6}
    assert Counter(p.label for p in ds.split("eval")) == {label: 6 for label in LABELS}
    assert len(ds.catalog) == 30 and ds.catalog[0] == CatalogEntry("0", "solid wood platform bed", text)


def test_feature_lines():
    assert wands.feature_lines("a:1|b : two| : loose|empty:|novalue|k:v:w") == [
        "a: 1", "b: two", "loose", "novalue", "k: v:w"]
    assert wands.feature_lines("") == []


def test_labels_without_query_or_product_are_counted(tmp_path):
    labels = ["id\tquery_id\tproduct_id\tlabel", "1\t0\t0\tExact", "2\t999\t0\tExact", "3\t0\t999\tPartial"]
    ds = wands.load(str(_write(tmp_path, labels=labels)), None)
    assert [p.id for p in ds.split("all")] == ["wands:1"] and ds.notes["labels_without_query_or_product"] == 2


@pytest.mark.parametrize("missing", ["query.csv", "product.csv", "label.csv"])
def test_missing_file(tmp_path, missing):
    (_write(tmp_path) / missing).unlink()
    with pytest.raises(DataError, match=rf"{missing}: file not found; expected TAB-separated columns .*wayfair/WANDS"):
        wands.load(str(tmp_path), None)


def test_comma_separated_file_is_explained(tmp_path):
    _write(tmp_path, labels=["id,query_id,product_id,label", "1,0,0,Exact"])
    with pytest.raises(DataError) as err:
        wands.load(str(tmp_path), None)
    message = str(err.value)
    assert "label.csv: missing column(s) ['id', 'query_id', 'product_id', 'label']" in message
    assert "found ['id,query_id,product_id,label'] (is it comma-separated?)" in message


def test_missing_column_and_unknown_label(tmp_path):
    _write(tmp_path, products=["product_id\tproduct_name", "0\tbed"])
    with pytest.raises(DataError, match=r"product.csv: missing column\(s\) \['product_class', 'category hierarchy'"):
        wands.load(str(tmp_path), None)
    _write(tmp_path, labels=["id\tquery_id\tproduct_id\tlabel", "1\t0\t0\tExact", "2\t0\t1\tMaybe"])
    with pytest.raises(DataError, match=r"label.csv, row id 2: column 'label': unknown label 'Maybe'"):
        wands.load(str(tmp_path), None)


def test_empty_file(tmp_path):
    _write(tmp_path)
    (tmp_path / "query.csv").write_text("")
    with pytest.raises(DataError, match="query.csv: cannot be read"):
        wands.load(str(tmp_path), None)
