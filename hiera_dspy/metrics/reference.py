"""Numbers a newcomer can read: n, Cohen's kappa with its bootstrap 95% CI, and the learned scorer `embed-lr` (no LM
call, fitted on the train split) on the same pairs, as one line under a run's summary.

    kappa 0.412 [95% CI 0.305, 0.517] on n=300; embed-lr on the same pairs: 0.707 [0.622, 0.786]; McNemar p=0.000

`ReferenceScorer` holds the fitted embed-lr of one dataset: a command builds one and passes it to every summary line it
prints (a compile's "before" and "after" lines share one fit). $HIERA_REFERENCE=none skips the reference (the scorer's
embeddings take ~10 s to fit on a quiet 2-core machine); $HIERA_REFERENCE_EMBEDDER picks its embedder (default
"auto": MiniLM when installed, else lexical features).
"""

from __future__ import annotations

import math
import sys

from hiera_dspy import settings
from hiera_dspy.metrics.classification import bootstrap_ci, bootstrap_cis, classification_metrics, final_label
from hiera_dspy.metrics.numbers import with_ci
from hiera_dspy.metrics.significance import mcnemar


def kappa_with_ci(gold: list[str], pred: list[str | None], labels: list[str]) -> tuple[int, float | None, tuple]:
    """(n judged, kappa, (low, high)) with a 1,000-resample percentile bootstrap, seed 42."""
    m = classification_metrics(gold, pred, labels)
    return m["n"], m["kappa"], bootstrap_ci(gold, pred, labels, "kappa")


KAPPA_CI = {"missing": "undefined", "label": "95% CI "}  # how the summary line writes a kappa and its CI


def agreement_cis(rows: list[dict], labels: list[str], binary_from: int | None = None,
                  query_of: dict | None = None) -> dict:
    """The field's agreement measures with their bootstrap 95% CIs (1,000 resamples over pairs, seed 42) for a run's
    metrics.json: `kappa_ci`, `krippendorff_alpha_ci`, and for a graded scheme `weighted_kappa_ci` and, with the
    scheme's `binary_from`, `binary_kappa_ci`. Over the rows with gold; a judgment without a label is wrong (alpha:
    not pairable). With `query_of` (pair id -> query id) `ci_by_query` holds the same over resampled queries (a
    cluster bootstrap, as TREC reports its intervals), when the rows span at least two queries."""
    rows = [r for r in rows if r.get("gold") in labels]
    gold, pred = [r["gold"] for r in rows], [final_label(r) for r in rows]
    names = ["kappa", "krippendorff_alpha"] + (["weighted_kappa"] if len(labels) > 2 else [])
    names += ["binary_kappa"] if len(labels) > 2 and binary_from is not None else []
    cis = bootstrap_cis(gold, pred, labels, names, binary_from=binary_from)  # one set of resamples for all
    out = {f"{name}_ci": list(ci) for name, ci in cis.items()}
    queries = [query_of.get(r["id"], r["id"]) for r in rows] if query_of else None
    if queries and len(set(queries)) > 1:
        by_query = bootstrap_cis(gold, pred, labels, names, binary_from=binary_from, groups=queries)
        out["ci_by_query"] = {name: list(ci) for name, ci in by_query.items()}
    return out


def field_part(gold: list[str], pred: list[str | None], labels: list[str], binary_from: int | None) -> str:
    """Binary kappa (graded schemes, at the scheme's cut) and Krippendorff's alpha (ordinal), each with its CI."""
    m = classification_metrics(gold, pred, labels, binary_from)
    graded = len(labels) > 2 and binary_from is not None
    names = ("binary_kappa", "krippendorff_alpha") if graded else ("krippendorff_alpha",)
    cis = bootstrap_cis(gold, pred, labels, names, binary_from=binary_from)
    part = ""
    if graded:
        binary = with_ci(m["binary_kappa"], cis["binary_kappa"], **KAPPA_CI)
        part += f"; binary kappa (>= {labels[binary_from]}) {binary}"
    return part + (f"; Krippendorff's alpha (ordinal) "
                   f"{with_ci(m['krippendorff_alpha'], cis['krippendorff_alpha'], **KAPPA_CI)}")


