"""WANDS, the Wayfair ANnotation DataSet (github wayfair/WANDS), 3 labels Exact / Partial / Irrelevant.

`wands:PATH` reads the official `dataset/` folder; the files are TAB-separated despite their `.csv` names (fields with
quotes are CSV-quoted, e.g. `"fawkes 36"" blue vanity"`):
- `query.csv`: `query_id, query, query_class`;
- `product.csv`: `product_id, product_name, product_class, category hierarchy, product_description, product_features,
  rating_count, average_rating, review_count`, where `product_features` is `key:value` pairs joined by `|`
  (e.g. `overallwidth-sidetoside:64.7|producttype : slow cooker`);
- `label.csv`: `id, query_id, product_id, label` with label in Exact | Partial | Irrelevant.
The catalog is every product of product.csv. `wands` alone reads $HIERA_DATA_DIR/wands.
Splits: `all` (every pair, in file order), and `eval` (the default), `train`, `dev` drawn by `make_splits`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hiera_dspy.data import BadRows, CatalogEntry, DataError, Dataset, expect_folder
from hiera_dspy.data.locate import Download, locate
from hiera_dspy.data.sampling import make_splits
from hiera_dspy.labels import LabelScheme, get_scheme
from hiera_dspy.records import Pair

DOWNLOAD = Download("wands", "the dataset/ folder of github.com/wayfair/WANDS (query.csv, product.csv, label.csv)")
FILES = {
    "query.csv": ("query_id", "query"),
    "product.csv": ("product_id", "product_name", "product_class", "category hierarchy", "product_description",
                    "product_features"),
    "label.csv": ("id", "query_id", "product_id", "label"),
}


def read_table(folder: Path, name: str) -> pd.DataFrame:
    """One WANDS file as strings (empty cells are ""), checked for its columns."""
    path, columns = folder / name, FILES[name]
    expected = (f"expected TAB-separated columns {', '.join(columns)} (the `dataset/{name}` file of github "
                f"wayfair/WANDS)")
    if not path.is_file():
        raise DataError(f"{path}: file not found; {expected}")
    try:
        table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read ({exc}); {expected}") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        hint = " (is it comma-separated?)" if len(table.columns) == 1 and "," in table.columns[0] else ""
        raise DataError(f"{path}: missing column(s) {missing}; found {list(table.columns)}{hint}; {expected}")
    return table


def feature_lines(features: str) -> list[str]:
    """`a:1|b : two| : loose` -> ["a: 1", "b: two", "loose"]: one readable line per non-empty feature."""
    lines = []
    for part in features.split("|"):
        key, sep, value = (s.strip() for s in part.partition(":"))
        key, value = (key, value) if sep else ("", key)
        if value:
            lines.append(f"{key}: {value}" if key else value)
    return lines


def item_text(row: dict) -> str:
    """`Class: ...`, `Category: ...`, `Description: ...`, then `Features:` with one `- key: value` line each."""
    lines = [f"{label}: {row[col].strip()}" for label, col in (("Class", "product_class"),
             ("Category", "category hierarchy"), ("Description", "product_description")) if row[col].strip()]
    features = feature_lines(row["product_features"])
    return "\n".join(lines + (["Features:"] + [f"- {f}" for f in features] if features else []))


def load(arg: str | None, scheme: LabelScheme | None, *, on_bad_row: str = "error", **_) -> Dataset:
    """`wands:PATH`, or `wands` alone: $HIERA_DATA_DIR/wands (`data.locate`)."""
    arg = arg or locate(DOWNLOAD)
    scheme = scheme or get_scheme("wands")
    bad = BadRows(on_bad_row)
    folder = expect_folder(Path(arg), "the `dataset/` folder of github wayfair/WANDS")
    queries = dict(zip(*(read_table(folder, "query.csv")[c] for c in ("query_id", "query"))))
    products = {row["product_id"]: (row["product_name"].strip(), item_text(row))
                for row in read_table(folder, "product.csv").to_dict("records")}
    labels = read_table(folder, "label.csv")
    mapped, unknown = {}, {}
    for raw in labels["label"].unique():
        try:
            mapped[raw] = scheme.from_raw(raw)
        except ValueError as exc:
            unknown[raw] = f"column 'label': {exc}"
    pairs, dropped = [], 0
    for row in labels.to_dict("records"):
        if row["label"] in unknown:
            bad(folder / "label.csv", unknown[row["label"]], row=f"row id {row['id']}")
            continue
        if row["query_id"] not in queries or row["product_id"] not in products:
            dropped += 1
            continue
        title, text = products[row["product_id"]]
        pairs.append(Pair(id=f"wands:{row['id']}", query=queries[row["query_id"]], item_title=title, item_text=text,
                          label=mapped[row["label"]], query_id=row["query_id"], item_id=row["product_id"]))
    if not pairs:
        raise DataError(f"{folder / 'label.csv'}: no labelled pairs whose query and product are in query.csv and "
                        f"product.csv" + (f" ({len(bad.rows)} bad rows skipped)" if bad.rows else ""))
    catalog = [CatalogEntry(id=pid, title=title, text=text) for pid, (title, text) in products.items()]
    splits = {"all": pairs, **make_splits(pairs, scheme)}  # all: file order; eval/train/dev: the paper's sampling
    return Dataset(name=f"wands:{arg}", scheme=scheme, splits=splits, catalog=catalog,
                   default_split="eval", notes={"n_pairs": len(pairs), "labels_without_query_or_product": dropped,
                          "skipped_rows": bad.rows})
