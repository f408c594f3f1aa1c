"""Field-level features: which part of an item the query matches (its title, overview, cast, director, tags, ...).

An item text of `Name: value` lines (the MSRD catalog's form: Overview, Year, Genres, Director, Actors, Characters,
Tags) is split into fields; a text without such lines is one `overview` field. Per pair (the item screened first, as
every other feature reads it; idf from the fitted lexical model):

- `<field>_overlap`: the share of the query's content terms found in the field;
- `<field>_idf`: the same share weighted by idf (a rare name matched counts more than "movie");
- `<field>_name`: a whole comma-separated entry of the field (an actor's full name, a tag) appears in the query
  as one run of tokens (for actors, director, characters, tags, genres);
- `unmatched_idf`, `unmatched_max_idf`: idf sum and maximum of the query terms found nowhere in the item;
- `year`, `query_year`, `year_match`: the item's year (0 if none), a 4-digit year in the query (0 if none),
  1 if the query's year (or its decade, "80s" / "1980s") fits the item's year.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from hiera_dspy.signals.features import LexicalModel, content_terms, screened, tokenize

FIELDS = ("title", "overview", "genres", "director", "actors", "characters", "tags")
NAME_FIELDS = ("genres", "director", "actors", "characters", "tags")
FIELD_FEATURES = (tuple(f"{f}_overlap" for f in FIELDS) + tuple(f"{f}_idf" for f in FIELDS)
                  + tuple(f"{f}_name" for f in NAME_FIELDS)
                  + ("unmatched_idf", "unmatched_max_idf", "year", "query_year", "year_match"))
_LINE = re.compile(r"^([A-Z][a-z]+): (.*)$")
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_DECADE = re.compile(r"\b(?:19|20)?(\d)0s\b")


def item_fields(title: str, text: str) -> dict[str, str]:
    """{field: value} of an item: `title`, then each `Name: value` line by its lower-cased name; other lines go to
    `overview`."""
    fields = {"title": title or ""}
    loose = []
    for line in (text or "").split("\n"):
        m = _LINE.match(line)
        if m and m.group(1).lower() in FIELDS + ("year",):
            fields[m.group(1).lower()] = m.group(2)
        elif line.strip():
            loose.append(line)
    if loose:
        fields["overview"] = " ".join([fields.get("overview", ""), *loose]).strip()
    return fields


def _runs(tokens: Sequence[str]) -> str:
    return f" {' '.join(tokens)} "


def _year_match(query: str, year: float) -> float:
    if not year:
        return 0.0
    if any(int(y) == int(year) for y in _YEAR.findall(query)):
        return 1.0
    return float(any(int(d) == (int(year) // 10) % 10 for d in _DECADE.findall(query.lower())))


def field_features(lexical: LexicalModel, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
    """(len(triples), len(FIELD_FEATURES)): FIELD_FEATURES of (query, item_title, item_text) triples."""
    rows = []
    for query, title, text in screened(triples):
        fields = item_fields(title, text)
        q = tokenize(query)
        terms = content_terms(q, lexical.stopwords)
        idf = {t: lexical.idf.get(t, lexical.idf_unseen) for t in terms}
        total = sum(idf.values()) or 1.0
        tokens = {f: set(tokenize(fields.get(f, ""))) for f in FIELDS}
        overlap = [sum(t in tokens[f] for t in terms) / max(1, len(terms)) for f in FIELDS]
        weighted = [sum(idf[t] for t in terms if t in tokens[f]) / total for f in FIELDS]
        qrun = _runs(q)
        names = [float(any(entry and _runs(entry) in qrun for entry in
                           (tokenize(e) for e in fields.get(f, "").split(","))))
                 for f in NAME_FIELDS]
        anywhere = set().union(*tokens.values()) | set(tokenize(fields.get("year", "")))
        unmatched = [idf[t] for t in terms if t not in anywhere]
        year = float(fields["year"]) if fields.get("year", "").strip().isdigit() else 0.0
        qyear = _YEAR.search(query)
        rows.append(overlap + weighted + names + [sum(unmatched), max(unmatched, default=0.0), year,
                                                  float(qyear.group(1)) if qyear else 0.0,
                                                  _year_match(query, year)])
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(FIELD_FEATURES))
