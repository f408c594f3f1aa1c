"""Classification metrics and percentile-bootstrap CIs for relevance judgments (pure functions): the library writes
every run's metrics.json with them; the reports import them from here.

Every pair is scored: a judgment without a label (an error, an escalation with no human decision) is a wrong
prediction of the extra class "(no label)" (`hiera_dspy.metrics.agreement`). `coverage` says what share got a label, and
`answered_only` holds the same metrics over the labelled pairs alone (a view that flatters a method that fails often).
"""
from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np

from hiera_dspy.errors import HieraError
from hiera_dspy.metrics.agreement import (
    NO_LABEL,
    binary_confusion,
    cohen_kappa,
    confusion,
    ordinal_alpha,
    ordinal_alpha_batch,
    quadratic_kappa,
)
from hiera_dspy.records import Judgment, as_judgment

METRICS = ("accuracy", "macro_f1", "kappa", "balanced_accuracy", "weighted_kappa")  # weighted: quadratic, graded
# the field's agreement measures beside them: Cohen's kappa on the scheme's binary view (`binary_from`, the index of
# its lowest relevant label) and Krippendorff's alpha, ordinal (the krippendorff package; over the labelled pairs)
AGREEMENT = ("binary_kappa", "krippendorff_alpha")


def _nan_to_none(x) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def final_label(row: Judgment | dict) -> str | None:
    """A judgment's label for the metrics: a recorded human decision (DREAM escalations) over the automatic one."""
    return as_judgment(row).final_label


NON_LM_ROLES = {"scorer", "knowledge"}  # accounted steps that never call an LM


def reached_llm(row: Judgment | dict) -> bool:
    """Whether the judgment asked an LM anything: an LM call, or a step of an LM role (a call DSPy's cache answered
    counts: the pair was sent to the LLM part)."""
    j = as_judgment(row)
    return j.lm_calls > 0 or any(step.role not in NON_LM_ROLES for step in j.steps)


def cost_columns(rows: list[Judgment | dict]) -> dict:
    """Cost, latency and workflow columns per judgment, one definition for every report.

    Averages and percentiles (numpy's linear interpolation) run over the rows that finished without an error,
    escalated ones included (their debate was paid for); `tokens_total` sums every row, failed ones included.
    """
    rows = [as_judgment(r) for r in rows]
    done = [r for r in rows if not r.error]
    secs = [float(r.seconds) for r in done if r.seconds is not None]
    deleg = [r.delegated for r in done if r.delegated is not None]
    roles = sorted({role for r in done for role in r.tokens_by_role})

    def mean(xs):
        return float(np.mean(xs)) if len(xs) else None

    return {
        "tokens_per_judgment": mean([r.tokens for r in done]),
        "lm_calls_per_judgment": mean([r.lm_calls for r in done]),
        "tokens_by_role": {k: mean([r.tokens_by_role.get(k, 0) for r in done]) for k in roles},
        "tokens_total": int(sum(r.tokens for r in rows)),
        "seconds_per_judgment": mean(secs),
        "seconds_p50": float(np.percentile(secs, 50)) if secs else None,
        "seconds_p95": float(np.percentile(secs, 95)) if secs else None,
        "delegation_rate": mean(deleg),
        "llm_share": mean([reached_llm(r) for r in done]),  # a cascade's share of pairs sent to an LLM
        "errors": sum(1 for r in rows if r.error),
        "escalations": sum(1 for r in rows if r.escalated),
    }


def run_metrics(rows: list[Judgment | dict], labels: list[str], binary_from: int | None = None) -> dict:
    """metrics.json content: metrics over every pair of the split (a judgment without a label counts as wrong;
    `coverage` and the `answered_only` view beside) plus cost columns per judgment and the failure counts."""
    rows = [as_judgment(r) for r in rows]
    gold = [r for r in rows if r.gold is not None]  # unlabelled pairs (a labelling run) have nothing to score
    metrics = classification_metrics([r.gold for r in gold], [r.final_label for r in gold], labels, binary_from)
    metrics["gold_pairs"] = len(gold)
    metrics.update(cost_columns(rows))
    metrics.update({
        "pairs": len(rows),
        "human_labels": sum(1 for r in rows if r.human_label),
        "parse_recovered": sum(1 for r in rows if not r.error and r.fields.get("parse_recovered")),
        "truncated": sum(1 for r in rows if r.fields.get("truncated")),  # a pair field cut to fit a prompt
    })
    metrics.update(degraded_counts(rows))
    return metrics


