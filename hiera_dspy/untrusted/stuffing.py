"""Keyword stuffing: hidden lists, repetition and query echoes taken out of an item's text before anything reads it.

Stuffing pays a judge that counts: a learned scorer's overlap, BM25 and embedding features rise with every copy of
the query, and a small LLM reads a line of the query's words as evidence. Four rules, each raising a flag:

- "hidden": what a person would never see is removed with its content: HTML comments, elements that are hidden
  (`hidden`, `display:none`, `visibility:hidden`, `font-size:0`, white text in a style or a `color` attribute,
  zero opacity), markdown comments
  (`[//]: # (...)`); other HTML tags are stripped, their text kept (no flag);
- "repetition": a line (3+ words) or sentence (4+ words) repeated, case and punctuation aside, is kept once; a word
  repeated four or more times in a row is kept once; a line outside the prose and name fields that names the item's
  title twice goes;
- "keyword-list": a line that is a bare keyword list (four or more short elements outside any field), and every index
  field (tags, keywords, ...) after the item's first;
- "query-echo" (needs the query; queries of two or more content words): the full query repeated in the item, nearly
  verbatim (plurals folded, at most one other word among its terms, in any order) or run together in one word
  ("#alienmovie"). Every sentence of free text that echoes it is removed, whatever the title says: a claim in any
  words ("Fans of QUERY agree...", "Not a QUERY film at all") has to name the query to be about it, and an honest
  item loses one sentence; in a list line (`Key: a, b | c`) the elements that echo it are removed, unless the title
  itself repeats the query (then its tags naming it are its own). The first line of a name field (director, actors,
  characters, brand, ...) is left alone: "Director: Ridley Scott" for the query "ridley scott" is the item's own
  truth. Measured on 20,000 MSRD pool pairs (seed 0): the screen changes 0.9% of the relevant pairs' items (28 of
  2,927, one overview sentence naming the query) and 0.2% of the irrelevant ones (28 of 17,073); the clean kappa it
  costs is in docs/security.md.

Example:
    >>> destuff("A crew meets a creature.\\nTags: alien movie, alien movie film", "alien movie").text
    'A crew meets a creature.'
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "its", "of", "on", "or",
    "that", "the", "this", "to", "was", "with",
))
# "Key: value" lines whose first occurrence states a fact of the item (names, dates), never an echo to remove.
NAME_FIELDS = frozenset((
    "director", "directors", "actors", "actor", "cast", "starring", "characters", "writer", "writers", "author",
    "authors", "creator", "creators", "studio", "brand", "manufacturer", "year", "genres", "genre", "title",
    "original title", "artist", "publisher", "country", "language", "color", "colour", "material", "model",
))
# "Key: value" lines that index the item for search: an item has one; a second is stuffing.
INDEX_FIELDS = frozenset((
    "tags", "tag", "keywords", "keyword", "labels", "hashtags", "topics", "search terms", "search tags", "seo",
    "popular searches", "related searches", "related", "also searched", "meta keywords",
))
# "Key: value" lines whose value is running text (split into sentences, not list elements).
PROSE_FIELDS = frozenset(("overview", "description", "plot", "summary", "synopsis", "about", "details", "review"))

_HIDDEN_STYLE = r"(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0(?![.\d]*[1-9])|" \
                r"color\s*:\s*(?:white|#fff(?:fff)?\b|transparent))"
_HIDDEN = [re.compile(p, re.IGNORECASE | re.DOTALL) for p in (
    r"<!--.*?(?:-->|$)",
    (rf"<(\w+)\b[^>]*(?:\bhidden\b|style\s*=\s*[\"'][^\"']*{_HIDDEN_STYLE}|\bcolor\s*=\s*[\"']?(?:white|#fff(?:fff)?)\b)"
     r"[^>]*>.*?(?:</\1\s*>|$)"),
)]
_MD_COMMENT = re.compile(r"^\s*\[(?://|comment)\]\s*:\s*(?:#|<>)\s*\(.*?\)\s*$")
_TAG = re.compile(r"</?[A-Za-z][^<>]{0,200}>")
_KEY_LINE = re.compile(r"^\s*([^\W\d][\w .'-]{0,30}?)\s*:\s*(.*)$")
_LIST_SPLIT = re.compile(r"\s*(?:[,;|•·]|\s#)\s*")
_SENTENCE = re.compile(r"[^.!?]*(?:[.!?]+|$)")
_WORD = re.compile(r"[^\W_]+")
# "alien alien alien alien", not "Himself, Himself" nor the film "Bodies Bodies Bodies"
_REPEATED_WORD = re.compile(r"\b(\w+)(?:[ \t]+\1\b){3,}", re.IGNORECASE)


class Destuffed(NamedTuple):
    """An item text without stuffing, and the flags of what was removed ("hidden", "repetition", "query-echo")."""

    text: str
    flags: frozenset[str]


def strip_accents(text: str) -> str:
    """`text` with its accents folded (NFKD, combining marks dropped); ASCII text as it is (it has none: most
    catalog text, so it skips the normalisation). The learned scorer's tokens fold the same way."""
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """Lower-cased words, accents folded (as the learned scorer tokenizes)."""
    return _WORD.findall(strip_accents(text).lower().replace("'", ""))


