"""The form a learned judge reads an item in: the same item whatever its catalog's wording of the day.

Catalogs re-word items without changing what they are: the fields come in another order, a label is renamed
(`Overview:` -> `Plot:`), quotes turn curly, a space becomes a non-breaking one. `canonical_item(title, text)` gives
one form for all of them:

1. typography folded (`fold`): curly quotes and primes to straight ones, en and em dashes (and the other dashes and
   the minus sign) to "-", the ellipsis to "...", non-breaking and thin spaces to a space; runs of spaces collapsed
   and lines stripped;
2. `Name: value` lines whose name the synonym table knows (`FIELD_SYNONYMS`: `Plot`, `Synopsis`, `Description` are
   the overview; `Cast`, `Starring` the actors; any case) get the field's own label and come in `FIELD_ORDER` (the
   MSRD catalog's order), every other non-blank line after them in its own order, or dropped (`loose=False`: a
   scorer fitted on a catalog whose items have only such lines reads only them, `loose_lines_matter`). A text with
   no such line (a passage, a product title) keeps its lines as they are.

An MSRD item as the bundled data writes it is already in this form (but for its typography). Case is left alone (the
embedder and the cross-encoder are uncased; the lexical features lower-case); `content_key` folds it too, for the
item prior's key of an item without an id.

Example:
    >>> canonical_item("Alien", "Year: 1979\\nPlot: A crew meets\\u00a0a \\u201ccreature\\u201d.")
    ('Alien', 'Overview: A crew meets a "creature".\\nYear: 1979')
"""

from __future__ import annotations

import functools
import hashlib
import re

FIELD_ORDER = ("overview", "year", "genres", "director", "actors", "characters", "tags")
FIELD_SYNONYMS = {
    **dict.fromkeys(("overview", "plot", "synopsis", "summary", "description", "storyline", "story", "plot summary"),
                    "overview"),
    **dict.fromkeys(("year", "release year", "released"), "year"),
    **dict.fromkeys(("genres", "genre", "categories", "category"), "genres"),
    **dict.fromkeys(("director", "directors", "directed by"), "director"),
    **dict.fromkeys(("actors", "actor", "cast", "starring", "stars"), "actors"),
    **dict.fromkeys(("characters", "character", "roles"), "characters"),
    **dict.fromkeys(("tags", "tag", "keywords"), "tags"),
}
TYPOGRAPHY = str.maketrans({
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u02bc", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u00a0\u2007\u2009\u200a\u202f\u205f\u3000", " "),
    "\u2026": "...",
})
_LINE = re.compile(r"^([A-Za-z][A-Za-z ]{0,24}?)\s*:\s*(.*)$")
_SPACES = re.compile(r"[ \t]+")


def fold(text: str | None) -> str:
    """`text` with its typography folded to ASCII, runs of spaces as one and every line stripped."""
    lines = (_SPACES.sub(" ", line).strip() for line in str(text or "").translate(TYPOGRAPHY).split("\n"))
    return "\n".join(lines).strip()


def field_lines(text: str) -> tuple[dict[str, str], list[str]]:
    """({field: value} of the lines the synonym table names, first of each field; the other non-blank lines)."""
    fields: dict[str, str] = {}
    rest = []
    for line in text.split("\n"):
        m = _LINE.match(line)
        name = FIELD_SYNONYMS.get(" ".join(m.group(1).lower().split())) if m else None
        if name and name not in fields:
            fields[name] = m.group(2).strip()
        elif line.strip():
            rest.append(line)
    return fields, rest


@functools.lru_cache(maxsize=65536)  # an item is read for many queries
def canonical_item(title: str | None, text: str | None, loose: bool = True) -> tuple[str, str]:
    """(title, text) in the canonical form (module doc): typography folded, known fields relabelled and reordered;
    `loose=False`: an item with known fields keeps only them."""
    title, text = fold(title), fold(text)
    fields, rest = field_lines(text)
    if not fields:
        return title, text
    lines = [f"{name.capitalize()}: {fields[name]}" for name in FIELD_ORDER if name in fields]
    return title, "\n".join(lines + (rest if loose else []))


def canonical_triples(triples, loose: bool = True) -> list[tuple[str, str, str]]:
    """(query, title, text) triples with their items in the canonical form (`loose`: see `canonical_item`)."""
    return [(query, *canonical_item(title, text, loose)) for query, title, text in triples]


def loose_lines_matter(items) -> bool:
    """Whether the (title, text) items say that lines outside the known fields matter: False when every item with a
    text has known fields and no other line (a catalog in the MSRD form, where a line added later is not part of
    what the items were judged on), True otherwise."""
    for text in dict.fromkeys(text for _title, text in items):  # each distinct text once
        if text:
            fields, rest = field_lines(fold(text))
            if rest or not fields:
                return True
    return False


@functools.lru_cache(maxsize=65536)  # an item is scored for many queries
def content_key(title: str | None, text: str | None) -> str:
    """An item's key from its content alone: 16 hex digits of the sha256 of its canonical form, case folded."""
    title, text = canonical_item(title, text)
    return hashlib.sha256(f"{title}\n{text}".casefold().encode()).hexdigest()[:16]


def title_key(title: str | None) -> str:
    """8 hex digits of the sha256 of a title folded (typography, spaces, case): what an item id is checked against."""
    return hashlib.sha256(fold(title).casefold().encode()).hexdigest()[:8]
