"""--on-bad-row for every loader: `error` stops at the bad row naming file, row and field; `skip` loads the rest and
records the row in notes["skipped_rows"]. Wrong JSON types and a folder given for a file (or a file for a folder) are
clear errors."""

from __future__ import annotations

import json
import shutil

import pytest

from hiera_dspy.data import DataError, load_dataset, msrd_sample
from tests.data.test_esci import _examples_and_products
from tests.data.test_homedepot import _write as write_homedepot
from tests.data.test_wands import _write as write_wands


def _jsonl(folder):
    rows = [{"id": f"r{i}", "query": f"q{i}", "item_title": f"t{i}", "item_text": "x", "label": i % 2}
            for i in range(4)]
    rows[2]["label"] = "maybe"
    path = folder / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}", {"scheme": None}, 3, f"{path}, line 3: field \"label\": unknown label 'maybe'"


def _msrd(folder):
    shutil.copy(msrd_sample.BUNDLED / "train.jsonl", folder / "train.jsonl")
    lines = (msrd_sample.BUNDLED / "dev.jsonl").read_text().splitlines()
    lines[4] = lines[4].replace('"query": "', '"query": ["', 1).replace('", "item_title"', '"], "item_title"', 1)
    (folder / "dev.jsonl").write_text("\n".join(lines) + "\n")
    return (f"msrd:{folder}", {}, 599,
            f'{folder / "dev.jsonl"}, line 5: field "query": expected text or a number, got an array')


def _homedepot(folder):
    write_homedepot(folder)
    lines = (folder / "train.csv").read_bytes().decode("latin-1").splitlines()
    lines[3] = lines[3].rsplit(",", 1)[0] + ",high"
    (folder / "train.csv").write_bytes(("\r\n".join(lines) + "\r\n").encode("latin-1"))
    return (f"homedepot:{folder}", {}, 29,
            f"{folder / 'train.csv'}, row 3 (id 4): column 'relevance': relevance 'high' is not a number")


def _wands(folder):
    write_wands(folder)
    lines = (folder / "label.csv").read_text().splitlines()
    lines[2] = lines[2].rsplit("\t", 1)[0] + "\tMaybe"
    (folder / "label.csv").write_text("\n".join(lines) + "\n")
    return f"wands:{folder}", {}, 29, f"{folder / 'label.csv'}, row id 11: column 'label': unknown label 'Maybe'"


def _esci(folder):
    examples, products = _examples_and_products()
    examples.loc[5, "esci_label"] = "X"
    examples.to_parquet(folder / "shopping_queries_dataset_examples.parquet", index=False)
    products.to_parquet(folder / "shopping_queries_dataset_products.parquet", index=False)
    return (f"esci:{folder}", {}, 39, f"{folder / 'shopping_queries_dataset_examples.parquet'}, example_id 105: "
                                      f"column 'esci_label': unknown label 'X'")


@pytest.mark.parametrize("make", [_jsonl, _msrd, _homedepot, _wands, _esci], ids=lambda f: f.__name__[1:])
def test_every_loader_honours_on_bad_row(tmp_path, make):
    from hiera_dspy.labels import get_scheme

    spec, options, n_good, error = make(tmp_path)
    scheme = get_scheme("msrd") if "scheme" in options else None
    with pytest.raises(DataError) as err:
        load_dataset(spec, scheme)
    assert str(err.value).startswith(error), str(err.value)
    ds = load_dataset(spec, scheme, on_bad_row="skip")
    assert len(ds.splits.get("all") or ds.splits["train"] + ds.splits["dev"]) == n_good
    (skipped,) = ds.notes["skipped_rows"]
    at = f"line {skipped['line']}" if "line" in skipped else skipped["row"]
    assert f"{skipped['file']}, {at}: {skipped['error']}".startswith(error)


@pytest.mark.parametrize("field, value, kind", [
    ("query", ["a", "b"], "an array"), ("item_title", {"x": 1}, "an object"), ("item_text", True, "a boolean"),
    ("id", [1], "an array"), ("label", [1], "an array"), ("query_id", {}, "an object")])
def test_wrong_json_types_are_errors(tmp_path, field, value, kind):
    from hiera_dspy.labels import get_scheme

    row = {"id": "r1", "query": "q", "item_title": "t", "item_text": "x", "label": 1, field: value}
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"id": "r0", "query": "q0", "item_title": "t", "item_text": "x", "label": 0}) + "\n"
                    + json.dumps(row) + "\n")
    with pytest.raises(DataError) as err:
        load_dataset(f"jsonl:{path}", get_scheme("msrd"))
    assert str(err.value) == (f'{path}, line 2: field "{field}": expected text or a number, got {kind}; '
                              "fix the row, or skip such rows and count them with --on-bad-row skip")


def test_numbers_are_still_text(tmp_path):
    from hiera_dspy.labels import get_scheme

    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"id": 7, "query": 1984, "item_title": 2.5, "item_text": "x", "label": 1}) + "\n")
    (pair,) = load_dataset(f"jsonl:{path}", get_scheme("msrd")).split("all")
    assert (pair.id, pair.query, pair.item_title) == ("7", "1984", "2.5")


@pytest.mark.parametrize("name", ["homedepot", "wands", "esci", "msrd"])
def test_a_file_given_for_a_folder(tmp_path, name):
    path = tmp_path / "train.csv"
    path.write_text("id\n")
    with pytest.raises(DataError, match=f"^{path}: is a file, not a folder; expected "):
        load_dataset(f"{name}:{path}")


def test_a_folder_given_for_a_file(tmp_path):
    from hiera_dspy.labels import get_scheme

    with pytest.raises(DataError, match=f"^{tmp_path}: is a folder, not a file; expected one JSON object a line"):
        load_dataset(f"jsonl:{tmp_path}", get_scheme("msrd"))
