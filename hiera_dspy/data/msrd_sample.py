"""MSRD, the Movie Search Ranking Dataset (metarank/msrd), as adapted by Elastic: a bundled sample.

Splits `train` (300 pairs) and `dev` (300 pairs), balanced and query-disjoint, sampled with seed 42; labels are binary.
Split `pool`: every judgment of `judgments-pool.tsv.gz` whose query is not a dev query (~110,000 pairs, ~15% relevant,
read on first use; `hiera_dspy.data.msrd_pool`), a large train split: `optimize.compile --dataset msrd --split pool`.
The movie catalog (9,750 movies) is the dataset's own knowledge source. Licence and attribution: NOTICE.txt beside it.
`msrd:DIR` reads the same files from another folder (e.g. a larger sample in the same format).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from hiera_dspy.data import BadRows, CatalogEntry, DataError, Dataset, expect_folder
from hiera_dspy.data.jsonl import read_pairs
from hiera_dspy.data.msrd_pool import pool_split
from hiera_dspy.labels import LabelScheme, get_scheme

BUNDLED = Path(__file__).parent / "msrd"
CATALOG_FIELDS = ("overview", "year", "genres", "director", "actors", "characters", "tags")


def read_catalog(path: Path, bad: BadRows | None = None) -> list[CatalogEntry]:
    """The movie catalog; a bad row raises, or is skipped and recorded by `bad` (--on-bad-row skip)."""
    bad = bad or BadRows()
    entries = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
                if not isinstance(row, dict) or any(isinstance(row.get(k), (list, dict)) for k in ("id", "title")):
                    raise TypeError("id and title must be text")
                entries.append(CatalogEntry(id=str(row["id"]), title=str(row["title"]), text=_movie_text(row)))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                bad(path, f"bad catalog row ({exc}); expected id, title, overview, ...", line=lineno)
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


def load(arg: str | None, scheme: LabelScheme | None, *, on_bad_row: str = "error", **_) -> Dataset:
    """MSRD from the bundled copy or a folder: train/dev pairs and the movie catalog when present."""
    folder = expect_folder(Path(arg), "a folder with train.jsonl and/or dev.jsonl") if arg else BUNDLED
    scheme = scheme or get_scheme("msrd")
    bad = BadRows(on_bad_row)
    splits = {}
    for split in ("train", "dev"):
        path = folder / f"{split}.jsonl"
        if path.exists():
            splits[split] = read_pairs(path, scheme, on_bad_row=on_bad_row, skipped=bad.rows)
    if not splits:
        raise DataError(f"{folder}: no train.jsonl or dev.jsonl found (MSRD pairs in the bundled jsonl format)")
    catalog_path = folder / "movies-corpus.jsonl.gz"
    catalog = read_catalog(catalog_path, bad) if catalog_path.exists() else None
    notes = {"skipped_rows": bad.rows}
    pool = pool_split(folder, scheme, CATALOG_FIELDS, splits.get("dev", []), notes)
    if pool is not None:  # read on first use
        splits["pool"] = pool
    return Dataset(name="msrd", scheme=scheme, splits=splits, catalog=catalog, default_split="dev", notes=notes)
