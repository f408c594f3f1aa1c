"""MSRD, the Movie Search Ranking Dataset (metarank/msrd), as adapted by Elastic: a bundled sample.

Splits `train` (300 pairs) and `dev` (300 pairs), balanced and query-disjoint, sampled with seed 42; labels are binary.
The movie catalog (9,750 movies) is the dataset's own knowledge source. Licence and attribution: NOTICE.txt beside it.
`msrd:DIR` reads the same files from another folder (e.g. a larger sample in the same format).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from hiera_dspy.data import CatalogEntry, DataError, Dataset
from hiera_dspy.data.jsonl import read_pairs
from hiera_dspy.labels import LabelScheme, get_scheme

BUNDLED = Path(__file__).parent / "msrd"
CATALOG_FIELDS = ("overview", "year", "genres", "director", "actors", "characters", "tags")


def read_catalog(path: Path) -> list[CatalogEntry]:
    entries = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
                entries.append(CatalogEntry(id=str(row["id"]), title=str(row["title"]), text=_movie_text(row)))
            except (json.JSONDecodeError, KeyError) as exc:
                raise DataError(f"{path}, line {lineno}: bad catalog row ({exc}); expected id, title, overview, ...")
    return entries


def _movie_text(row: dict) -> str:
    parts = []
    for name in CATALOG_FIELDS:
        value = row.get(name)
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        if value not in (None, "", []):
            parts.append(f"{name.capitalize()}: {value}")
    return "\n".join(parts)


def load(arg: str | None, scheme: LabelScheme | None, **options) -> Dataset:
    folder = Path(arg) if arg else BUNDLED
    scheme = scheme or get_scheme("msrd")
    splits = {}
    for split in ("train", "dev"):
        path = folder / f"{split}.jsonl"
        if path.exists():
            splits[split] = read_pairs(path, scheme, on_bad_row=options.get("on_bad_row", "error"))
    if not splits:
        raise DataError(f"{folder}: no train.jsonl or dev.jsonl found (MSRD pairs in the bundled jsonl format)")
    catalog_path = folder / "movies-corpus.jsonl.gz"
    catalog = read_catalog(catalog_path) if catalog_path.exists() else None
    return Dataset(name="msrd", scheme=scheme, splits=splits, catalog=catalog, default_split="dev")
