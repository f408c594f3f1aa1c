"""Untrusted text (item text, catalog rows, web results) enters prompts as data: truncated to a budget and stripped of
anything that looks like DSPy's field markers, so it cannot open or close an output field."""

from __future__ import annotations

import re

ITEM_TEXT_BUDGET = 1500  # characters of item text given to any agent; documented in the README
_MARKER = re.compile(r"\[\[\s*##(.*?)##\s*\]\]")


def as_data(text: str, limit: int = ITEM_TEXT_BUDGET) -> str:
    text = _MARKER.sub(lambda m: f"[{m.group(1).strip()}]", str(text or ""))
    text = text.replace("[[", "[ [").replace("]]", "] ]")
    if len(text) > limit:
        text = text[:limit].rstrip() + " …[truncated]"
    return text


def item_block(title: str, text: str, limit: int = ITEM_TEXT_BUDGET) -> str:
    """The item as one delimited data block."""
    return f"<item>\nTitle: {as_data(title, 300)}\n{as_data(text, limit)}\n</item>"
