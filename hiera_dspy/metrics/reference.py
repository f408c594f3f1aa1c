"""Numbers a newcomer can read: n, Cohen's kappa with its bootstrap 95% CI, and the learned scorer `embed-lr` (no LM
call) on the same pairs, saying what it was fitted on, as one line under a run's summary.

    kappa 0.412 [95% CI 0.305, 0.517] on n=300; embed-lr (fitted on train, 300 pairs) on the same pairs: 0.707
    [0.622, 0.786]; McNemar vs embed-lr b=12 c=40 p=0.000

The baseline is never scored on a pair it was fitted on: it is fitted on the dataset's train split, or, where the
evaluated pairs are among the train pairs (a labelled file evaluated with `--split all`), cross-fitted by query on
them (`embed-lr (5-fold by query on these pairs)`); where neither can be done (too few queries, one label) the line
says why it has no reference. metrics.json's `reference` holds the same (`fitted` or `left_out`).

`ReferenceScorer` holds the fitted embed-lr of one dataset: a command builds one and passes it to every summary line it
prints (a compile's "before" and "after" lines share one fit). $HIERA_REFERENCE=none skips the reference (the scorer's
embeddings take ~10 s to fit on a quiet 2-core machine); $HIERA_REFERENCE_EMBEDDER picks its embedder (default
"auto": MiniLM when installed, else lexical features).
"""

from __future__ import annotations

import math
import sys
from typing import NamedTuple

from hiera_dspy import settings
from hiera_dspy.metrics.classification import bootstrap_ci, bootstrap_cis, classification_metrics, final_label
from hiera_dspy.metrics.numbers import with_ci
from hiera_dspy.metrics.significance import mcnemar


def kappa_with_ci(gold: list[str], pred: list[str | None], labels: list[str]) -> tuple[int, float | None, tuple]:
    """(n judged, kappa, (low, high)) with a 1,000-resample percentile bootstrap, seed 42."""
    m = classification_metrics(gold, pred, labels)
    return m["n"], m["kappa"], bootstrap_ci(gold, pred, labels, "kappa")


FOLDS = 5  # the cross-fitted reference's folds by query

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


class Baseline(NamedTuple):
    """embed-lr's labels for the evaluated pairs and what it is (`fitted`), or None and why it is left out."""

    labels: list[str] | None
    fitted: str


def pair_key(pair) -> tuple[str, str, str]:
    """A pair as its texts: the same (query, item) read from two files under other ids is the same pair."""
    return (pair.query, pair.item_title, pair.item_text)


def among(train, pairs) -> list:
    """The pairs of `train` that are among `pairs`, by id or by their texts (`pair_key`)."""
    ids, keys = {p.id for p in pairs}, {pair_key(p) for p in pairs}
    return [p for p in train if p.id in ids or pair_key(p) in keys]


def fitted_on_train(train, pairs) -> str:
    """What a model fitted on `train` is, judged on `pairs`: `fitted on train, 300 pairs`, and where some of them are
    among `pairs`, how many (its scores on those are in-sample)."""
    inside = len(among(train, pairs))
    return f"fitted on train, {len(train):,} pairs" + (f", {inside:,} of them among the {len(pairs):,} judged: "
                                                       "in-sample there" if inside else "")