def query_terms(query: str) -> list[str]:
    """The query's distinct content words, in order (stopwords out unless nothing else is left)."""
    distinct = list(dict.fromkeys(words(query)))
    return [t for t in distinct if t not in STOPWORDS] or distinct


def fold(word: str) -> str:
    """A word without its plural ending ("witches" -> "witch", "movies" -> "movie"): an echo need not be verbatim."""
    if len(word) > 4 and word.endswith("es") and word[-3] in "sxzh":
        return word[:-2]
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def echoes(text: str, terms: list[str]) -> bool:
    """Whether `text` repeats the whole query, verbatim or nearly: its terms (plurals folded) within consecutive
    content words, in any order, with at most one other word among them, or run together in one word. Queries of
    fewer than two terms never echo (too common in real items)."""
    if len(terms) < 2:
        return False
    every = words(text)
    joined = "".join(terms)
    if any(joined in t for t in every):
        return True
    tokens = [fold(t) for t in every if t not in STOPWORDS]
    need = {fold(t) for t in terms}
    width = len(need) + 1
    return any(tok in need and need <= set(tokens[i:i + width]) for i, tok in enumerate(tokens))


def _unhide(text: str) -> tuple[str, bool]:
    hidden = False
    for pattern in _HIDDEN[:2]:
        text, n = pattern.subn(" ", text)
        hidden = hidden or n > 0
    lines = text.split("\n")
    kept = [line for line in lines if not _MD_COMMENT.match(line)]  # markdown comments are whole lines
    return _TAG.sub(" ", "\n".join(kept)), hidden or len(kept) != len(lines)


def _dedupe(text: str) -> tuple[str, bool]:
    """Words repeated 4+ times in a row kept once; a line (3+ words) or sentence (4+ words) seen before dropped."""
    seen: set[str] = set()
    out, changed = [], False
    for line in text.split("\n"):
        line, n = _REPEATED_WORD.subn(r"\1", line)
        changed = changed or n > 0
        key = " ".join(words(line))
        if len(key.split()) >= 3 and key in seen:
            changed = True
            continue
        seen.add(key)
        kept = []
        for sentence in _SENTENCE.findall(line):
            skey = " ".join(words(sentence))
            if len(skey.split()) >= 4 and skey in seen and skey != key:
                changed = True
                continue
            seen.add(skey)
            kept.append(sentence)
        out.append("".join(kept).strip() if len(kept) < len(_SENTENCE.findall(line)) else line)
    return "\n".join(out), changed


