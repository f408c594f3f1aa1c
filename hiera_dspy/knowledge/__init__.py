"""The Information Layer: one protocol, three sources (the dataset's catalog, web search, none), cached on disk.

`--knowledge auto|catalog|web|none`: auto = web when TAVILY_API_KEY is set, else the dataset's catalog when it has one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Passage:
    title: str
    text: str
    source: str
    url: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class Knowledge(Protocol):
    name: str

    def search(self, text: str, k: int = 5) -> list[Passage]: ...


class NoKnowledge:
    name = "none"

    def __deepcopy__(self, memo):  # shared by every copy an optimizer makes of a program
        return self

    def search(self, text: str, k: int = 5) -> list[Passage]:
        return []


def make_knowledge(kind: str, dataset=None, cache_dir: str | None = None) -> Knowledge:
    """Build the knowledge source named by `--knowledge` for a dataset, wrapped in the on-disk cache."""
    from hiera_dspy.knowledge.cache import CachedKnowledge

    if kind == "auto":
        kind = "web" if os.environ.get("TAVILY_API_KEY") else ("catalog" if dataset is not None and dataset.catalog
                                                               else "none")
    if kind == "none":
        return NoKnowledge()
    if kind == "catalog":
        if dataset is None or not dataset.catalog:
            raise SystemExit("--knowledge catalog: this dataset has no catalog; use --knowledge web or none")
        from hiera_dspy.knowledge.catalog import CatalogKnowledge

        source = CatalogKnowledge(dataset.catalog, name=f"catalog:{dataset.name}")
    elif kind == "web":
        from hiera_dspy.knowledge.web import WebKnowledge

        source = WebKnowledge()
    else:
        raise SystemExit(f"--knowledge {kind!r}: expected auto, catalog, web or none")
    return CachedKnowledge(source, cache_dir)


def render(passages: list[Passage], limit: int = 300) -> str:
    """Passages as delimited, untrusted data for a prompt."""
    from hiera_dspy.untrusted import as_data

    return "\n".join(f"<knowledge source={p.source!r}>{as_data(p.title + ': ' + p.text, limit)}</knowledge>"
                     for p in passages)
