"""Agreement with gold labels: the confusion matrix, Cohen's kappa (plain, quadratic-weighted and on the binary
view) and Krippendorff's alpha (ordinal), one definition for the whole project.

Every pair counts. A judgment without a label (an error, an escalation nobody decided) is a prediction of the extra
class `NO_LABEL`: a column gold never takes, so it is always wrong, and in kappa it is one more class.
`hiera_dspy.metrics.classification` builds accuracy, macro-F1 and bootstrap CIs on these; the cascade's tau rule reads `cohen_kappa`.

Example:
    >>> cm = confusion(["A", "B", "B"], ["A", "B", None], ["A", "B"])
    >>> cm.tolist()
    [[1, 0, 0], [0, 1, 1]]
    >>> round(float(cohen_kappa(cm)), 3)
    0.5
"""

from __future__ import annotations

import krippendorff
import numpy as np

from hiera_dspy.errors import HieraError

NO_LABEL = "(no label)"


def confusion(gold: list[str], pred: list[str | None], labels: list[str]) -> np.ndarray:
    """K x (K+1) counts: rows gold labels, columns the same labels then `NO_LABEL` (a None prediction).

    Raises ValueError on a length mismatch or a label outside `labels`.
    """
    if len(gold) != len(pred):
        raise HieraError(f"gold/pred length mismatch: {len(gold)} != {len(pred)}")
    index = {label: i for i, label in enumerate(labels)}
    bad = {x for x in gold if x not in index} | {p for p in pred if p is not None and p not in index}
    if bad:
        raise HieraError(f"labels not in label set {list(labels)}: {sorted(map(str, bad))}")
    k = len(labels)
    cm = np.zeros((k, k + 1), dtype=int)
    for g, p in zip(gold, pred):
        cm[index[g], k if p is None else index[p]] += 1
    return cm


def cohen_kappa(cm) -> np.ndarray:
    """Cohen's kappa of confusion matrices shaped (..., K, K+j): rows gold classes, columns the same K classes in the
    same order, then j >= 0 classes only predictions take (`NO_LABEL`). NaN where undefined (no pairs, or chance
    agreement 1)."""
    cm = np.asarray(cm, dtype=float)
    k = cm.shape[-2]
    n = cm.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        po = np.trace(cm[..., :, :k], axis1=-2, axis2=-1) / n
        pe = (cm.sum(axis=-1) * cm[..., :, :k].sum(axis=-2)).sum(axis=-1) / n**2  # extra classes: gold margin 0
        return np.where(np.isclose(pe, 1.0) | (n == 0), np.nan, (po - pe) / (1 - pe))


def quadratic_kappa(cm) -> np.ndarray:
    """Quadratic-weighted Cohen's kappa (Cohen 1968; sklearn's `weights="quadratic"`) of confusion matrices shaped
    like `cohen_kappa`'s, the K classes in their order (least relevant first): disagreement weights
    ((i - j) / (K - 1))^2, and 1, the largest, for a prediction-only class (no label is as wrong as can be). Equal
    to `cohen_kappa` for two classes; NaN where undefined."""
    cm = np.asarray(cm, dtype=float)
    k, width = cm.shape[-2], cm.shape[-1]
    grades = np.arange(width, dtype=float)
    weights = ((grades[:k, None] - grades[None, :]) / max(k - 1, 1)) ** 2
    weights[:, k:] = 1.0
    n = cm.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = cm.sum(axis=-1)[..., :, None] * cm.sum(axis=-2)[..., None, :] / n[..., None, None]
        observed_d, expected_d = (weights * cm).sum(axis=(-2, -1)), (weights * expected).sum(axis=(-2, -1))
        return np.where(np.isclose(expected_d, 0.0) | (n == 0), np.nan, 1 - observed_d / expected_d)


