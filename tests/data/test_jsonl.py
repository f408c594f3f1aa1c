"""`jsonl:PATH` pairs: good rows load; each kind of bad input names file, line and field, or is skipped and recorded."""

import json

import pytest

from hiera_dspy.data import DataError, jsonl, load_dataset
from hiera_dspy.labels import get_scheme
from hiera_dspy.records import Pair

SCHEME = get_scheme("msrd")


def row(i, **changes) -> bytes:
    fields = {"id": f"r{i}", "query": f"query {i}", "item_title": f"title {i}", "item_text": f"text {i}",
              "label": i % 2, "query_id": f"q{i}", "item_id": f"m{i}"}
    fields.update(changes)
    return json.dumps({k: v for k, v in fields.items() if v is not ...}, ensure_ascii=False).encode("utf-8")


# name, file lines, the bad line (None: the file is fine), fragments of the error message
CASES = [
    ("malformed JSON", [row(1), b'{"id": "r2", "query": ', row(3)], 2, ["not valid JSON"]),
    ("missing field", [row(1), row(2, item_title=...), row(3)], 2, ['missing field "item_title"']),
    ("unknown label", [row(1), row(2, label="maybe"), row(3)], 2, ['field "label"', "unknown label 'maybe'"]),
    ("empty query", [row(1), row(2, query="   "), row(3)], 2, ['field "query" is empty']),
    ("1 MB item text", [row(1), row(2, item_text="x" * 1_000_000), row(3)], None, []),
    ("non-UTF-8 bytes", [row(1), row(2, item_title="caf\xe9").replace("café".encode(), b"caf\xe9"), row(3)], 2,
     ["not UTF-8 text", "b'\\xe9'"]),
    ("duplicate id", [row(1), row(2), row(3, id="r1")], 3, ['field "id"', 'duplicate id "r1" (first on line 1)']),
    ("empty file", [], 1, ["end of file, file is empty"]),
]


@pytest.mark.parametrize("name, lines, bad_line, fragments", CASES, ids=[case[0] for case in CASES])
def test_bad_input(tmp_path, name, lines, bad_line, fragments):
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if lines else b""))
    if bad_line is None:
        ds = jsonl.load(str(path), SCHEME)
        assert len(ds.split("all")) == 3 and len(ds.split("all")[1].item_text) == 1_000_000
        assert ds.notes["skipped_rows"] == []
        return
    with pytest.raises(DataError) as err:
        jsonl.load(str(path), SCHEME)
    message = str(err.value)
    assert message.startswith(f"{path}, line {bad_line}: ")
    assert all(fragment in message for fragment in fragments), message
    if not lines:
        with pytest.raises(DataError, match="end of file"):
            jsonl.load(str(path), SCHEME, on_bad_row="skip")
        return
    ds = jsonl.load(str(path), SCHEME, on_bad_row="skip")
    assert [p.id for p in ds.split("all")] == [f"r{i}" for i in range(1, 4) if i != bad_line]
    (skipped,) = ds.notes["skipped_rows"]
    assert skipped["file"] == str(path) and skipped["line"] == bad_line
    assert all(fragment in skipped["error"] for fragment in fragments)


def test_good_file_records_and_splits(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(b"\n".join([row(i) for i in range(40)] + [b"", row(40, query_id=..., item_id=...)]) + b"\n")
    ds = load_dataset(f"jsonl:{path}", SCHEME)
    assert ds.default_split == "all" and len(ds.split()) == 41
    assert ds.split()[0] == Pair(id="r0", query="query 0", item_title="title 0", item_text="text 0",
                                 label="Irrelevant", query_id="q0", item_id="m0")
    last = ds.split()[-1]
    assert (last.query_id, last.item_id) == ("query 40", "title 40")  # query_id and item_id default to query and title
    assert {"eval", "train", "dev"} <= set(ds.splits)


def test_needs_path_scheme_and_known_policy(tmp_path):
    with pytest.raises(DataError, match="needs a path"):
        jsonl.load(None, SCHEME)
    with pytest.raises(DataError, match="needs a label scheme"):
        jsonl.load(str(tmp_path / "x.jsonl"), None)
    with pytest.raises(DataError, match="x.jsonl: file not found"):
        jsonl.load(str(tmp_path / "x.jsonl"), SCHEME)
    with pytest.raises(DataError, match="on_bad_row must be"):
        jsonl.load(str(tmp_path / "x.jsonl"), SCHEME, on_bad_row="ignore")
