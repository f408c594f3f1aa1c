"""Benign edits: what a catalog does to an item's text from one week to the next without changing what the item is.

The attack families (`families.py`) are text written to move a judge; these are the opposite, re-wordings a judge
should not move with (`bench/stability.py` measures both on one page). Each edit maps an item's (title, text) to an
edited copy, or to None where it does not apply (a passage has no title to re-case and no fields to reorder):

- availability lines appended, in several phrasings (`availability`, `availability-stock`, `availability-label`);
- `field-order`: the `Name: value` lines rotated by one (the first field last);
- `title-lower`, `title-upper`, `title-case`: the title re-cased;
- `double-spaces`: every space doubled;
- `drop-sentence`: the last sentence of the overview (a passage: of the text) dropped, where there are two or more;
- `label-plot`: `Overview:` renamed `Plot:`; `labels-renamed`: `Plot:`, `Cast:`, `Genre:`, `Directed by:` at once;
- `typography`: straight quotes made curly, " - " an en dash, the space after a comma a non-breaking one.

Example:
    >>> from hiera_dspy.records import Pair
    >>> pair = Pair("p", "alien", "Alien", "Overview: A crew. A creature.\\nYear: 1979", "Relevant", "q", "i")
    >>> reword(pair, "label-plot").item_text
    'Plot: A crew. A creature.\\nYear: 1979'
    >>> reword(pair, "drop-sentence").item_text
    'Overview: A crew.\\nYear: 1979'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from hiera_dspy.records import Pair

_FIELD = re.compile(r"^[A-Z][A-Za-z ]*: ")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


class Rewording(NamedTuple):
    """A benign edit: its name, what it does, and (title, text) -> edited (title, text), or None where it does not
    apply."""

    name: str
    description: str
    apply: Callable[[str, str], tuple[str, str] | None]


def _append(line: str) -> Callable[[str, str], tuple[str, str]]:
    return lambda title, text: (title, f"{text}\n{line}" if text else line)


def _retitle(case: Callable[[str], str]) -> Callable[[str, str], tuple[str, str] | None]:
    return lambda title, text: (case(title), text) if title and case(title) != title else None


def _field_order(title: str, text: str) -> tuple[str, str] | None:
    lines = text.split("\n")
    fields = [line for line in lines if _FIELD.match(line)]
    if len(fields) < 2:
        return None
    rotated = iter(fields[1:] + fields[:1])
    return title, "\n".join(next(rotated) if _FIELD.match(line) else line for line in lines)


def _drop_sentence(title: str, text: str) -> tuple[str, str] | None:
    lines = text.split("\n")
    index = next((i for i, line in enumerate(lines) if line.startswith("Overview: ")), None)
    if index is None and any(_FIELD.match(line) for line in lines):
        return None  # fields but no overview
    index = 0 if index is None else index
    sentences = _SENTENCE_END.split(lines[index])
    if len(sentences) < 2:
        return None
    lines[index] = " ".join(sentences[:-1])
    return title, "\n".join(lines)


def _relabel(renames: dict[str, str]) -> Callable[[str, str], tuple[str, str] | None]:
    def apply(title: str, text: str) -> tuple[str, str] | None:
        lines = text.split("\n")
        out = [next((f"{new}: {line[len(old) + 2:]}" for old, new in renames.items() if line.startswith(f"{old}: ")),
                    line) for line in lines]
        return (title, "\n".join(out)) if out != lines else None
    return apply


def _curly(text: str) -> str:
    text = re.sub(r'"([^"]*)"', "\u201c\\1\u201d", text)
    return text.replace("'", "\u2019").replace(" - ", " \u2013 ").replace(", ", ",\u00a0")


def _typography(title: str, text: str) -> tuple[str, str] | None:
    edited = (_curly(title), _curly(text))
    return edited if edited != (title, text) else None


REWORDINGS: dict[str, Rewording] = {r.name: r for r in (
    Rewording("availability", "a line about streaming appended", _append("Now available to stream in HD.")),
    Rewording("availability-stock", "a stock line appended", _append("In stock: ships in 2-3 business days.")),
    Rewording("availability-label", "an `Availability:` field appended",
              _append("Availability: rent or buy, prices may vary by region.")),
    Rewording("field-order", "the field lines in another order (the first one last)", _field_order),
    Rewording("title-lower", "the title in lower case", _retitle(str.lower)),
    Rewording("title-upper", "the title in upper case", _retitle(str.upper)),
    Rewording("title-case", "the title in title case", _retitle(str.title)),
    Rewording("double-spaces", "every space doubled",
              lambda title, text: (title.replace(" ", "  "), text.replace(" ", "  ")) if " " in title + text else None),
    Rewording("drop-sentence", "the overview's (a passage's) last sentence dropped", _drop_sentence),
    Rewording("label-plot", "`Overview:` renamed `Plot:`", _relabel({"Overview": "Plot"})),
    Rewording("labels-renamed", "`Plot:`, `Cast:`, `Genre:`, `Directed by:` for the MSRD labels",
              _relabel({"Overview": "Plot", "Actors": "Cast", "Genres": "Genre", "Director": "Directed by"})),
    Rewording("typography", "curly quotes, en dashes, non-breaking spaces after commas", _typography),
)}


def reword(pair: Pair, name: str) -> Pair | None:
    """`pair` with the edit `name` applied to its item (id suffixed `#edit:NAME`, label kept), or None where the edit
    does not apply to it."""
    edited = REWORDINGS[name].apply(pair.item_title or "", pair.item_text or "")
    if edited is None or edited == (pair.item_title or "", pair.item_text or ""):
        return None
    return pair._replace(id=f"{pair.id}#edit:{name}", item_title=edited[0], item_text=edited[1])
