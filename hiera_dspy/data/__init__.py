"""Datasets by name: `--dataset msrd`, `esci:PATH`, `esci:hf:ID`, `wands:PATH`, `homedepot:PATH`, `jsonl:PATH`.

A new dataset is one module in this package plus one line in `LOADERS`. A judgment list (Quepid's ratings, an SRW
or LTR list) is a format of `FORMATS` (`hiera_dspy.data.judgment_lists`); one whose module says `AS_DATASET = True`
is a dataset too (`--dataset quepid:FILE`, the texts from a corpus beside FILE: `hiera_dspy.data.tool_lists`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hiera_dspy.errors import HieraError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair
from hiera_dspy.registry import Entry, Registry, module_defines, module_doc


class DataError(HieraError):
    """A dataset file is missing or malformed; the message names the file, the line/field and the remedy (the
    commands exit with status 1)."""

    exit_status = 1


ON_BAD_ROW = ("error", "skip")
SKIP_HINT = "fix the row, or skip such rows and count them with --on-bad-row skip"  # ends every bad-row error


class BadRows:
    """What `--on-bad-row` does with a malformed row: `error` raises a DataError naming the file, the row and the
    problem; `skip` records it (file, `line` or `row`, error) in `rows` and the loader goes on. Loaders put `rows` in
    `Dataset.notes["skipped_rows"]`."""

    def __init__(self, on_bad_row: str = "error"):
        if on_bad_row not in ON_BAD_ROW:
            raise DataError(f"on_bad_row must be one of {ON_BAD_ROW}, got {on_bad_row!r}")
        self.skip = on_bad_row == "skip"
        self.rows: list[dict] = []

    def __call__(self, file, problem: str, *, line: int | None = None, row: str | None = None) -> None:
        """Raise (error) or record (skip) one bad row, at `line` N of a text file or at `row` (e.g. "row 7 (id 9)")."""
        where = f"line {line}" if line is not None else row
        if not self.skip:
            raise DataError(f"{file}, {where}: {problem}; {SKIP_HINT}")
        self.rows.append({"file": str(file), **({"line": line} if line is not None else {"row": row}),
                          "error": problem})


def expect_file(path: Path, expected: str) -> Path:
    """`path` if it is a file; else a DataError saying it is a folder or missing, and what was expected."""
    if path.is_dir():
        raise DataError(f"{path}: is a folder, not a file; expected {expected}")
    if not path.is_file():
        raise DataError(f"{path}: file not found; expected {expected}")
    return path


def expect_folder(path: Path, expected: str) -> Path:
    """`path` if it is a folder; else a DataError saying it is a file or missing, and what was expected."""
    if path.is_file():
        raise DataError(f"{path}: is a file, not a folder; expected {expected}")
    if not path.is_dir():
        raise DataError(f"{path}: folder not found; expected {expected}")
    return path


@dataclass(frozen=True)
class CatalogEntry:
    """One row of a dataset's own catalog, searchable as external knowledge."""

    id: str
    title: str
    text: str


@dataclass
class Dataset:
    """A loaded dataset: its label scheme, named splits of pairs, and the catalog to look things up in."""
    name: str
    scheme: LabelScheme
    splits: dict[str, list[Pair]]
    catalog: list[CatalogEntry] | None = None
    default_split: str = "dev"
    notes: dict = field(default_factory=dict)

    def split(self, name: str | None = None, limit: int | None = None, balanced: bool = False) -> list[Pair]:
        """The split's pairs in order; `limit` keeps the first N, or with `balanced` the first N//labels per label
        (a small compile budget must still see every label)."""
        name = name or self.default_split
        if name not in self.splits:
            raise DataError(f"dataset {self.name!r} has no split {name!r}; available: {sorted(self.splits)}")
        pairs = self.splits[name]
        if not limit:
            return pairs
        if not balanced:
            return pairs[:limit]
        quota = {label: max(1, limit // len(self.scheme.labels)) for label in self.scheme.labels}
        chosen = []
        for pair in pairs:
            if quota.get(pair.label, 0) > 0:
                quota[pair.label] -= 1
                chosen.append(pair)
        return chosen


# name -> "module:function"; the function takes (arg: str | None, scheme: LabelScheme | None, **options) -> Dataset
# (options hold `dataset`, the name it is called by)
LOADERS: dict[str, str] = {
    "msrd": "hiera_dspy.data.msrd_sample:load",
    "esci": "hiera_dspy.data.esci:load",
    "wands": "hiera_dspy.data.wands:load",
    "homedepot": "hiera_dspy.data.homedepot:load",
    "jsonl": "hiera_dspy.data.jsonl:load",
    "trec": "hiera_dspy.data.trec_folder:load",
    "irds": "hiera_dspy.data.irds:load",
}

# name -> the module of one judgment-list format: its `read`/`read_known`, `looks_like` and `write` (the contract:
# `hiera_dspy.data.judgment_lists`); sniffing a PATH tries them in this order. A new format is one module and one
# line here: it is then a --known, --from and export --format format, and with `AS_DATASET = True` a dataset.
FORMATS: dict[str, str] = {
    "trec": "hiera_dspy.data.known_trec",
    "srw": "hiera_dspy.data.srw",
    "quepid": "hiera_dspy.data.quepid",
    "esltr": "hiera_dspy.data.esltr",
    "jsonl": "hiera_dspy.data.known_jsonl",
    "qrels": "hiera_dspy.data.known_qrels",
}


def load_dataset(spec: str, scheme: LabelScheme | None = None, **options) -> Dataset:
    """Load a dataset from a `--dataset` spec such as `msrd`, `wands:/data/WANDS/dataset` or `jsonl:pairs.jsonl`."""
    name, _, arg = spec.partition(":")
    if name not in DATASETS:
        raise DataError(f"unknown dataset {name!r} in --dataset {spec!r}; known: {sorted(DATASETS)} "
                        f"(use jsonl:PATH for your own pairs)")
    return DATASETS[name].load()(arg or None, scheme, dataset=name, **options)  # `dataset`: a shared loader's name


def _datasets() -> dict[str, Entry]:
    """LOADERS, then the judgment-list formats that are datasets (read without importing them)."""
    entries = {name: Entry(name, module_doc(target), loader=target) for name, target in LOADERS.items()}
    for name, module in FORMATS.items():
        if name not in entries and module_defines(module, "AS_DATASET"):
            entries[name] = Entry(name, module_doc(module), loader="hiera_dspy.data.tool_lists:load")
    return entries


# the datasets as a registry (hiera_dspy.registry), read from LOADERS and FORMATS: a line there is a dataset here
DATASETS = Registry("dataset", _datasets, hint=" (jsonl:PATH for your own pairs)")
