"""Batches that waste few padded tokens: length-sorted for inference, length-bucketed (and still shuffled) for
training, and the token budget of a set of batches measured (real against padded tokens).

A transformer's cost grows with the padded length of each batch, so batching pairs of similar length saves work that
would only compute on padding. Inference sorts every pair by its token count and cuts the sorted order into batches
(`length_sorted_batches`; the caller puts the results back in input order). Training cannot sort the whole epoch
(the batches would go from short to long, biasing the schedule), so `length_bucketed_batches` shuffles, sorts within
windows of `window` batches, cuts those into batches and shuffles the batches: nearly the saving, none of the order.

Example:
    >>> [b.tolist() for b in length_sorted_batches([5, 1, 4, 2], 2)]
    [[1, 3], [2, 0]]
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from hiera_dspy.errors import HieraError


def length_sorted_batches(lengths: Sequence[int], batch: int) -> list[np.ndarray]:
    """Index arrays of at most `batch` items, shortest first (a stable sort: equal lengths keep input order)."""
    if batch < 1:
        raise HieraError(f"batch must be >= 1; got {batch}")
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i:i + batch] for i in range(0, len(order), batch)]


def length_bucketed_batches(items: Sequence, lengths: Sequence[int], batch: int, *, seed: int = 0,
                            window: int = 50, drop_last: bool = True) -> list[list]:
    """Training batches of `items` (e.g. the train pairs) grouped by `lengths` (their token counts): shuffled
    (seeded), sorted by length within windows of `window` batches, cut into batches of `batch`, the batches shuffled.
    `drop_last` drops a final short batch, as one epoch of `len(items) // batch` steps does."""
    if len(items) != len(lengths):
        raise HieraError(f"{len(items)} items but {len(lengths)} lengths")
    if batch < 1 or window < 1:
        raise HieraError(f"batch and window must be >= 1; got {batch}, {window}")
    rng = random.Random(seed)
    order = list(range(len(items)))
    rng.shuffle(order)
    span = batch * window
    batches: list[list[int]] = []
    for start in range(0, len(order), span):
        chunk = sorted(order[start:start + span], key=lambda i: lengths[i])
        batches.extend(chunk[i:i + batch] for i in range(0, len(chunk), batch))
    if drop_last:
        batches = [b for b in batches if len(b) == batch]
    rng.shuffle(batches)
    return [[items[i] for i in b] for b in batches]


def token_budget(batches_of_lengths: Sequence[Sequence[int]]) -> dict[str, float]:
    """The tokens a set of batches computes on: `real` (sum of lengths), `padded` (each batch padded to its longest),
    and `efficiency` = real / padded (1.0: no padding at all)."""
    real = sum(int(sum(b)) for b in batches_of_lengths)
    padded = sum(len(b) * int(max(b)) for b in batches_of_lengths if len(b))
    return {"real": real, "padded": padded, "efficiency": real / padded if padded else 1.0}
