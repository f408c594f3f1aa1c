"""Typed records shared by every part of the library."""

from __future__ import annotations

from typing import NamedTuple


class Pair(NamedTuple):
    """One query-item pair to judge. `label` is a label string of the scheme (None when unlabelled)."""

    id: str
    query: str
    item_title: str
    item_text: str
    label: str | None
    query_id: str
    item_id: str

    def inputs(self) -> dict[str, str]:
        return {"query": self.query, "item_title": self.item_title, "item_text": self.item_text}