def kappa_of_labels(gold: list[str], pred: list[str]) -> float:
    """Cohen's kappa of two label lists over the labels they hold; 0 (chance) where undefined, e.g. when gold and the
    predictions hold one and the same label (what a threshold search wants: such a cut is worth nothing)."""
    kappa = float(cohen_kappa(confusion(gold, pred, sorted(set(gold) | set(pred)))))
    return 0.0 if np.isnan(kappa) else kappa


def binary_confusion(cm, cut: int) -> np.ndarray:
    """Confusion matrices shaped (..., K, K+j) folded into the binary view (..., 2, 2+j): gold and predicted grades
    below `cut` become "not relevant", the others "relevant"; prediction-only classes stay as they are.

    Example:
        >>> binary_confusion([[3, 1, 0, 1], [0, 2, 2, 0], [1, 0, 4, 0]], 1).tolist()
        [[3, 1, 1], [1, 8, 0]]
    """
    cm = np.asarray(cm)
    k = cm.shape[-2]
    if not 0 < cut < k:
        raise HieraError(f"binary cut {cut} leaves no label on one side of {k} labels")
    rows = np.stack([cm[..., :cut, :].sum(axis=-2), cm[..., cut:, :].sum(axis=-2)], axis=-2)
    return np.concatenate([rows[..., :cut].sum(axis=-1, keepdims=True), rows[..., cut:k].sum(axis=-1, keepdims=True),
                           rows[..., k:]], axis=-1)


def ordinal_alpha(cm) -> float:
    """Krippendorff's alpha, ordinal metric (the `krippendorff` package), of a K x (K+j) confusion matrix: each pair
    is a unit coded by gold and by the judge, grades 0 .. K-1 in label order. A pair without a label has one value
    only and is not pairable (Krippendorff's rule): alpha is over the labelled pairs. NaN where undefined (fewer than
    two labelled pairs, or one grade only).

    Example:
        >>> round(ordinal_alpha([[2, 1, 0, 0], [0, 2, 0, 0], [0, 1, 2, 1]]), 3)
        0.812
    """
    cm = np.asarray(cm, dtype=int)
    k = cm.shape[0]
    answered = cm[:, :k]
    gold, pred = np.nonzero(answered)
    counts = answered[gold, pred]
    n = int(counts.sum())
    if n < 2 or len(set(gold.tolist()) | set(pred.tolist())) < 2:
        return float("nan")
    units = np.zeros((n, k))
    rows = np.arange(n)
    units[rows, np.repeat(gold, counts)] += 1
    units[rows, np.repeat(pred, counts)] += 1
    return float(krippendorff.alpha(value_counts=units, value_domain=list(range(k)), level_of_measurement="ordinal"))


def ordinal_alpha_batch(cms) -> np.ndarray:
    """`ordinal_alpha` of many confusion matrices shaped (..., K, K+j) at once, for bootstrap resamples of a large
    run (the package's per-unit path costs seconds a resample at a million pairs). Krippendorff's formula for two
    coders: the coincidences o = A + A^T of the answered counts A, the grade totals n_c, n = sum n_c, the ordinal
    distance d_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2, and alpha = 1 - (n - 1) sum o d / sum n_c n_k d. Equal to
    the package's value (a test holds them so); NaN where undefined."""
    cms = np.asarray(cms, dtype=float)
    k = cms.shape[-2]
    a = cms[..., :, :k]
    o = a + np.swapaxes(a, -1, -2)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    cum = np.cumsum(n_c, axis=-1)
    lo, hi = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(np.arange(k), np.arange(k))
    between = cum[..., hi] - cum[..., lo] + n_c[..., lo]  # sum of n_g for g from min(c, k) to max(c, k)
    d = (between - (n_c[..., :, None] + n_c[..., None, :]) / 2) ** 2
    observed = (o * d).sum(axis=(-2, -1))
    expected = (n_c[..., :, None] * n_c[..., None, :] * d).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((expected == 0) | (n < 4), np.nan, 1 - (n - 1) * observed / expected)