def _drop_echoes(text: str, terms: list[str], lists: bool = True) -> tuple[str, bool]:
    """Sentences of free text that echo the query out, and (`lists`) the echoing elements of list lines."""
    out, changed, named = [], False, set()
    for line in text.split("\n"):
        key_line = _KEY_LINE.match(line)
        key = key_line.group(1).strip().lower() if key_line else None
        if key in NAME_FIELDS and key not in named:
            named.add(key)
            out.append(line)
            continue
        if key_line and key not in PROSE_FIELDS and key not in NAME_FIELDS:  # a list line: drop echoing elements
            elements = [e for e in _LIST_SPLIT.split(key_line.group(2)) if e]
            kept = [e for e in elements if not (lists and echoes(e, terms))]
            if len(kept) != len(elements):
                changed = True
                if kept:
                    out.append(f"{key_line.group(1).strip()}: {', '.join(kept)}")
                continue
            out.append(line)
            continue
        sentences = _SENTENCE.findall(line)
        kept = [s for s in sentences if not echoes(s, terms)]
        if len(kept) != len(sentences):  # a line outside the item's fields goes whole: its rest goes with the echo
            changed = True
            if key_line and "".join(kept).strip():
                out.append("".join(kept).strip())
            continue
        out.append(line)
    return "\n".join(out), changed


def _drop_keyword_lists(text: str) -> tuple[str, bool]:
    """Lines that are bare keyword lists (four or more short elements outside any field), and every index field
    (tags, keywords, ...) after the item's first: a record has one, and a second is written to be searched."""
    out, changed, indexed = [], False, False
    for line in text.split("\n"):
        key_line = _KEY_LINE.match(line)
        key = key_line.group(1).strip().lower() if key_line else None
        if key in INDEX_FIELDS:
            if indexed:
                changed = True
                continue
            indexed = True
        elements = [e for e in _LIST_SPLIT.split(line.strip(" .!?")) if e.strip()] if not key_line else []
        if len(elements) >= 4 and all(len(e.split()) <= 4 for e in elements):
            changed = True
            continue
        out.append(line)
    return "\n".join(out), changed


def _drop_title_repeats(text: str, title: str) -> tuple[str, bool]:
    """Lines other than the item's prose and name fields that name its title (two or more words) twice or more: its
    name pumped (an overview may well name the film twice; "More Alien, more Alien." is not a field)."""
    name = " ".join(words(title))
    if len(name.split()) < 2:
        return text, False

    def keep(line: str) -> bool:
        key_line = _KEY_LINE.match(line)
        if key_line and key_line.group(1).strip().lower() in PROSE_FIELDS | NAME_FIELDS:
            return True
        return f" {' '.join(words(line))} ".count(f" {name} ") < 2

    lines = text.split("\n")
    kept = [line for line in lines if keep(line)]
    return "\n".join(kept), len(kept) != len(lines)


def destuff(text: str, query: str | None = None, title_names_query: bool = False, title: str = "") -> Destuffed:
    """`text` without hidden content, repetition, keyword lists and (with `query`) query echoes; see the module doc.
    `title_names_query`: the item's title repeats the query, so its list fields (tags) naming it are its own;
    `title`, the item's title: free-text lines that repeat it are repetition."""
    text, flags = _query_free(text, title)
    if query:
        text, echoed = _drop_echoes(text, query_terms(query), lists=not title_names_query)
        if echoed:
            flags |= {"query-echo"}
    return Destuffed(text, flags)


@lru_cache(maxsize=65536)
def _query_free(text: str, title: str) -> tuple[str, frozenset[str]]:
    """The rules that do not read the query (hidden content, repetition, keyword lists), remembered: an item is
    judged for many queries (the MSRD pool: ~11 each)."""
    flags = set()
    text, hidden = _unhide(text)
    if hidden:
        flags.add("hidden")
    text, repeated = _dedupe(text)
    text, title_repeated = _drop_title_repeats(text, title)
    if repeated or title_repeated:
        flags.add("repetition")
    text, listed = _drop_keyword_lists(text)
    if listed:
        flags.add("keyword-list")
    return text, frozenset(flags)