class ReferenceScorer:
    """embed-lr on one dataset: fitted on its train split (at the first `baseline` call, kept for the next ones),
    or, where the evaluated pairs are among its train pairs (a labelled file evaluated with `--split all`),
    cross-fitted by query on the evaluated pairs: `folds` query-grouped folds, each scored by a model fitted on the
    other folds and the train pairs that are not evaluated. It never scores a pair it was fitted on.

    `embedder` defaults to $HIERA_REFERENCE_EMBEDDER, read when the scorer is fitted.
    """

    def __init__(self, dataset, embedder: str | None = None, folds: int = FOLDS):
        self.dataset = dataset
        self.embedder = embedder
        self.folds = folds
        self._scorer = None
        self._crossed: dict[tuple[str, ...], Baseline] = {}  # the evaluated pairs' ids -> their cross-fitted labels

    def labels(self, pairs) -> list[str] | None:
        """embed-lr's labels for `pairs` (`baseline`), or None."""
        found = self.baseline(pairs)
        return found.labels if found is not None else None

    def baseline(self, pairs) -> Baseline | None:
        """embed-lr's labels for `pairs` and what it is; None without a labelled train split or when the reference
        is turned off; labels None (and why) where it cannot be fitted without the evaluated pairs."""
        scheme = self.dataset.scheme
        train = [p for p in self.dataset.splits.get("train") or () if p.label in scheme.labels]
        if not settings.reference_enabled() or not train:
            return None
        pairs = list(pairs)
        inside = among(train, pairs)
        if not inside:
            if self._scorer is None:
                self._scorer = self._fit(train)
            return Baseline(self._scorer.predict_many(pairs), fitted_on_train(train, pairs))
        key = tuple(p.id for p in pairs)
        if key not in self._crossed:
            skip = {id(p) for p in inside}
            self._crossed[key] = self._cross_fitted(pairs, [p for p in train if id(p) not in skip])
        return self._crossed[key]

    def _cross_fitted(self, pairs: list, rest: list) -> Baseline:
        """`pairs` scored fold by fold (folds by query), each fold by embed-lr fitted on the other folds' labelled
        pairs and `rest`."""
        from sklearn.model_selection import GroupKFold

        labels = self.dataset.scheme.labels
        groups = [p.query_id or p.query for p in pairs]
        n_queries = len(set(groups))
        if n_queries < self.folds:
            return Baseline(None, f"these pairs are among its train pairs and span {n_queries} queries, too few "
                                  f"for {self.folds} folds by query")
        out: list[str] = [""] * len(pairs)
        for fit_rows, held in GroupKFold(n_splits=self.folds).split(pairs, groups=groups):
            fit = [pairs[i] for i in fit_rows if pairs[i].label in labels] + rest
            if len({p.label for p in fit}) < 2:
                return Baseline(None, f"these pairs are among its train pairs and a fold of {self.folds} by query "
                                      "leaves one label to fit on")
            for i, label in zip(held, self._fit(fit).predict_many([pairs[i] for i in held])):
                out[i] = label
        beside = f", with {len(rest):,} other train pairs" if rest else ""
        return Baseline(out, f"{self.folds}-fold by query on these pairs{beside}")

    def _fit(self, pairs: list):
        from hiera_dspy.signals import RelevanceScorer

        embedder = self.embedder or settings.reference_embedder()
        scorer = RelevanceScorer(self.dataset.scheme, embedder=None if embedder == "lexical" else embedder)
        scorer.fit(pairs)
        return scorer


class Summary(NamedTuple):
    """A run's one-line summary and its reference for metrics.json (None without one): `method`, `fitted` (what it
    is) and its kappa, CI and McNemar test, or `left_out` (why)."""

    line: str
    reference: dict | None


def summary_line(rows: list[dict], labels: list[str], reference: ReferenceScorer | None = None, pairs=None,
                 method: str = "", binary_from: int | None = None) -> str:
    """The one-line summary (`summarize`)."""
    return summarize(rows, labels, reference, pairs, method, binary_from).line


def summarize(rows: list[dict], labels: list[str], reference: ReferenceScorer | None = None, pairs=None,
              method: str = "", binary_from: int | None = None) -> Summary:
    """The one-line summary: n and kappa with CI (with `binary_from`, the scheme's binary cut: binary kappa and
    Krippendorff's alpha too), plus `reference` (embed-lr) on the same pairs, saying what it was fitted on."""
    rows = [r for r in rows if r.get("gold") in labels]  # unlabelled pairs (eval.label, holes) have nothing to score
    if not rows:
        return Summary("no gold labels among these pairs: nothing to score", None)
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
        return Summary(line, None)
    judged = [r for r in rows if r["id"] in by_id]
    try:
        found = reference.baseline([by_id[r["id"]] for r in judged])
    except Exception as exc:  # noqa: BLE001 - the reference is a courtesy: never fail a finished run over it
        print(f"embed-lr reference unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return Summary(line, None)
    if found is None:
        return Summary(line, None)
    if found.labels is None:
        return Summary(f"{line}; no embed-lr reference: {found.fitted}", {"method": "embed-lr",
                                                                            "left_out": found.fitted})
    g = [r["gold"] for r in judged]  # every pair, as the run's own line: a judgment without a label is wrong
    _, ref_kappa, ref_ci = kappa_with_ci(g, found.labels, labels)
    test = mcnemar(g, found.labels, [final_label(r) for r in judged])
    part = (f"{line}; {describe(found)} on the same pairs: {with_ci(ref_kappa, ref_ci, **KAPPA_CI)}; "
            f"McNemar vs embed-lr b={test['b']} c={test['c']} p={test['p_value']:.3f}")
    return Summary(part, {"method": "embed-lr", "fitted": found.fitted, "kappa": ref_kappa, "kappa_ci": list(ref_ci),
                          "mcnemar": {"b": test["b"], "c": test["c"], "p_value": test["p_value"]}})


def describe(found: Baseline) -> str:
    """The reference as the lines name it: `embed-lr (fitted on train, 300 pairs)`."""
    return f"embed-lr ({found.fitted})"
