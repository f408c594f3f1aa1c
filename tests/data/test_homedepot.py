"""Home Depot loader on a small fixture in the Kaggle format: latin-1 train.csv, optional descriptions/attributes."""

from collections import Counter

import pytest

from hiera_dspy.data import CatalogEntry, DataError, homedepot, load_dataset
from hiera_dspy.records import Pair

LEVELS = ("Irrelevant", "Partially relevant", "Highly relevant")
SCORES = ("1.33", "2", "2.67")  # one pair per level for each search term


def _write(folder, train=None, descriptions=True, attributes=True):
    """10 search terms x 3 products; product 100001 has a latin-1 '°' in its title and a comma (CSV-quoted)."""
    if train is None:
        train = ["id,product_uid,product_title,search_term,relevance"] + [
            f"{2 + 3 * q + k},{100001 + 3 * q + k},Product {3 * q + k},term {q},{score}"
            for q in range(10) for k, score in enumerate(SCORES)]
        train[1] = '2,100001,"Elbow 90°, Copper",term 0,1.33'
        train[4] = "5,100004,Product 3,TERM 1,1.25"  # same query as "term 1" up to case
    (folder / "train.csv").write_bytes(("\r\n".join(train) + "\r\n").encode("latin-1"))
    if descriptions:
        (folder / "product_descriptions.csv").write_text(
            'product_uid,product_description\n100001,"Solder joint, 1/2 in. café grade"\n100002,\n', encoding="utf-8")
    if attributes:
        (folder / "attributes.csv").write_text(
            'product_uid,name,value\n100001.0,MFG Brand Name,NIBCO\n,,\n100001,Bullet01,"Lead free, 1/2 in."\n'
            "100001,Color,\n999999,Orphan,value\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("value, level", [
    ("1", "1"), ("1.25", "1"), ("1.33", "1"), ("1.5", "2"), ("1.67", "2"), ("2", "2"), ("2.33", "2"),
    ("2.5", "3"), ("2.67", "3"), ("2.75", "3"), ("3", "3"), (2.5, "3"), (1.5, "2"), (2.33, "2"), (2.67, "3"),
    (1.25, "1"), (2.75, "3"), (7 / 3, "2"), (5 / 3, "2"), (4 / 3, "1"), (8 / 3, "3")])
def test_relevance_level_rounds_half_up(value, level):
    assert homedepot.relevance_level(value) == level


@pytest.mark.parametrize("value", ["0.5", "3.01", "abc", "", "nan", "inf"])
def test_relevance_level_rejects(value):
    with pytest.raises(ValueError, match="relevance"):
        homedepot.relevance_level(value)


def test_kaggle_folder_records_and_counts(tmp_path):
    ds = load_dataset(f"homedepot:{_write(tmp_path)}")
    assert ds.default_split == "eval" and ds.scheme.name == "homedepot"
    everything = ds.split("all")
    assert len(everything) == 30
    text = "Description: Solder joint, 1/2 in. café grade\nMFG Brand Name: NIBCO\nBullet01: Lead free, 1/2 in."
    assert everything[0] == Pair(id="homedepot:2", query="term 0", item_title="Elbow 90°, Copper", item_text=text,
                                 label="Irrelevant", query_id="term 0", item_id="100001", grade=pytest.approx(0.33))
    assert everything[1] == Pair(id="homedepot:3", query="term 0", item_title="Product 1", item_text="",
                                 label="Partially relevant", query_id="term 0", item_id="100002", grade=pytest.approx(1.0))
    assert everything[3].query == "TERM 1" and everything[3].query_id == everything[4].query_id == "term 1"
    # 10 queries (case folded) x 3 levels: 6 / 2 / 2 queries, each contributing one pair per level.
    assert {name: len(ds.split(name)) for name in ("eval", "train", "dev")} == {"eval": 18, "train": 6, "dev": 6}
    assert Counter(p.label for p in ds.split("eval")) == {level: 6 for level in LEVELS}
    assert len(ds.catalog) == 30 and ds.catalog[0] == CatalogEntry("100001", "Elbow 90°, Copper", text)


def test_optional_files_may_be_absent(tmp_path):
    ds = homedepot.load(str(_write(tmp_path, descriptions=False, attributes=False)), None)
    assert all(p.item_text == "" for p in ds.split("all")) and len(ds.split("all")) == 30


def test_utf8_train_is_not_mangled(tmp_path):
    _write(tmp_path)
    (tmp_path / "train.csv").write_text("id,product_uid,product_title,search_term,relevance\n2,1,Café 90°,cafe,3\n",
                                        encoding="utf-8")
    assert homedepot.load(str(tmp_path), None).split("all")[0].item_title == "Café 90°"


def test_missing_train_names_file_columns_and_competition(tmp_path):
    with pytest.raises(DataError) as err:
        homedepot.load(str(tmp_path), None)
    message = str(err.value)
    assert "train.csv: file not found" in message
    assert "columns id, product_uid, product_title, search_term, relevance" in message
    assert '"home-depot-product-search-relevance"' in message


def test_missing_columns_and_bad_relevance(tmp_path):
    _write(tmp_path, train=["id,product_uid,product_title,query,relevance", "2,1,T,q,3"])
    with pytest.raises(DataError, match=r"train.csv: missing column\(s\) \['search_term'\]; found \['id', "):
        homedepot.load(str(tmp_path), None)
    _write(tmp_path, train=["id,product_uid,product_title,search_term,relevance", "2,1,T,q,3", "7,1,T,q,high"])
    with pytest.raises(DataError, match=r"train.csv, row 2 \(id 7\): column 'relevance': relevance 'high' is not a"):
        homedepot.load(str(tmp_path), None)
    (tmp_path / "attributes.csv").write_text("product_uid;name;value\n1;a;b\n")
    _write(tmp_path, attributes=False)
    with pytest.raises(DataError, match=r"attributes.csv: missing column\(s\) \['product_uid', 'name', 'value'\]"):
        homedepot.load(str(tmp_path), None)
