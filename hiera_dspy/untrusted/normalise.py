"""Text normalisation, the first thing done to any untrusted field: what a reader sees is what a filter checks.

An order written in characters that only look like ASCII (full-width letters, Cyrillic or Greek look-alikes,
mathematical alphanumerics) or broken up by invisible characters (zero-width spaces and joiners, bidi controls, soft
hyphens, tag characters) slips past any word pattern. `normalise` folds and removes them:

1. invisible characters out: Unicode format characters (category Cf: zero-width, bidi embeddings, overrides and
   isolates, word joiner, BOM, tag characters) and control characters (Cc) other than newline and tab;
2. Unicode NFKC (full-width, circled and mathematical letters become ASCII; ligatures are split);
3. look-alike letters inside a word that also has Latin letters (a mixed-script word, the usual spoofing shape) are
   folded to their Latin twin, so "Іgnоrе" (Cyrillic І, о, е) reads "Ignore"; a word wholly in Cyrillic or Greek is
   a word of that language and left alone;
4. whitespace collapsed: runs of spaces and tabs become one space, line ends are stripped, blank lines at most one.

`Normalised.flags` names what looked deliberate ("invisible", "lookalike"); whitespace, ligatures and other benign
NFKC changes change the text but raise no flag (bundled MSRD texts raise none).

Example:
    >>> normalise("Ｉｇｎｏｒｅ the\\u200b task").text
    'Ignore the task'
    >>> sorted(normalise("Ｉｇｎｏｒｅ the\\u200b task").flags)  # one stray zero-width space raises no flag
    ['lookalike']
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

# Cyrillic, Greek and a few Latin-extension letters that render like an ASCII letter (Unicode confusables, the
# subset that matters for English words).
LOOKALIKES = str.maketrans({
    **dict(zip("аеорсухкіјѕһԁԛԝӏ", "aeopcyxkijshdqwl")),
    **dict(zip("АВЕКМНОРСТХУІЈЅ", "ABEKMHOPCTXYIJS")),
    **dict(zip("αονικρτυ", "aovikptu")),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX")),
    **dict(zip("ɡɑօսᴀ", "gaoua")),  # not the Turkish dotless ı: a letter of real words
})
_LOOKALIKE_CHARS = frozenset(chr(c) for c in LOOKALIKES)
_WORD = re.compile(r"[^\W\d_]+")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_KEEP_CONTROLS = frozenset("\n\t")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")  # embeddings, overrides, isolates
# full-width letters and digits, mathematical alphanumerics, enclosed alphanumerics (not full-width punctuation)
_SPOOF_BLOCKS = re.compile("[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\U0001d400-\U0001d7ff\u2460-\u24ff"
                           "\U0001f100-\U0001f1ff]")


class Normalised(NamedTuple):
    """A normalised text and the flags of what looked deliberate in the original ("invisible", "lookalike")."""

    text: str
    flags: frozenset[str]


def _drop_invisible(text: str) -> tuple[str, bool]:
    """Format and control characters out; flagged when a bidi control is among them or there are three or more (real
    texts carry a stray soft hyphen or zero-width space now and then; an order spelt with them carries dozens)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    kept = [ch for ch in text if ch in _KEEP_CONTROLS or unicodedata.category(ch) not in ("Cf", "Cc")]
    removed = len(text) - len(kept)
    return "".join(kept), removed >= 3 or (removed > 0 and bool(_BIDI.search(text)))


def _nfkc(text: str) -> tuple[str, bool]:
    """NFKC, and whether the text had letters of the blocks spoofing uses (full-width, mathematical, enclosed)."""
    folded = unicodedata.normalize("NFKC", text)
    return folded, folded != text and bool(_SPOOF_BLOCKS.search(text))


def _fold_mixed_script(text: str) -> tuple[str, bool]:
    changed = False

    def fold(match: re.Match) -> str:
        nonlocal changed
        word = match.group(0)
        if not _LOOKALIKE_CHARS.intersection(word) or not any("a" <= ch.lower() <= "z" for ch in word):
            return word
        changed = True
        return word.translate(LOOKALIKES)

    return _WORD.sub(fold, text), changed


def collapse_whitespace(text: str) -> str:
    """Runs of spaces and tabs as one space, line ends stripped, at most one blank line in a row."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def normalise(text: str | None) -> Normalised:
    """`text` with invisible characters removed, NFKC applied, look-alike letters folded and whitespace collapsed."""
    text, invisible = _drop_invisible(str(text or ""))
    text, spoofed = _nfkc(text)
    text, mixed = _fold_mixed_script(text)
    flags = {"invisible"} if invisible else set()
    if spoofed or mixed:
        flags.add("lookalike")
    return Normalised(collapse_whitespace(text), frozenset(flags))
