"""How the human sample's queries are drawn (`--sample`): a registry, one function per method.

- `random`: `n` of the queries uniformly without replacement (Python's `random.Random(seed).sample`).
- `stratified`: the queries cut into `--strata` strata by the judge's uncertainty on them (quantiles of the sum of
  p(1 - p) over a query's holes, `hiera_dspy.conclude.strata`), `n` allocated proportionally (the leftover queries
  to strata at random, so every query's chance of being drawn is n / N; `n` >= the strata), each stratum's share
  drawn uniformly without replacement, and the whole sample shuffled (so a person who labels it in order and stops
  part-way leaves a random part, not the low strata, decided). With equal chances the sample is self-weighting: the
  PPI estimator and its simple-random-sample variance stay valid and are conservative (Cochran, *Sampling
  Techniques*, 1977, ch. 5). It needs the machine's judgments of the holes, so `eval.holes` draws it after judging.
- `active`: queries drawn one at a time, each with probability growing with the judge's uncertainty about it
  (Zrnic and Candes, "Active statistical inference", ICML 2024): the weight of a query is the square root of the sum
  of p(1 - p) over its holes (the standard deviation of its relevant count under the judge's probabilities), and a
  draw's probability is half in proportion to the weights of the queries left and half spread evenly over them
  (`hiera_dspy.conclude.sequence.probabilities`: the floor lets every query be drawn). The estimates weight each
  drawn query by the inverse of its probability (Des Raj's estimator, `hiera_dspy.conclude.sequence`), so the
  weights and each draw's probability are kept with the sample. Drawn after judging, like `stratified`.

A method is a function of a `Draw` returning (the queries in sample order, each one's stratum or None); a new one is
one function and one line in `DRAWS`.

Example:
    >>> run_draw("stratified", Draw(["a", "b", "c", "d"], 2, 0, 2, lambda: [0.3, 0.0, 0.2, 0.1]))
    (['c', 'd'], [1, 0])
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hiera_dspy.conclude.sequence import FLOOR, probabilities
from hiera_dspy.conclude.strata import allocate, strata_of
from hiera_dspy.errors import HieraError
from hiera_dspy.registry import Entry, Registry, first_line

DEFAULT_STRATA = 4


@dataclass(frozen=True)
class Draw:
    """What a draw is given: the queries, how many to draw, the seed, the number of strata, and a function that
    returns each query's uncertainty (in `query_ids` order; None when no judgment exists yet)."""
    query_ids: Sequence[str]
    n: int
    seed: int
    strata: int = DEFAULT_STRATA
    uncertainty: Callable[[], Sequence[float]] | None = None


def draw(query_ids: Sequence[str], n: int, seed: int) -> list[str]:
    """`n` of the queries uniformly at random without replacement (Python's `random.Random(seed).sample`)."""
    return random.Random(seed).sample(list(query_ids), n)


def draw_stratified(query_ids: Sequence[str], n: int, seed: int, uncertainty: Sequence[float],
                    strata: int = DEFAULT_STRATA) -> tuple[list[str], list[int]]:
    """A proportionally allocated stratified sample of `n` queries (strata: `strata` quantiles of `uncertainty`),
    shuffled; returns (queries in sample order, each one's stratum, 0 = least uncertain)."""
    if len(uncertainty) != len(query_ids):
        raise HieraError(f"{len(uncertainty)} uncertainties for {len(query_ids)} queries")
    rng, ids = random.Random(seed), list(query_ids)
    groups = strata_of(uncertainty, strata)
    picked = [(ids[i], h) for h, (group, k) in enumerate(zip(groups, allocate([len(g) for g in groups], n, rng)))
              for i in rng.sample(sorted(group.tolist()), int(k))]
    rng.shuffle(picked)
    return [q for q, _ in picked], [h for _, h in picked]


def active_weights(uncertainty: Iterable[float]) -> list[float]:
    """The active draw's weight of each query: the square root of its uncertainty (the standard deviation of its
    relevant count under the judge's probabilities, Zrnic and Candes's optimal sampling rule)."""
    return [float(np.sqrt(max(float(u), 0.0))) for u in uncertainty]


def draw_active(query_ids: Sequence[str], n: int, seed: int, weights: Sequence[float],
                floor: float = FLOOR) -> tuple[list[str], list[float]]:
    """`n` queries drawn one at a time without replacement, each draw with `probabilities(weights, left, floor)`
    (seeded: numpy's generator); returns (queries in draw order, each one's probability when it was drawn)."""
    if len(weights) != len(query_ids):
        raise ValueError(f"{len(weights)} weights for {len(query_ids)} queries")
    rng = np.random.default_rng(seed)
    left = np.ones(len(query_ids), dtype=bool)
    order, probs = [], []
    for _ in range(n):
        q = probabilities(weights, left, floor)
        i = int(rng.choice(len(q), p=q / q.sum()))
        order.append(i)
        probs.append(float(q[i]))
        left[i] = False
    return [query_ids[i] for i in order], probs


def _random(d: Draw) -> tuple[list[str], None]:
    """uniformly over the queries (the default)"""
    return draw(d.query_ids, d.n, d.seed), None


def check_stratified(n: int, strata: int) -> None:
    """HieraError unless a stratified sample of `n` over `strata` strata can be drawn (known before any judging)."""
    if strata < 1:
        raise HieraError(f"--strata {strata}: give at least 1 stratum (default {DEFAULT_STRATA})")
    if n < strata:
        raise HieraError(f"--sample stratified over {strata} strata needs at least {strata} sampled queries (one "
                         f"per stratum: a stratum allocated none could never be drawn, and the estimate would miss "
                         f"it); {n} asked: ask for more, or give --strata {n} or fewer")


def _stratified(d: Draw) -> tuple[list[str], list[int]]:
    """proportionally over strata of the judge's uncertainty per query, drawn after judging"""
    check_stratified(d.n, d.strata)
    if d.uncertainty is None:
        raise HieraError("--sample stratified needs the machine's judgments of the holes (its strata are the judge's "
                         "uncertainty per query): run the eval.holes command that judges them, with --human-sample "
                         "and --sample stratified; it draws the sample after judging")
    return draw_stratified(d.query_ids, d.n, d.seed, list(d.uncertainty()), d.strata)


def _active(d: Draw) -> tuple[list[str], None]:
    """one at a time, with probability growing with the judge's uncertainty (half of it even), drawn after judging"""
    if d.uncertainty is None:
        raise HieraError("--sample active needs the machine's judgments of the holes (its probabilities follow the "
                         "judge's uncertainty per query): run the eval.holes command that judges them, with "
                         "--human-sample and --sample active; it draws the sample after judging")
    return draw_active(d.query_ids, d.n, d.seed, active_weights(list(d.uncertainty())))[0], None


# method -> function(Draw) -> (queries in sample order, stratum of each or None)
DRAWS: dict[str, Callable[[Draw], tuple[list[str], list[int] | None]]] = {"random": _random,
                                                                          "stratified": _stratified,
                                                                          "active": _active}


# the draws as a registry (hiera_dspy.registry), read from DRAWS: a line there is a draw here
DRAW_REGISTRY = Registry("sample draw", lambda: {name: Entry(name, first_line(draw.__doc__), loader=draw)
                                                 for name, draw in DRAWS.items()})


def run_draw(method: str, d: Draw) -> tuple[list[str], list[int] | None]:
    """Draw with `method` (a key of `DRAWS`); HieraError for an unknown one."""
    if method not in DRAWS:
        raise HieraError(f"--sample {method!r}: give one of {', '.join(DRAWS)}")
    return DRAWS[method](d)
