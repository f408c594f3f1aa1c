"""How many tokens the cross-encoder reads of a query + item pair: chosen per dataset from its pairs' lengths, and the
cut said, never silent.

A cross-encoder reads `max_len` tokens of the query and the item view (`cross_encoder.item_view`) and drops the rest.
What a cut loses depends on the data:

- **Catalog items in MSRD's field layout** (title, then year, genres, director, actors, characters, then the overview):
  the item view puts the fields queries ask for first, so a cut drops plot text. Every MSRD pair is longer than 64
  tokens (178 in the median) and 64 tokens measured best there (kappa 0.805 against 0.788 at 128,
  docs/learning.md): the budget stays `FIELD_LAYOUT_LEN`.
- **Free text** (passages, product titles): a cut drops the end of the text, whatever it says. The budget is the
  shortest of `LADDER` that reads at least `COVER` of the pairs whole (TREC DL 2020's passages: 77 tokens in the
  median, 135 at the 90th percentile: 160 tokens, 3% of the pairs cut; Home Depot's titles: 64). The ladder stops at
  192, what the 10 ms a pair budget affords on 2 cores (int8, length-sorted batches).

`choose_max_len(pairs, tokenizer)` returns the choice and its evidence (the layout, the length percentiles, how many
pairs each cut of the ladder truncates, how many the chosen one truncates), which ce-blend records in its artifact and
prints in the compile's report.

Example:
    >>> choose_max_len(pairs, tokenizer)["max_len"]        # doctest: +SKIP
    160
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from hiera_dspy.records import Pair

LADDER = (64, 96, 128, 160, 192)
COVER = 0.90  # the share of pairs a free-text budget reads whole
FIELD_LAYOUT_LEN = 64
SAMPLE = 2000  # pairs tokenized to measure the lengths (seeded)


def field_layout(pairs: Sequence[Pair]) -> bool:
    """Whether most items are in MSRD's field layout (`cross_encoder.item_view` reorders them)."""
    from hiera_dspy.signals.cross_encoder import LONG_FIELD, SHORT_FIELDS

    fields = {*SHORT_FIELDS, LONG_FIELD}
    hits = sum(1 for p in pairs if any(line.split(": ", 1)[0] in fields for line in p.item_text.split("\n")))
    return hits * 2 > len(pairs)


def pair_lengths(pairs: Sequence[Pair], tokenizer) -> np.ndarray:
    """Token counts of query + item view, uncut (what the cross-encoder would read with no limit)."""
    from hiera_dspy.signals.cross_encoder import item_view

    if not pairs:
        return np.zeros(0, dtype=int)
    enc = tokenizer([p.query for p in pairs], [item_view(p.item_title, p.item_text) for p in pairs],
                    truncation=False, verbose=False)
    return np.array([len(ids) for ids in enc["input_ids"]], dtype=int)


def choose_max_len(pairs: Sequence[Pair], tokenizer, seed: int = 0) -> dict:
    """{"max_len", "rule", "layout", "pairs" (measured), "percentiles", "truncated_share" (per ladder cut),
    "truncated" (the chosen cut's share)} for `pairs` (see the module doc)."""
    rng = random.Random(seed)
    sample = list(pairs) if len(pairs) <= SAMPLE else rng.sample(list(pairs), SAMPLE)
    lengths = pair_lengths(sample, tokenizer)
    shares = {cut: float(np.mean(lengths > cut)) if len(lengths) else 0.0 for cut in LADDER}
    percentiles = {str(q): float(np.percentile(lengths, q)) for q in (50, 90, 95, 99)} if len(lengths) else {}
    if field_layout(sample):
        max_len, rule = FIELD_LAYOUT_LEN, "field layout: the fields queries ask for come first"
    else:
        max_len = next((cut for cut in LADDER if shares[cut] <= 1 - COVER), LADDER[-1])
        rule = f"free text: the shortest cut that reads {COVER:.0%} of the pairs whole (largest {LADDER[-1]})"
    return {"max_len": max_len, "rule": rule, "pairs": len(sample), "percentiles": percentiles,
            "truncated_share": {str(k): v for k, v in shares.items()}, "truncated": shares.get(max_len)}


def describe(choice: dict) -> str:
    """One line for the compile's report: the cut and how many pairs it truncates."""
    p = choice.get("percentiles", {})
    median = f", {p['50']:.0f} tokens in the median, {p['90']:.0f} at the 90th percentile" if p else ""
    truncated = choice.get("truncated")
    cut = f"; {truncated:.1%} of {choice['pairs']:,} measured pairs are cut" if truncated is not None else ""
    return f"token budget {choice['max_len']} ({choice['rule']}{median}{cut})"