def graded_part(rows: list[dict], labels: list[str], by_id: dict) -> str:
    """For a graded scheme: the quadratic-weighted kappa with its CI and, where the pairs carry the source's graded
    value (`Pair.grade`, e.g. Home Depot's raters' mean on the 0 .. K-1 scale), the RMSE of the labels' grades against
    it (a judgment without a label has no grade: counted, not scored)."""
    gold, pred = [r["gold"] for r in rows], [final_label(r) for r in rows]
    weighted = classification_metrics(gold, pred, labels)["weighted_kappa"]
    ci = bootstrap_ci(gold, pred, labels, "weighted_kappa")
    part = f"; quadratic-weighted kappa {with_ci(weighted, ci, **KAPPA_CI)}"
    graded = [(labels.index(label), by_id[r["id"]].grade) for r, label in zip(rows, pred)
              if r["id"] in by_id and by_id[r["id"]].grade is not None and label in labels]
    if graded:
        rmse = math.sqrt(sum((a - b) ** 2 for a, b in graded) / len(graded))
        unlabelled = sum(1 for r, label in zip(rows, pred) if label not in labels and r["id"] in by_id)
        part += (f"; RMSE {rmse:.3f} against the source's graded value (0-{len(labels) - 1} scale, e.g. raters' mean) "
                 f"on {len(graded)} labelled pairs" + (f" ({unlabelled} without a label)" if unlabelled else ""))
    return part


class ReferenceScorer:
    """embed-lr on one dataset, fitted on its train split at the first `labels` call and kept for the next ones.

    `embedder` defaults to $HIERA_REFERENCE_EMBEDDER, read when the scorer is fitted.
    """

    def __init__(self, dataset, embedder: str | None = None):
        self.dataset = dataset
        self.embedder = embedder
        self._scorer = None

    def labels(self, pairs) -> list[str] | None:
        """embed-lr's labels for `pairs`, or None without a train split or when the reference is turned off."""
        if not settings.reference_enabled() or not self.dataset.splits.get("train"):
            return None
        if self._scorer is None:
            from hiera_dspy.signals import RelevanceScorer

            scheme, embedder = self.dataset.scheme, self.embedder or settings.reference_embedder()
            scorer = RelevanceScorer(scheme, embedder=None if embedder == "lexical" else embedder)
            scorer.fit([p for p in self.dataset.splits["train"] if p.label in scheme.labels])
            self._scorer = scorer
        return self._scorer.predict_many(list(pairs))


def summary_line(rows: list[dict], labels: list[str], reference: ReferenceScorer | None = None, pairs=None,
                 method: str = "", binary_from: int | None = None) -> str:
    """The one-line summary: n and kappa with CI (with `binary_from`, the scheme's binary cut: binary kappa and
    Krippendorff's alpha too), plus `reference` (embed-lr) on the same pairs when it has a train split to fit on."""
    rows = [r for r in rows if r.get("gold") in labels]  # unlabelled pairs (eval.label, holes) have nothing to score
    if not rows:
        return "no gold labels among these pairs: nothing to score"
    gold = [r["gold"] for r in rows]
    pred = [final_label(r) for r in rows]
    n, kappa, ci = kappa_with_ci(gold, pred, labels)
    line = f"kappa {with_ci(kappa, ci, **KAPPA_CI)} on n={n}"
    by_id = {p.id: p for p in pairs or ()}
    if len(labels) > 2:
        line += graded_part(rows, labels, by_id)
    if binary_from is not None:
        line += field_part(gold, pred, labels, binary_from)
    if reference is None or pairs is None or method == "embed-lr":
        return line
    judged = [r for r in rows if r["id"] in by_id]
    try:
        ref = reference.labels([by_id[r["id"]] for r in judged])
    except Exception as exc:  # noqa: BLE001 - the reference is a courtesy: never fail a finished run over it
        print(f"embed-lr reference unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return line
    if ref is None:
        return line
    g = [r["gold"] for r in judged]  # every pair, as the run's own line: a judgment without a label is wrong
    _, ref_kappa, ref_ci = kappa_with_ci(g, ref, labels)
    test = mcnemar(g, ref, [final_label(r) for r in judged])
    return (f"{line}; embed-lr on the same pairs: {with_ci(ref_kappa, ref_ci, **KAPPA_CI)}; "
            f"McNemar vs embed-lr b={test['b']} c={test['c']} p={test['p_value']:.3f}")
