"""Does the judge's uncertainty hold on the holes a person decided? The plan simulates the human labels from the
judge's probabilities, assuming them calibrated and independent within a query; the decided sample checks both.

On the decided holes (the judge's probability p that each is relevant, at the scheme's threshold, and the person's
label y in {0, 1}):

- relevant counts: observed sum y against expected sum p, z = (O - E) / sqrt(sum p (1 - p));
- Spiegelhalter's z ("Probabilistic prediction in patient management and clinical trials", Statistics in Medicine
  5, 1986): the Brier score B = sum (y - p)^2 against its expectation sum p (1 - p) under calibration, with variance
  sum (1 - 2p)^2 p (1 - p); large |z| says the probabilities are not calibrated;
- within a query: the dispersion sum_q (O_q - E_q)^2 / sum_q sum p (1 - p) over the decided queries, 1 when the
  holes of a query are independent given the probabilities, above 1 when the judge's errors on a query go together
  (each query's count then varies more than independent coins allow, and so does its metric);
- across queries (`variance_ratio`): the decided sample's residual variance over the plan's simulated one, per
  estimate, from the caller.

`inflation` is the factor the plan's residual standard deviation is multiplied by: the square root of the largest of
1, the dispersion and the Brier ratio B / E[B] (an over-confident judge's residuals are larger than its probabilities
say). A check flags when its z exceeds 2 or the inflation 1.2.
Pure: records in, a dict out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from hiera_dspy.conclude.strata import label_distribution
from hiera_dspy.labels import LabelScheme

FLAG_Z, FLAG_INFLATION = 2.0, 1.2


def check(records: Iterable[dict], decided_queries: Iterable[str], scheme: LabelScheme) -> dict | None:
    """{"holes", "queries", "observed", "expected", "z", "spiegelhalter_z", "brier_ratio", "dispersion", "inflation",
    "flag"} over the holes a person labelled on `decided_queries` that the judge also judged; None with no such
    hole."""
    wanted = set(decided_queries)
    per_query: dict[str, list[tuple[float, int]]] = {}
    for r in records:
        if r["query_id"] not in wanted or r.get("source") != "human" or not r.get("label"):
            continue
        if not r.get("machine_label") and not r.get("distribution"):
            continue  # an escalated hole: the judge gave no probability to check
        dist = label_distribution(r, scheme)
        p = sum(v for k, v in dist.items() if scheme.is_relevant(k)) / sum(dist.values())
        per_query.setdefault(r["query_id"], []).append((min(max(p, 0.0), 1.0), int(scheme.is_relevant(r["label"]))))
    pairs = [x for xs in per_query.values() for x in xs]
    if not pairs:
        return None
    observed = sum(y for _, y in pairs)
    expected = sum(p for p, _ in pairs)
    var = sum(p * (1 - p) for p, _ in pairs)
    brier = sum((y - p) ** 2 for p, y in pairs)
    brier_var = sum((1 - 2 * p) ** 2 * p * (1 - p) for p, _ in pairs)
    spread = sum((sum(y for _, y in xs) - sum(p for p, _ in xs)) ** 2 for xs in per_query.values())
    z = (observed - expected) / math.sqrt(var) if var > 0 else (0.0 if observed == expected else math.inf)
    sz = (brier - var) / math.sqrt(brier_var) if brier_var > 0 else (0.0 if brier <= var else math.inf)
    ratio = brier / var if var > 0 else (1.0 if brier == 0 else math.inf)
    dispersion = spread / var if var > 0 else (1.0 if spread == 0 else math.inf)
    inflation = math.sqrt(max(1.0, ratio, dispersion))
    return {"holes": len(pairs), "queries": len(per_query), "observed": observed, "expected": expected, "z": z,
            "spiegelhalter_z": sz, "brier_ratio": ratio, "dispersion": dispersion, "inflation": inflation,
            "flag": abs(z) > FLAG_Z or abs(sz) > FLAG_Z or inflation > FLAG_INFLATION}


def line(c: dict | None) -> str:
    """The check in words (for the plan and the report)."""
    if c is None:
        return ("Calibration check: no decided hole yet; the plan assumes the judge's probabilities are calibrated and "
                "its holes independent within a query.")
    verdict = (f"the plan's residual spread is multiplied by {c['inflation']:.2f}" if c["inflation"] > 1 else
               "the plan's spread stands")
    warn = ("; the judge's probabilities do not hold on the sample: the plan before labelling under-asks, trust the "
            "figures from the sample's own spread" if c["flag"] else "")
    return (f"Calibration check on {c['holes']} decided holes of {c['queries']} queries: {c['observed']} relevant "
            f"against {c['expected']:.1f} expected (z = {c['z']:+.2f}), Spiegelhalter's z = {c['spiegelhalter_z']:+.2f} "
            f"(Brier {c['brier_ratio']:.2f} of its expectation), within-query dispersion {c['dispersion']:.2f} (1 "
            f"when the holes of a query are independent); {verdict}{warn}.")
