"""Label probabilities from token log-probabilities (Zhuang et al., NAACL 2024, arXiv 2310.14122).

A single-call judge that runs on an endpoint returning token log-probabilities (llama.cpp in-process, or an
OpenAI-compatible server with `logprobs`/`top_logprobs`) gets a distribution over its scheme's labels instead of one
sampled label: at the token where the label's value starts, the alternatives the model weighed are mapped to the
labels they begin (labels must start with distinct tokens: true for every built-in scheme with Qwen's and OpenAI's
tokenizers), and the mass on label tokens is renormalised. The expected relevance (sum of grade x probability, grades
0..k-1 in scheme order) ranks pairs and lets thresholds tuned on dev place a 3-level scheme's cuts instead of argmax.

Example:
    >>> dist = label_distribution(pred.logprobs, ("Irrelevant", "Relevant"))        # doctest: +SKIP
    {'Irrelevant': 0.27, 'Relevant': 0.73}
    >>> expected_relevance(dist, ("Irrelevant", "Relevant"))                        # doctest: +SKIP
    0.73
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from hiera_dspy.errors import HieraError

TOP_LOGPROBS = 20  # alternatives per position (OpenAI's maximum); enough to cover every label of a 4-level scheme
PROB_CONFIG = {"logprobs": True, "top_logprobs": TOP_LOGPROBS}


def _get(obj: Any, key: str, default=None):
    return obj.get(key, default) if isinstance(obj, Mapping) else getattr(obj, key, default)


def _value_start(text: str, field: str) -> int | None:
    """Offset of the last value of `field` in a JSON answer ("label": "...") or ChatAdapter's [[ ## label ## ]]."""
    patterns = (rf'"{re.escape(field)}"\s*:\s*"', rf"\[\[ ## {re.escape(field)} ## \]\]\s*")
    ends = [m.end() for p in patterns for m in re.finditer(p, text)]
    return max(ends) if ends else None


def _labels_begun(rest: str, labels: Sequence[str]) -> list[str]:
    """The labels whose text begins with the token remainder `rest` (or that `rest` begins with), ignoring case."""
    piece = rest.lower()
    if not piece.strip():
        return []
    return [label for label in labels if label.lower().startswith(piece) or piece.startswith(label.lower())]


def label_distribution(logprobs: Any, labels: Sequence[str], field: str = "label") -> dict[str, float] | None:
    """{label: probability} read at the position where `field`'s value starts, or None when the answer has no such
    position, no alternative names a label, or the chosen token is shared by several labels.

    `logprobs` is the OpenAI chat shape DSPy returns (`{"content": [{"token", "logprob", "top_logprobs": [...]}]}`,
    as dicts or attribute objects) or the content list itself.
    """
    content = _get(logprobs, "content", logprobs) if logprobs is not None else None
    if not content:
        return None
    tokens = [str(_get(t, "token", "")) for t in content]
    text = "".join(tokens)
    start = _value_start(text, field)
    if start is None or start >= len(text):
        return None
    offset = 0
    for index, token in enumerate(tokens):
        if offset <= start < offset + len(token):
            break
        offset += len(token)
    prefix = text[offset:start]  # e.g. ' "' when the label's first token also carries the opening quote
    entry = content[index]
    alternatives = list(_get(entry, "top_logprobs", None) or [])
    if not any(str(_get(a, "token", "")) == tokens[index] for a in alternatives):
        alternatives.append({"token": tokens[index], "logprob": _get(entry, "logprob", 0.0)})
    chosen = _labels_begun(tokens[index][len(prefix):], labels)
    if len(chosen) > 1:
        return None  # the labels share this token: the first position cannot tell them apart
    mass = dict.fromkeys(labels, 0.0)
    for alt in alternatives:
        token = str(_get(alt, "token", ""))
        if not token.startswith(prefix):
            continue
        begun = _labels_begun(token[len(prefix):], labels)
        if len(begun) == 1:
            mass[begun[0]] += math.exp(float(_get(alt, "logprob", -math.inf)))
    total = sum(mass.values())
    if total <= 0:
        return None
    return {label: p / total for label, p in mass.items()}


