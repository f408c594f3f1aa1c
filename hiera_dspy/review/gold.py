"""A person's decisions as gold train pairs: what `optimize.compile --train-from RUN_ID` learns from.

Only decisions count: the pairs a person decided in a labelling run (`eval.review`, `eval.escalations --decisions`; the
latest decision per pair, `hiera_dspy.review.decisions`), with the decided label. The machine's own labels are never
used as gold. Merged into a train split, a decision wins over the split's label of the same pair (same query id and
item id, else the same pair id).

Example:
    >>> taught = decided_pairs(RunStore("runs/store.sqlite"), "3e21cc4c3621")      # doctest: +SKIP
    >>> train = with_decisions(dataset.splits["train"], taught)                    # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from hiera_dspy.errors import HieraError
from hiera_dspy.records import Pair
from hiera_dspy.review.decisions import DecisionLog
from hiera_dspy.store.run_settings import read_settings
from hiera_dspy.store.run_store import RunStore


class NoDecisions(HieraError):
    """A run named by --train-from has nothing a person decided (or is not a labelling run)."""


def decided_pairs(store: RunStore, run_id: str) -> list[Pair]:
    """The pairs a person decided in the labelling run `run_id`, labelled with the latest decision, in run order.

    Raises NoDecisions for an unknown run, a run that is not a labelling run, or a run with no decision."""
    settings = read_settings(store, run_id)
    if settings is None:
        raise NoDecisions(f"--train-from {run_id}: no such run in {store.path}; pass --store if it lives elsewhere")
    if settings.labelling is None:
        raise NoDecisions(f"--train-from {run_id}: not a labelling run (eval.label or eval.holes); decisions to learn "
                          "from are made on those runs with python -m eval.review --run RUN_ID")
    out = settings.labelling.out
    decisions = DecisionLog(store.path).latest(run_id)
    if not decisions:
        raise NoDecisions(f"--train-from {run_id}: the run has no decisions yet; decide pairs first with python -m "
                          f"eval.review --run {run_id} (or eval.escalations --run {run_id} --decisions FILE)")
    pairs = _pairs_file(Path(out))
    missing = sorted(set(decisions) - set(pairs))
    if missing:
        raise NoDecisions(f"--train-from {run_id}: {len(missing)} decided pair(s) (e.g. {missing[0]!r}) are not in "
                          f"{Path(out) / 'pairs.jsonl'}; the run's output folder was changed or moved")
    order = {r["id"]: i for i, r in enumerate(store.rows(run_id))}
    return [_pair(pairs[pid], d["label"]) for pid, d in sorted(decisions.items(),
                                                                key=lambda kv: (order.get(kv[0], len(order)), kv[0]))]


def with_decisions(train: Sequence[Pair], decided: Sequence[Pair]) -> list[Pair]:
    """The decided pairs first (so a prompt optimizer's first-N train examples include them), then the `train` pairs
    no decision names (a decision replaces the train pair of the same query id + item id, else id); a later decision
    of the same pair wins over an earlier one."""
    latest: dict[tuple, Pair] = {}
    for p in decided:
        latest[_key(p)] = p
    return list(latest.values()) + [p for p in train if _key(p) not in latest]


def _key(p: Pair) -> tuple:
    return ("qi", p.query_id, p.item_id) if p.query_id and p.item_id else ("id", p.id)


def _pairs_file(out: Path) -> dict[str, dict]:
    path = out / "pairs.jsonl"
    if not path.is_file():
        raise NoDecisions(f"{path} is missing: the labelling run's output folder was moved or deleted")
    return {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r}


def _pair(row: dict, label: str) -> Pair:
    return Pair(row["id"], row["query"], row["item_title"], row.get("item_text") or "", label,
                row.get("query_id") or "", row.get("item_id") or "")
