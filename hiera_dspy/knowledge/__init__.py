"""The Information Layer: one protocol, three sources (the dataset's catalog, web search, none), cached on disk.

`--knowledge auto|catalog|web|none`: auto = web when TAVILY_API_KEY is set, else the dataset's catalog when it has one
(said on stderr, with the reason). `search(text)` without `k` returns the source's default number of passages: 5 for
web search (the paper, App. A.1), 3 for the catalog.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Protocol

from hiera_dspy.errors import HieraError


@dataclass(frozen=True)
class Passage:
    """One looked-up text: title, text, the source that found it, and its URL if any."""
    title: str
    text: str
    source: str
    url: str = ""

    def to_dict(self) -> dict:
        """The passage as JSON-ready data."""
        return dict(self.__dict__)


class Knowledge(Protocol):
    """What agents look things up in: a named source with a default number of passages per search."""
    name: str
    default_k: int

    def search(self, text: str, k: int | None = None) -> list[Passage]:
        """Up to `k` (default `default_k`) passages about `text`."""


class NoKnowledge:
    """The knowledge source of `--knowledge none`: every search finds nothing."""
    name = "none"
    default_k = 0

    def __deepcopy__(self, memo):  # shared by every copy an optimizer makes of a program
        return self

    def search(self, text: str, k: int | None = None) -> list[Passage]:
        """Always an empty list."""
        return []


def make_knowledge(kind: str, dataset=None, cache_dir: str | None = None) -> Knowledge:
    """Build the knowledge source named by `--knowledge` for a dataset, wrapped in the on-disk cache."""
    from hiera_dspy.knowledge.cache import CachedKnowledge

    if kind == "auto":
        kind, reason = choose_auto(dataset)
        print(f"hiera-dspy: --knowledge auto: {kind} ({reason})", file=sys.stderr)
    if kind == "none":
        return NoKnowledge()
    if kind == "catalog":
        if dataset is None or not dataset.catalog:
            raise HieraError("--knowledge catalog: this dataset has no catalog; use --knowledge web or none")
        from hiera_dspy.knowledge.catalog import CatalogKnowledge

        source = CatalogKnowledge(dataset.catalog, name=f"catalog:{dataset.name}")
    elif kind == "web":
        from hiera_dspy.knowledge.web import WebKnowledge

        source = WebKnowledge()
    else:
        raise HieraError(f"--knowledge {kind!r}: expected auto, catalog, web or none")
    return CachedKnowledge(source, cache_dir)


def choose_auto(dataset=None) -> tuple[str, str]:
    """What `--knowledge auto` picks for a dataset, and why (one clause)."""
    if os.environ.get("TAVILY_API_KEY"):
        return "web", "TAVILY_API_KEY is set: web search, 5 results per look-up as in the paper"
    name = getattr(dataset, "name", "this dataset")
    if dataset is not None and dataset.catalog:
        return "catalog", (f"TAVILY_API_KEY is not set, so the {name} catalog (BM25) instead of web search; "
                           "set it, or pass --knowledge web|catalog|none")
    return "none", (f"TAVILY_API_KEY is not set and {name} has no catalog: no knowledge look-ups; "
                    "set TAVILY_API_KEY for web search")


def render(passages: list[Passage], limit: int = 300) -> str:
    """Passages as delimited, untrusted data for a prompt."""
    from hiera_dspy.untrusted.blocks import as_data

    return "\n".join(f"<knowledge source={p.source!r}>{as_data(p.title + ': ' + p.text, limit)}</knowledge>"
                     for p in passages)
