"""The fastest scoring path of a fine-tuned cross-encoder that keeps its judge's labels.

A cross-encoder is fine-tuned at `max_len` tokens and exported to ONNX in fp32 and int8 (`onnx_encoder`). Scoring
can also cut the item at fewer tokens (`SHORT_LEN`): attention and the dense layers cost about linearly in the
tokens, so a cut at 64 of 128 halves the time, and int8 (VNNI where the CPU has it) halves it again. Whether a path
keeps what matters is a question about the judge, not the encoder: ce-blend's label comes from the cross-encoder's
grade distribution blended with the scorer's and cut at chosen thresholds, so a path that moves P by 0.02 far from a
threshold changes nothing, and one that moves it by 0.001 at a threshold flips a label.

`choose_path(encoder, check, labels_of, gold)` scores the `check` triples (held-out pairs the judge was tuned on)
with each candidate path, fastest first: int8 at `SHORT_LEN`, int8 at `max_len`, fp32 at `SHORT_LEN`, and fp32 at
`max_len` (the reference, always acceptable). `labels_of(grade_probs)` turns the cross-encoder's distributions into
the judge's labels. The first candidate whose labels agree with the reference's on at least `MIN_AGREEMENT` of the
check pairs and whose Cohen's kappa against `gold` is within `KAPPA_TOLERANCE` of the reference's is used. The
choice, each candidate's evidence and its measured seconds a pair go into the encoder's ONNX manifest (`onnx.json`),
which `CrossEncoder.load` reads back.

Example:
    >>> choose_path(ce, held, lambda probs: blend_labels(scorer_d, probs, w, cuts, labels), gold)  # doctest: +SKIP
    {'use': 'int8', 'score_max_len': 64, ...}
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

SHORT_LEN = 64  # tokens of query + item a cut path reads
MIN_AGREEMENT = 0.99  # <= 3 changed labels in 300 check pairs
KAPPA_TOLERANCE = 0.01  # the kappa a faster path may lose against the gold labels of the check pairs


def candidates(max_len: int) -> list[tuple[str, int]]:
    """(precision, tokens) paths fastest first, the full-length fp32 reference last."""
    lengths = [SHORT_LEN, max_len] if SHORT_LEN < max_len else [max_len]
    return [(kind, n) for kind in ("int8", "fp32") for n in lengths]


def choose_path(encoder, check: Sequence[tuple[str, str, str]], labels_of: Callable[[np.ndarray], Sequence[str]],
                gold: Sequence[str]) -> dict:
    """Set `encoder`'s runner and scoring length to the fastest path that keeps the judge's labels on `check` (see
    the module doc) and return the choice with its evidence (also written into the encoder's ONNX manifest).
    Without an ONNX export (onnxruntime missing) nothing changes and None is returned."""
    from sklearn.metrics import cohen_kappa_score

    onnx = getattr(encoder, "_onnx", None)
    if onnx is None or not check:
        return None
    paths = candidates(encoder.max_len)
    evidence, labels = {}, {}
    for kind, n in reversed(paths):  # the reference first: every other path is compared with it
        encoder.use_path(kind, n)
        start = time.perf_counter()
        probs = encoder.grade_probs(list(check))
        seconds = (time.perf_counter() - start) / len(check)
        labels[kind, n] = list(labels_of(probs))
        reference = labels[paths[-1]]
        evidence[f"{kind}@{n}"] = {
            "agreement": float(np.mean([a == b for a, b in zip(labels[kind, n], reference)])),
            "kappa": float(cohen_kappa_score(list(gold), labels[kind, n])),
            "seconds_a_pair": seconds}
    base = evidence[f"{paths[-1][0]}@{paths[-1][1]}"]["kappa"]
    for kind, n in paths:
        e = evidence[f"{kind}@{n}"]
        if e["agreement"] >= MIN_AGREEMENT and e["kappa"] >= base - KAPPA_TOLERANCE:
            break
    encoder.use_path(kind, n)
    choice = {"use": kind, "score_max_len": n, "check_pairs": len(check), "min_agreement": MIN_AGREEMENT,
              "kappa_tolerance": KAPPA_TOLERANCE, "paths": evidence,
              "why": (f"{kind} at {n} tokens keeps {evidence[f'{kind}@{n}']['agreement']:.3f} of the judge's labels "
                      f"(fp32 at {encoder.max_len} tokens) on {len(check)} check pairs, kappa "
                      f"{evidence[f'{kind}@{n}']['kappa']:.3f} against {base:.3f}")}
    onnx.manifest.update(choice)
    return choice
