"""A run's settings as a frozen record, read once from the run store and passed on: what a run was started with
(its method, config, dataset, split, limit and, for a judged run, the scale it judged on) and, for a labelling run,
what it labels and where its files go (`Labelling`). Read with `read_settings(store, run_id)`; nothing outside the
store re-reads a run's config as a dict (`RunStore.run_config` is the store's own).

Example:
    >>> s = RunSettings.of("r1", {"method": "hiera", "labelling": {"kind": "holes", "out": "out",
    ...     "scheme": {"name": "b", "labels": ["no", "yes"]}, "depth": 10}})
    >>> s.labelling.kind, s.labelling.out.name, s.labelling.scheme.labels, s.labelling.get("depth")
    ('holes', 'out', ('no', 'yes'), 10)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hiera_dspy.labels import LabelScheme
from hiera_dspy.store.run_store import RunStore


def _frozen(d: Mapping) -> Mapping:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class Labelling:
    """A labelling run's `labelling` section: its kind (`label` | `holes`), output folder and label scheme; `section`
    holds the whole stored section (a holes run's inputs, the use of --known, ...), read-only."""

    kind: str
    out: Path
    scheme: LabelScheme | None = None  # absent only from runs of early versions
    section: Mapping = field(default_factory=lambda: _frozen({}))

    @classmethod
    def of(cls, d: Mapping) -> Labelling:
        """The record of a stored `labelling` section."""
        return cls(kind=d.get("kind", ""), out=Path(d["out"]), scheme=LabelScheme.from_dict(d["scheme"]) if d.get("scheme") else None,
                   section=_frozen(d))

    def get(self, key: str, default: Any = None) -> Any:
        """One key of the stored section (`depth`, `ci`, `machine_values`, `qrels`, ...)."""
        return self.section.get(key, default)


@dataclass(frozen=True)
class RunSettings:
    """What a run was started with; `identity` is the whole stored config (read-only at its top level)."""

    run_id: str
    method: str = "?"
    config: Mapping = field(default_factory=lambda: _frozen({}))
    dataset: str | None = None
    split: str | None = None
    limit: int | None = None
    scheme: LabelScheme | None = None  # the scale a judged run judged on (absent from older runs)
    labelling: Labelling | None = None
    identity: Mapping = field(default_factory=lambda: _frozen({}))

    @classmethod
    def of(cls, run_id: str, config: Mapping) -> RunSettings:
        """The record of a run's stored config (a labelling section without an `out` is no labelling run's)."""
        section = config.get("labelling")
        return cls(run_id=run_id, method=config.get("method", "?"), config=_frozen(config.get("config") or {}),
                   dataset=config.get("dataset"), split=config.get("split"), limit=config.get("limit"),
                   scheme=LabelScheme.from_dict(config["scheme"]) if config.get("scheme") else None,
                   labelling=Labelling.of(section) if section and section.get("out") else None,
                   identity=_frozen(config))

    def kind(self) -> str | None:
        """The labelling run's kind (`label` | `holes`), None for another run."""
        return None if self.labelling is None else self.labelling.kind


def runs_writing(store: RunStore, out: Path) -> list[str]:
    """The labelling runs of the store whose outputs go to the folder `out`, in the store's order."""
    found = []
    for run_id in store.run_ids():
        settings = read_settings(store, run_id)
        if settings is not None and settings.labelling is not None and settings.labelling.out == out:
            found.append(run_id)
    return found


def read_settings(store: RunStore, run_id: str) -> RunSettings | None:
    """The run's settings; None for a run the store does not hold."""
    config = store.run_config(run_id)
    return None if config is None else RunSettings.of(run_id, config)
