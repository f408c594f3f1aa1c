"""Classification metrics and percentile-bootstrap CIs for relevance judgments (pure, no DSPy)."""
from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
)

METRICS = ("accuracy", "macro_f1", "kappa", "balanced_accuracy")


def _judged(gold, pred, labels):
    """Pairs with a non-None prediction; validates lengths and label membership."""
    if len(gold) != len(pred):
        raise ValueError(f"gold/pred length mismatch: {len(gold)} != {len(pred)}")
    known = set(labels)
    bad = {x for x in gold if x not in known} | {p for p in pred if p is not None and p not in known}
    if bad:
        raise ValueError(f"labels not in label set {list(labels)}: {sorted(map(str, bad))}")
    pairs = [(g, p) for g, p in zip(gold, pred) if p is not None]
    return [g for g, _ in pairs], [p for _, p in pairs]


def _nan_to_none(x) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def final_label(row: dict) -> str | None:
    """A judgment's label for the metrics: a recorded human decision (DREAM escalations) over the automatic one."""
    return row.get("human_label") or row.get("label")


NON_LM_ROLES = {"scorer", "knowledge"}  # accounted steps that never call an LM


def reached_llm(row: dict) -> bool:
    """Whether the judgment asked an LM anything: an LM call, or a step of an LM role (a call DSPy's cache answered
    counts: the pair was sent to the LLM part)."""
    return (row.get("lm_calls") or 0) > 0 or any(step.get("role") not in NON_LM_ROLES for step in row.get("steps") or [])


def cost_columns(rows: list[dict]) -> dict:
    """Cost, latency and workflow columns per judgment, one definition for every report.

    Averages and percentiles (numpy's linear interpolation) run over the rows that finished without an error,
    escalated ones included (their debate was paid for); `tokens_total` sums every row, failed ones included.
    """
    done = [r for r in rows if not r.get("error")]
    secs = [float(r["seconds"]) for r in done if r.get("seconds") is not None]
    deleg = [bool(r["delegated"]) for r in done if r.get("delegated") is not None]
    roles = sorted({role for r in done for role in (r.get("tokens_by_role") or {})})

    def mean(xs):
        return float(np.mean(xs)) if len(xs) else None

    return {
        "tokens_per_judgment": mean([r.get("tokens", 0) for r in done]),
        "lm_calls_per_judgment": mean([r.get("lm_calls", 0) for r in done]),
        "tokens_by_role": {k: mean([(r.get("tokens_by_role") or {}).get(k, 0) for r in done]) for k in roles},
        "tokens_total": int(sum(r.get("tokens", 0) or 0 for r in rows)),
        "seconds_per_judgment": mean(secs),
        "seconds_p50": float(np.percentile(secs, 50)) if secs else None,
        "seconds_p95": float(np.percentile(secs, 95)) if secs else None,
        "delegation_rate": mean(deleg),
        "llm_share": mean([reached_llm(r) for r in done]),  # a cascade's share of pairs sent to an LLM
        "errors": sum(1 for r in rows if r.get("error")),
        "escalations": sum(1 for r in rows if r.get("escalated")),
    }


def classification_metrics(gold: list[str], pred: list[str | None], labels: list[str]) -> dict:
    """Accuracy, macro-F1, Cohen's kappa, balanced accuracy and confusion over pairs with a prediction.

    None predictions (errors/escalations) are excluded and counted as ``unlabelled``.
    Macro-F1 averages over labels occurring in gold or pred (absent classes are undefined, not 0).
    Undefined values (n == 0, kappa when chance agreement is 1) are None.
    """
    g, p = _judged(gold, pred, labels)
    out = {"n": len(g), "unlabelled": len(gold) - len(g), "labels": list(labels)}
    if not g:
        k = len(labels)
        return out | {m: None for m in METRICS} | {"confusion": [[0] * k for _ in range(k)]}
    present = [lab for lab in labels if lab in set(g) | set(p)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # balanced_accuracy warns when pred has classes absent from gold
        out |= {
            "accuracy": float(accuracy_score(g, p)),
            "macro_f1": float(f1_score(g, p, labels=present, average="macro", zero_division=0)),
            "kappa": _nan_to_none(cohen_kappa_score(g, p, labels=labels)),
            "balanced_accuracy": float(balanced_accuracy_score(g, p)),
        }
    out["confusion"] = confusion_matrix(g, p, labels=labels).tolist()
    return out


def metrics_from_confusion(cm: np.ndarray) -> dict[str, np.ndarray]:
    """Vectorised metrics from confusion matrices of shape (..., K, K) (rows=gold); NaN where undefined."""
    cm = np.asarray(cm, dtype=float)
    n = cm.sum(axis=(-2, -1))
    tp = np.diagonal(cm, axis1=-2, axis2=-1)
    rows, cols = cm.sum(axis=-1), cm.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        po = tp.sum(axis=-1) / n
        pe = (rows * cols).sum(axis=-1) / n**2
        f1 = 2 * tp / (rows + cols)  # NaN for classes absent from both gold and pred
        recall = tp / rows  # NaN for classes absent from gold
        kappa = np.where(np.isclose(pe, 1.0), np.nan, (po - pe) / (1 - pe))
        return {
            "accuracy": po,
            "macro_f1": np.nanmean(f1, axis=-1) if f1.size else f1,
            "kappa": kappa,
            "balanced_accuracy": np.nanmean(recall, axis=-1),
        }


def bootstrap_ci(
    gold: list[str],
    pred: list[str | None],
    labels: list[str],
    metric_name: str,
    n_resamples: int = 1000,
    seed: int = 42,
    alpha: float = 0.05,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of ``metric_name`` over (gold, pred) pairs with a prediction.

    Deterministic for a given seed (numpy Generator). Resamples where the metric is undefined are dropped;
    returns (None, None) when nothing is defined.
    """
    if metric_name not in METRICS:
        raise ValueError(f"unknown metric {metric_name!r}; expected one of {METRICS}")
    g, p = _judged(gold, pred, labels)
    if not g:
        return (None, None)
    index = {lab: i for i, lab in enumerate(labels)}
    k, n = len(labels), len(g)
    codes = np.array([index[a] * k + index[b] for a, b in zip(g, p)])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    offsets = (np.arange(n_resamples) * k * k)[:, None]
    cms = np.bincount((codes[idx] + offsets).ravel(), minlength=n_resamples * k * k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices in nanmean
        values = metrics_from_confusion(cms.reshape(n_resamples, k, k))[metric_name]
    values = values[~np.isnan(values)]
    if values.size == 0:
        return (None, None)
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return (float(low), float(high))