def degraded_counts(rows: list[Judgment | dict]) -> dict:
    """`degraded`: judgments with a label that had a step default some of its outputs; `degraded_steps`: per step."""
    done = [j for j in map(as_judgment, rows) if not j.error]
    steps = Counter(step for j in done for step in j.fields.get("degraded") or [])
    return {"degraded": sum(1 for j in done if j.fields.get("degraded")),
            "degraded_steps": dict(sorted(steps.items()))}


def classification_metrics(gold: list[str], pred: list[str | None], labels: list[str],
                           binary_from: int | None = None) -> dict:
    """Accuracy, macro-F1, Cohen's kappa and balanced accuracy over every pair, `coverage` beside them.

    A None prediction counts as wrong: in kappa as the extra class "(no label)", in macro-F1 and balanced accuracy
    as a miss of its gold label (macro-F1 averages the scheme's labels occurring in gold or in a prediction; absent
    ones are undefined, not 0). `confusion` has rows = gold labels, columns = labels + "(no label)".
    `answered_only` is the same over the labelled pairs. Undefined values (no pairs, kappa at chance agreement 1)
    are None. With `binary_from` (the scheme's `binary_from`, default 1 for two labels) `binary_kappa` is Cohen's kappa
    on the binary view and `binary_confusion` its 2 x 3 counts; `krippendorff_alpha` is ordinal, over the labelled
    pairs (`hiera_dspy.metrics.agreement.ordinal_alpha`).
    """
    return confusion_metrics(confusion(gold, pred, labels), labels, binary_from)


def confusion_metrics(cm: np.ndarray, labels: list[str], binary_from: int | None = None) -> dict:
    """`classification_metrics` from its K x (K+1) confusion counts (rows gold, columns labels + "(no label)"): what a
    one-pass tally over a million rows computes without keeping the labels (hiera_dspy/runs/tally.py)."""
    n, answered = int(cm.sum()), int(cm[:, :-1].sum())
    out = {"n": n, "answered": answered, "unlabelled": n - answered, "coverage": answered / n if n else None,
           "labels": list(labels)}
    out |= _point(cm)
    out |= agreement_point(cm, binary_from)
    out["confusion"] = cm.tolist()
    out["confusion_columns"] = [*labels, NO_LABEL]
    out["answered_only"] = {"n": answered, **_point(cm[:, :-1])}
    return out


def agreement_point(cm: np.ndarray, binary_from: int | None = None) -> dict:
    """`binary_kappa` (None without a cut; a two-label scheme's cut is 1), its `binary_from` and `binary_confusion`,
    and `krippendorff_alpha` (ordinal) of one K x (K+1) confusion matrix; undefined values are None."""
    cut = binary_from if binary_from is not None else (1 if cm.shape[0] == 2 else None)
    out = {name: _nan_to_none(float(agreement_values(cm, name, cut))) if name == "krippendorff_alpha" or cut else None
           for name in AGREEMENT}
    out["binary_from"] = cut
    out["binary_confusion"] = binary_confusion(cm, cut).tolist() if cut else None
    return out


def agreement_values(cms, name: str, binary_from: int | None) -> np.ndarray:
    """An `AGREEMENT` measure of confusion matrices shaped (..., K, K+1); NaN where undefined."""
    cms = np.asarray(cms)
    if name == "binary_kappa":
        return cohen_kappa(binary_confusion(cms, binary_from))
    if cms.ndim == 2:
        return np.asarray(ordinal_alpha(cms))  # one matrix: the krippendorff package's own computation
    return ordinal_alpha_batch(cms)  # bootstrap resamples: the same formula, vectorised (a test holds them equal)


def _point(cm: np.ndarray) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices in nanmean
        values = metrics_from_confusion(cm)
    return {name: _nan_to_none(float(values[name])) for name in METRICS}


