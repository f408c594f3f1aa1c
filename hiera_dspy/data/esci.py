"""ESCI, the Amazon Shopping Queries Dataset (github amazon-science/esci-data), 4 labels E/S/C/I.

`esci:PATH` reads the official `shopping_queries_dataset/` folder:
- `shopping_queries_dataset_examples.parquet`: `example_id, query, query_id, product_id, product_locale,
  esci_label (E|S|C|I), small_version (0|1), large_version (0|1), split (train|test)`;
- `shopping_queries_dataset_products.parquet`: `product_id, product_title, product_description, product_bullet_point,
  product_brand, product_color, product_locale`, joined on product_id + product_locale.
Options: `locale` ("us" default, "es", "jp" or "all"), `version` ("small" default: small_version == 1, or "large").

`esci:hf:ID` loads a Hugging Face copy with `datasets.load_dataset(ID)` (e.g. tasksource/esci, examples and products
merged, labels spelled out); see `from_hf_dataset`. `esci` alone reads $HIERA_DATA_DIR/esci, else tasksource/esci;
offline, one line says what to download and where (`hiera_dspy.data.locate`).
The catalog holds the products of the selected examples.
Splits: `all` (every pair, in file order), and `eval` (the default), `train`, `dev` drawn by `make_splits`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hiera_dspy.data import BadRows, CatalogEntry, DataError, Dataset, expect_folder
from hiera_dspy.data.locate import Download, hf_load, locate
from hiera_dspy.data.sampling import make_splits
from hiera_dspy.labels import LabelScheme, get_scheme
from hiera_dspy.records import Pair

SOURCE = "the `shopping_queries_dataset/` folder of github amazon-science/esci-data"
EXAMPLES = ("shopping_queries_dataset_examples.parquet",
            ("example_id", "query", "query_id", "product_id", "product_locale", "esci_label", "small_version",
             "large_version"))
PRODUCTS = ("shopping_queries_dataset_products.parquet",
            ("product_id", "product_locale", "product_title", "product_description", "product_bullet_point",
             "product_brand", "product_color"))
TEXT_FIELDS = (("Brand", "product_brand"), ("Color", "product_color"))
DOWNLOAD = Download("esci", "the shopping_queries_dataset/ folder of github.com/amazon-science/esci-data "
                    "(shopping_queries_dataset_examples.parquet and shopping_queries_dataset_products.parquet)",
                    hf_id="tasksource/esci")


def _str(value) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value).strip()


def item_text(row: dict) -> str:
    """Labelled lines: `Brand: ...`, `Color: ...`, `Bullet points:` (one `- ` line each), `Description: ...`."""
    lines = [f"{label}: {_str(row.get(col))}" for label, col in TEXT_FIELDS if _str(row.get(col))]
    bullets = [b.strip() for b in _str(row.get("product_bullet_point")).splitlines() if b.strip()]
    if bullets:
        lines += ["Bullet points:"] + [f"- {b}" for b in bullets]
    if _str(row.get("product_description")):
        lines.append(f"Description: {_str(row.get('product_description'))}")
    if not lines and _str(row.get("product_text")):  # merged copies may only carry an aggregated text
        lines.append(_str(row.get("product_text")))
    return "\n".join(lines)


def _read_parquet(folder: Path, spec: tuple, filters: list) -> pd.DataFrame:
    name, columns = spec
    path = folder / name
    expected = f"expected columns {', '.join(columns)} (from {SOURCE})"
    if not path.is_file():
        raise DataError(f"{path}: file not found; {expected}")
    try:
        import pyarrow.parquet as pq
        found = pq.read_schema(path).names
        missing = [c for c in columns if c not in found]
        if missing:
            raise DataError(f"{path}: missing column(s) {missing}; found {found}; {expected}")
        return pd.read_parquet(path, columns=list(columns), filters=filters or None)
    except DataError:
        raise
    except Exception as exc:  # pyarrow raises several error types for a corrupt or non-parquet file
        raise DataError(f"{path}: not a readable parquet file ({exc}); {expected}") from None


def _filters(locale: str | None, version: str | None) -> list:
    if version not in ("small", "large"):
        raise DataError(f"esci: option version must be 'small' or 'large', got {version!r}")
    filters = [(f"{version}_version", "==", 1)]
    return filters + ([("product_locale", "==", locale)] if locale and locale != "all" else [])


def _to_dataset(rows: pd.DataFrame, scheme: LabelScheme, name: str, where: str, label_col: str,
                bad: BadRows | None = None) -> Dataset:
    bad = bad or BadRows()
    labels, unknown = {}, {}
    for raw in rows[label_col].unique():
        try:
            labels[raw] = scheme.from_raw(raw)
        except ValueError as exc:
            unknown[raw] = f"column {label_col!r}: {exc}"
    texts: dict[str, tuple[str, str]] = {}
    pairs = []
    for row in rows.to_dict("records"):
        if row[label_col] in unknown:
            bad(where, unknown[row[label_col]], row=f"example_id {_str(row.get('example_id')) or '?'}")
            continue
        item_id = _str(row["product_id"])
        if item_id not in texts:
            texts[item_id] = (_str(row.get("product_title")), item_text(row))
        title, text = texts[item_id]
        example_id = _str(row.get("example_id")) or f"{_str(row.get('query_id')) or row['query']}:{item_id}"
        pairs.append(Pair(id=f"esci:{example_id}", query=_str(row["query"]), item_title=title, item_text=text,
                          label=labels[row[label_col]], query_id=_str(row.get("query_id")) or _str(row["query"]),
                          item_id=item_id))
    if not pairs:
        raise DataError(f"{where}: no examples left after the locale/version filters"
                        + (f" and {len(bad.rows)} bad rows skipped" if bad.rows else ""))
    catalog = [CatalogEntry(id=k, title=t, text=x) for k, (t, x) in texts.items()]
    splits = {"all": pairs, **make_splits(pairs, scheme)}  # all: file order; eval/train/dev: the paper's sampling
    return Dataset(name=name, scheme=scheme, splits=splits, catalog=catalog,
                   default_split="eval", notes={"n_pairs": len(pairs), "skipped_rows": bad.rows})


def from_hf_dataset(ds, scheme: LabelScheme | None = None, *, locale: str | None = "us", version: str | None = "small",
                    name: str = "esci:hf", on_bad_row: str = "error") -> Dataset:
    """Pairs from a `datasets.Dataset` or `DatasetDict` (all splits) with ESCI columns, examples and products merged.

    Needs `query`, `product_id`, `product_title` and `esci_label` or `label` (E/S/C/I or spelled out, or a ClassLabel);
    uses `example_id`, `query_id`, `product_locale`, `small_version`, product text columns when present.
    """
    import datasets
    scheme = scheme or get_scheme("esci")
    _filters(locale, version)  # validates the options
    frames = []
    for part in list(ds.values()) if isinstance(ds, datasets.DatasetDict) else [ds]:
        found = list(part.column_names)
        label_col = next((c for c in ("esci_label", "label") if c in found), None)
        missing = [c for c in ("query", "product_id", "product_title") if c not in found]
        if missing or not label_col:
            raise DataError(f"{name}: missing column(s) {missing + ([] if label_col else ['esci_label or label'])}; "
                            f"found {found}; expected the ESCI columns of {SOURCE} (examples merged with products)")
        keep = [c for c in found if c in EXAMPLES[1] + PRODUCTS[1] + (label_col, "product_text")]
        feature = part.features[label_col]
        for frame in part.select_columns(keep).to_pandas(batched=True, batch_size=50_000):
            if locale and locale != "all" and "product_locale" in frame:
                frame = frame[frame["product_locale"] == locale]
            if f"{version}_version" in frame:
                frame = frame[frame[f"{version}_version"] == 1]
            if isinstance(feature, datasets.ClassLabel):  # integer labels with names
                frame = frame.assign(**{label_col: frame[label_col].map(feature.int2str)})
            frames.append(frame.rename(columns={label_col: "esci_label"}))
    if not frames:
        raise DataError(f"{name}: the dataset has no rows")
    rows = pd.concat(frames, ignore_index=True)
    return _to_dataset(rows, scheme, name, name, "esci_label", BadRows(on_bad_row))


def load(arg: str | None, scheme: LabelScheme | None, *, locale: str = "us", version: str = "small",
         on_bad_row: str = "error", **_) -> Dataset:
    """`esci:PATH`, `esci:hf:ID`, or `esci` alone: $HIERA_DATA_DIR/esci, else tasksource/esci (`data.locate`)."""
    arg = arg or locate(DOWNLOAD)
    scheme = scheme or get_scheme("esci")
    if arg.startswith("hf:"):
        return from_hf_dataset(hf_load(DOWNLOAD, arg[3:]), scheme, locale=locale, version=version,
                               name=f"esci:{arg}", on_bad_row=on_bad_row)
    bad = BadRows(on_bad_row)
    folder = expect_folder(Path(arg), f"the {SOURCE}")
    filters = _filters(locale, version)
    examples = _read_parquet(folder, EXAMPLES, filters)
    products = _read_parquet(folder, PRODUCTS, filters[1:])
    products = products.drop_duplicates(["product_id", "product_locale"])
    rows = examples.merge(products, on=["product_id", "product_locale"], how="inner")
    dataset = _to_dataset(rows, scheme, f"esci:{arg}", str(folder / EXAMPLES[0]), "esci_label", bad)
    dataset.notes["examples_without_product"] = len(examples) - len(rows)
    return dataset