def expected_relevance(dist: Mapping[str, float], labels: Sequence[str]) -> float:
    """Sum of grade x probability, grades 0..k-1 in scheme order (least relevant first)."""
    return float(sum(i * float(dist.get(label, 0.0)) for i, label in enumerate(labels)))


def label_for(relevance: float, labels: Sequence[str], cuts: Sequence[float]) -> str:
    """The label whose grade band holds `relevance`: cuts[i] is the lowest expected relevance of labels[i + 1]."""
    if len(cuts) != len(labels) - 1:
        raise HieraError(f"cuts needs {len(labels) - 1} thresholds for labels {list(labels)}; got {list(cuts)}")
    return labels[sum(1 for cut in cuts if relevance >= cut)]


def tune_cuts(relevances: Sequence[float], gold: Sequence[str], labels: Sequence[str]) -> list[float]:
    """Cuts on expected relevance maximising Cohen's kappa on labelled pairs (greedy, one cut at a time, left to
    right, over the observed values; ties keep the cut nearest the midpoint between grades)."""
    from sklearn.metrics import cohen_kappa_score

    values = sorted(set(float(r) for r in relevances))
    candidates = sorted(set([v for v in values] + [i + 0.5 for i in range(len(labels) - 1)]))
    cuts = [i + 0.5 for i in range(len(labels) - 1)]
    for j in range(len(cuts)):
        low = cuts[j - 1] if j else -math.inf
        high = cuts[j + 1] if j + 1 < len(cuts) else math.inf
        best, best_kappa = cuts[j], -math.inf
        for cut in candidates:
            if not low <= cut <= high:
                continue
            trial = cuts[:j] + [cut] + cuts[j + 1:]
            pred = [label_for(r, labels, trial) for r in relevances]
            kappa = cohen_kappa_score(list(gold), pred, labels=list(labels))
            kappa = -1.0 if math.isnan(kappa) else kappa
            if kappa > best_kappa + 1e-12 or (abs(kappa - best_kappa) <= 1e-12
                                                and abs(cut - j - 0.5) < abs(best - j - 0.5)):
                best, best_kappa = cut, kappa
        cuts[j] = best
    return cuts


def with_label_probs(prediction: dspy.Prediction, labels: Sequence[str], field: str = "label") -> dspy.Prediction:
    """Add `label_probs` and `expected_relevance` to a prediction whose LM call returned logprobs (else leave it);
    the raw token log-probabilities are dropped (they would fill the run store)."""
    dist = label_distribution(prediction.get("logprobs"), labels, field)
    if "logprobs" in prediction:
        del prediction["logprobs"]
    if dist is not None:
        prediction["label_probs"] = dist
        prediction["expected_relevance"] = expected_relevance(dist, labels)
    return prediction


class ProbPredict(dspy.Predict):
    """A Predict that asks its LM for token log-probabilities and reads the label distribution from them.

    Endpoints without log-probabilities (Anthropic, a fake LM) answer as a plain Predict: no `label_probs`.
    """

    def __init__(self, signature, labels: Sequence[str], **config):
        super().__init__(signature, **config)
        self.labels = tuple(labels)

    def forward(self, **kwargs):
        """Returns the prediction with `label_probs` added when the LM answered with log-probabilities."""
        kwargs["config"] = {**PROB_CONFIG, **(kwargs.get("config") or {})}
        return with_label_probs(super().forward(**kwargs), self.labels)

    async def aforward(self, **kwargs):
        """Async `forward`: the same prediction."""
        kwargs["config"] = {**PROB_CONFIG, **(kwargs.get("config") or {})}
        return with_label_probs(await super().aforward(**kwargs), self.labels)