def metrics_from_confusion(cm) -> dict[str, np.ndarray]:
    """Vectorised metrics from confusion matrices shaped (..., K, K+j): rows gold labels, columns the same labels then
    j >= 0 prediction-only classes ("(no label)"); NaN where undefined."""
    cm = np.asarray(cm, dtype=float)
    k = cm.shape[-2]
    n = cm.sum(axis=(-2, -1))
    tp = np.diagonal(cm[..., :, :k], axis1=-2, axis2=-1)
    rows, cols = cm.sum(axis=-1), cm[..., :, :k].sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = 2 * tp / (rows + cols)  # NaN for labels absent from both gold and predictions
        recall = tp / rows  # NaN for labels absent from gold
        return {
            "accuracy": tp.sum(axis=-1) / n,
            "macro_f1": np.nanmean(f1, axis=-1) if f1.size else f1,
            "kappa": cohen_kappa(cm),
            "balanced_accuracy": np.nanmean(recall, axis=-1),
            "weighted_kappa": quadratic_kappa(cm),
        }


def bootstrap_ci(
    gold: list[str],
    pred: list[str | None],
    labels: list[str],
    metric_name: str,
    n_resamples: int = 1000,
    seed: int = 42,
    alpha: float = 0.05,
    binary_from: int | None = None,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of ``metric_name`` (one of METRICS or AGREEMENT; `binary_kappa` needs `binary_from`)
    over every (gold, pred) pair, a None prediction scored as in `classification_metrics` (wrong, class
    "(no label)").

    Deterministic for a given seed (numpy Generator). Resamples where the metric is undefined are dropped;
    returns (None, None) when nothing is defined.
    """
    return bootstrap_cis(gold, pred, labels, (metric_name,), n_resamples, seed, alpha, binary_from)[metric_name]


def bootstrap_cis(gold: list[str], pred: list[str | None], labels: list[str], names, n_resamples: int = 1000,
                  seed: int = 42, alpha: float = 0.05, binary_from: int | None = None,
                  groups: list | None = None) -> dict:
    """`bootstrap_ci` of several metrics from one set of resamples (the same draws, so the same intervals as one
    call each, at the cost of one): name -> (low, high). With `groups` (one key a pair, e.g. its query id) whole
    groups are resampled (a cluster bootstrap: pairs of one query are not independent), as TREC reports its CIs."""
    unknown = [name for name in names if name not in METRICS + AGREEMENT]
    if unknown:
        raise HieraError(f"unknown metric {unknown[0]!r}; expected one of {METRICS + AGREEMENT}")
    if "binary_kappa" in names and binary_from is None:
        raise HieraError("binary_kappa needs binary_from, the index of the scheme's lowest relevant label")
    confusion(gold, pred, labels)  # validates lengths and labels
    if not gold:
        return dict.fromkeys(names, (None, None))
    index = {lab: i for i, lab in enumerate(labels)}
    k, n = len(labels), len(gold)
    cells = k * (k + 1)
    codes = np.array([index[g] * (k + 1) + (k if p is None else index[p]) for g, p in zip(gold, pred)])
    rng = np.random.default_rng(seed)
    if groups is not None:
        cms = _group_resamples(codes, groups, cells, n_resamples, rng).reshape(n_resamples, k, k + 1)
    else:
        idx = rng.integers(0, n, size=(n_resamples, n))
        offsets = (np.arange(n_resamples) * cells)[:, None]
        cms = np.bincount((codes[idx] + offsets).ravel(), minlength=n_resamples * cells)
        cms = cms.reshape(n_resamples, k, k + 1)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices in nanmean
        point = metrics_from_confusion(cms) if set(names) & set(METRICS) else {}
        for name in names:
            values = point[name] if name in METRICS else agreement_values(cms, name, binary_from)
            values = values[~np.isnan(values)]
            if values.size == 0:
                out[name] = (None, None)
                continue
            low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
            out[name] = (float(low), float(high))
    return out


def _group_resamples(codes: np.ndarray, groups: list, cells: int, n_resamples: int, rng) -> np.ndarray:
    """Confusion counts (n_resamples x cells) of resamples that draw whole groups with replacement: each group's
    counts, weighted by how often a resample drew it."""
    if len(groups) != len(codes):
        raise HieraError(f"groups: {len(groups)} keys for {len(codes)} pairs")
    _, group = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    n_groups = int(group.max()) + 1
    per_group = np.bincount(group * cells + codes, minlength=n_groups * cells).reshape(n_groups, cells)
    drawn = rng.integers(0, n_groups, size=(n_resamples, n_groups))
    weights = np.stack([np.bincount(row, minlength=n_groups) for row in drawn])
    return weights @ per_group
