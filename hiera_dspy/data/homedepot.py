"""Home Depot Product Search Relevance (the Kaggle competition "home-depot-product-search-relevance"), 3 levels.

`homedepot:PATH` reads the competition folder (its data terms apply: it is not shipped here):
- `train.csv` (latin-1 encoded): `id, product_uid, product_title, search_term, relevance`, where relevance is the mean
  of several 1-3 ratings (1, 1.33, 1.67, 2, 2.33, 2.5, 2.67, 3, ...);
- `product_descriptions.csv` (optional): `product_uid, product_description`;
- `attributes.csv` (optional): `product_uid, name, value`, several rows per product (blank product_uid rows exist).
The mean is binned by rounding half up: < 1.5 -> "1", 1.5 to < 2.5 -> "2", >= 2.5 -> "3", then `scheme.from_raw`;
the mean itself is kept as the pair's `grade` (minus one: 0-2, the scheme's scale) for judges that regress on it
(ce-blend) and reports that show it. `--split all` is every pair, for training on all of them.
The catalog is every product of train.csv. `homedepot` alone reads $HIERA_DATA_DIR/homedepot.
Files are read as UTF-8 when they decode as such, else as latin-1.
Splits: `all` (every pair, in file order), and `eval` (the default), `train`, `dev` drawn by `make_splits`.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

import pandas as pd

from hiera_dspy.data import BadRows, CatalogEntry, DataError, Dataset, expect_folder
from hiera_dspy.data.locate import Download, locate
from hiera_dspy.data.sampling import make_splits
from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme, get_scheme
from hiera_dspy.records import Pair

SOURCE = 'the Kaggle competition "home-depot-product-search-relevance"'
DOWNLOAD = Download("homedepot", "train.csv, product_descriptions.csv and attributes.csv of the Kaggle competition "
                    "home-depot-product-search-relevance (kaggle.com/c/home-depot-product-search-relevance/data)")
FILES = {
    "train.csv": ("id", "product_uid", "product_title", "search_term", "relevance"),
    "product_descriptions.csv": ("product_uid", "product_description"),
    "attributes.csv": ("product_uid", "name", "value"),
}


def relevance_level(value) -> str:
    """Mean 1-3 rating -> "1" | "2" | "3", rounding half up on its decimal text: 2.5 -> "3", 1.5 -> "2", 2.33 -> "2"."""
    try:
        score = Decimal(str(value).strip())
    except InvalidOperation:
        raise HieraError(f"relevance {value!r} is not a number") from None
    if not score.is_finite() or not Decimal(1) <= score <= Decimal(3):
        raise HieraError(f"relevance {value!r} is outside the 1-3 scale")
    return str(int(score.quantize(Decimal(1), rounding=ROUND_HALF_UP)))


def read_table(folder: Path, name: str, required: bool = True) -> pd.DataFrame | None:
    """One competition file as strings (empty cells are ""), checked for its columns; None if optional and absent."""
    path, columns = folder / name, FILES[name]
    expected = f"expected a CSV file with columns {', '.join(columns)} (from {SOURCE})"
    if not path.is_file():
        if not required:
            return None
        raise DataError(f"{path}: file not found; {expected}")
    table = None
    for encoding in ("utf-8", "latin-1"):
        try:
            table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding=encoding)
            break
        except UnicodeDecodeError:
            continue
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise DataError(f"{path}: cannot be read ({exc}); {expected}") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {list(table.columns)}; {expected}")
    table["product_uid"] = table["product_uid"].str.strip().str.replace(r"\.0$", "", regex=True)  # 100001.0 -> 100001
    return table


def load(arg: str | None, scheme: LabelScheme | None, *, on_bad_row: str = "error", **_) -> Dataset:
    """`homedepot:PATH`, or `homedepot` alone: $HIERA_DATA_DIR/homedepot (`data.locate`)."""
    arg = arg or locate(DOWNLOAD)
    scheme = scheme or get_scheme("homedepot")
    bad = BadRows(on_bad_row)
    folder = expect_folder(Path(arg), f"the folder of {SOURCE} with train.csv")
    train = read_table(folder, "train.csv")
    texts: dict[str, list[str]] = {uid: [] for uid in train["product_uid"]}
    descriptions = read_table(folder, "product_descriptions.csv", required=False)
    if descriptions is not None:
        for uid, text in zip(descriptions["product_uid"], descriptions["product_description"]):
            if uid in texts and text.strip():
                texts[uid].append(f"Description: {text.strip()}")
    attributes = read_table(folder, "attributes.csv", required=False)
    if attributes is not None:
        for uid, name, value in zip(attributes["product_uid"], attributes["name"], attributes["value"]):
            if uid in texts and value.strip():
                texts[uid].append(f"{name.strip()}: {value.strip()}" if name.strip() else value.strip())
    pairs, titles = [], {}
    for number, row in enumerate(train.to_dict("records"), 1):
        uid, title = row["product_uid"], row["product_title"].strip()
        titles.setdefault(uid, title)  # the catalog is every product of train.csv, a skipped row's too
        try:
            label = scheme.from_raw(relevance_level(row["relevance"]))
            grade = float(row["relevance"]) - 1 if len(scheme.labels) == 3 else None  # the mean on the 0-2 scale
        except ValueError as exc:
            bad(folder / "train.csv", f"column 'relevance': {exc}; expected a mean rating from 1 to 3",
                row=f"row {number} (id {row['id']})")
            continue
        pairs.append(Pair(id=f"homedepot:{row['id']}", query=row["search_term"].strip(), item_title=title,
                          item_text="\n".join(texts[uid]), label=label, query_id=row["search_term"].strip().lower(),
                          item_id=uid, grade=grade))
    if not pairs:
        what = "every row was bad" if bad.rows else "no rows"
        raise DataError(f"{folder / 'train.csv'}: {what}; expected columns {', '.join(FILES['train.csv'])}")
    catalog = [CatalogEntry(id=uid, title=titles[uid], text="\n".join(lines)) for uid, lines in texts.items()]
    splits = {"all": pairs, **make_splits(pairs, scheme)}  # all: file order; eval/train/dev: the paper's sampling
    return Dataset(name=f"homedepot:{arg}", scheme=scheme, splits=splits, catalog=catalog,
                   default_split="eval", notes={"n_pairs": len(pairs), "skipped_rows": bad.rows})
