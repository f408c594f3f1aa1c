"""Datasets by name: `--dataset msrd`, `esci:PATH`, `esci:hf:ID`, `wands:PATH`, `homedepot:PATH`, `jsonl:PATH`.

A new dataset is one module in this package plus one line in `LOADERS`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from hiera_dspy.labels import LabelScheme
from hiera_dspy.types import Pair


class DataError(ValueError):
    """A dataset file is missing or malformed; the message names the file, the line/field and the remedy."""


@dataclass(frozen=True)
class CatalogEntry:
    """One row of a dataset's own catalog, searchable as external knowledge."""

    id: str
    title: str
    text: str


@dataclass
class Dataset:
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
LOADERS: dict[str, str] = {
    "msrd": "hiera_dspy.data.msrd:load",
    "esci": "hiera_dspy.data.esci:load",
    "wands": "hiera_dspy.data.wands:load",
    "homedepot": "hiera_dspy.data.homedepot:load",
    "jsonl": "hiera_dspy.data.jsonl:load",
}


def load_dataset(spec: str, scheme: LabelScheme | None = None, **options) -> Dataset:
    """Load a dataset from a `--dataset` spec such as `msrd`, `wands:/data/WANDS/dataset` or `jsonl:pairs.jsonl`."""
    name, _, arg = spec.partition(":")
    if name not in LOADERS:
        raise DataError(f"unknown dataset {name!r} in --dataset {spec!r}; known: {sorted(LOADERS)} "
                        f"(use jsonl:PATH for your own pairs)")
    module_name, func = LOADERS[name].split(":")
    loader = getattr(importlib.import_module(module_name), func)
    return loader(arg or None, scheme, **options)
