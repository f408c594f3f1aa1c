"""The holes of a retrieval benchmark as a labelling run: the run's exports (qrels.txt with the holes filled,
new.jsonl, summary.json, report.md). The benchmark's files are read by `hiera_dspy.benchmark.inputs`.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from hiera_dspy.benchmark.conclusions import conclude
from hiera_dspy.benchmark.inputs import Inputs, read_inputs
from hiera_dspy.conclude.retrieval import evaluate, measure_key, ranking_agreement
from hiera_dspy.data.trec import format_qrels
from hiera_dspy.labels import LabelScheme
from hiera_dspy.metrics.classification import classification_metrics
from hiera_dspy.metrics.numbers import number
from hiera_dspy.review.exports import qrels_of, write_jsonl
from hiera_dspy.review.known_report import known_section
from hiera_dspy.store.files import write_atomic
from hiera_dspy.store.run_settings import RunSettings


def export_holes(store, settings: RunSettings, records: list[dict]) -> list[Path]:
    """qrels.txt (originals unchanged, then the filled holes), new.jsonl, summary.json, report.md (with the
    conclusions), sample.jsonl when the run has a human sample."""
    labelling, run_id = settings.labelling, settings.run_id
    assert labelling is not None and labelling.scheme is not None  # a holes run (review.run)
    out, scheme, depth = labelling.out, labelling.scheme, labelling.get("depth")
    inputs = read_inputs(labelling.section, scheme)
    records = list(records)  # read three times below; a record has no step trace (a few hundred bytes)
    holes = hole_records(records, inputs.qrels)
    filled = qrels_of(holes, scheme)
    after = {**inputs.qrels, **filled}
    summary = summarize(inputs, after, holes, scheme, depth) | {"run_id": run_id, "method": settings.identity.get("method")}
    if labelling.get("known"):
        summary["known"] = labelling.get("known")  # what the judge read of the benchmark's own judgments
    extra = []
    if labelling.get("judge_pool"):
        machine = qrels_of(records, scheme)
        summary["machine_only"] = machine_only(inputs, machine, records, scheme, depth)
        extra.append(write_atomic(out / "machine_qrels.txt", format_qrels(machine)))
    written, section = conclude(summary, store, run_id, inputs.runs, inputs.qrels, holes, scheme, depth,
                                labelling.get("ci", 0.95), out, labelling.get("machine_values", "expected"))
    return [write_atomic(out / "qrels.txt", format_qrels(after)), write_jsonl(out / "new.jsonl", holes),
            write_atomic(out / "summary.json", json.dumps(summary, indent=1)),
            write_atomic(out / "report.md", report(summary) + section), *extra, *written]


def hole_records(records: list[dict], qrels: dict) -> list[dict]:
    """The records of holes only: a `--judge-pool` run also judged pairs the qrels hold, which fill nothing and must
    not stand in for the given judgments in the filled qrels or the conclusions."""
    return [r for r in records if (r["query_id"], r["item_id"]) not in qrels]


def machine_only(inputs: Inputs, machine: dict, records: list[dict], scheme: LabelScheme, depth: int) -> dict:
    """The runs scored on the machine's own qrels of the whole pool (`--judge-pool`: every pair of the runs' top
    DEPTH judged, none of the given judgments used) against the given qrels: nDCG per run, the ranking's Kendall's
    tau, tau_ap and largest change; and the machine's agreement with the given judgments on the pool's judged pairs
    (kappa, binary kappa at the scheme's cut, Krippendorff's alpha, quadratic kappa, the confusion)."""
    key = measure_key("ndcg", depth)
    runs = [{"run": name, f"{key}_given": evaluate(lines, inputs.qrels, scheme, depth)[key],
             f"{key}_machine": evaluate(lines, machine, scheme, depth)[key]} for name, lines in inputs.runs.items()]
    scored = [r for r in runs if r[f"{key}_given"] is not None and r[f"{key}_machine"] is not None]
    judged = [(scheme.labels[inputs.qrels[k]], r["label"]) for r in records
              if (k := (r["query_id"], r["item_id"])) in inputs.qrels]
    labels = list(scheme.labels)
    m = classification_metrics([g for g, _ in judged], [p for _, p in judged], labels, scheme.binary_from)
    agreement = {name: m.get(name) for name in ("n", "kappa", "binary_kappa", "krippendorff_alpha", "weighted_kappa",
                                                "confusion", "confusion_columns")}
    return {"runs": runs, "pairs": len(records), "judged_pairs": len(judged), "agreement": agreement,
            **ranking_agreement([r["run"] for r in scored], [r[f"{key}_given"] for r in scored],
                                [r[f"{key}_machine"] for r in scored])}


def summarize(inputs: Inputs, after: dict, records: list[dict], scheme: LabelScheme, depth: int) -> dict:
    """Per-run hole rate, nDCG and P at depth before and after filling, Kendall's tau of the two rankings, and
    hole counts."""
    from hiera_dspy.conclude.holes import population

    runs, every = [], population(inputs.runs)  # averaged over the benchmark's queries, as the conclusions are
    for name, lines in inputs.runs.items():
        b, a = (evaluate(lines, q, scheme, depth, every) for q in (inputs.qrels, after))
        runs.append({"run": name, "hole_rate_before": b["hole_rate"], "hole_rate_after": a["hole_rate"],
                     f"ndcg@{depth}_before": b[f"ndcg@{depth}"], f"ndcg@{depth}_after": a[f"ndcg@{depth}"],
                     f"p@{depth}_before": b[f"p@{depth}"], f"p@{depth}_after": a[f"p@{depth}"],
                     "queries_before": b["queries"], "queries_after": a["queries"]})
    key = measure_key("ndcg", depth)
    scored = [r for r in runs if r[f"{key}_before"] is not None and r[f"{key}_after"] is not None]
    ranking = ranking_agreement([r["run"] for r in scored], [r[f"{key}_before"] for r in scored],
                                [r[f"{key}_after"] for r in scored])
    return {"depth": depth, "runs": runs, **ranking,
            "holes": len(records), "filled": sum(1 for r in records if r["label"]),
            "escalated": sum(1 for r in records if r["escalated"] and not r["label"]),
            "human": sum(1 for r in records if r["source"] == "human"),
            "errors": sum(1 for r in records if r["error"]), "original_judgments": len(inputs.qrels),
            "truncated": sum(1 for r in records if r.get("truncated")),
            "labels": dict(Counter(r["label"] for r in records if r["label"])),
            "confidence_sources": dict(Counter(r["confidence_source"].split(" (")[0] for r in records)),
            "skipped_rows": len(inputs.skipped)}


def report(s: dict) -> str:
    """The summary as a Markdown report."""
    k = s["depth"]
    lines = [f"# Holes filled at depth {k} ({s['method']}, run {s['run_id']})", "",
             f"{s['holes']} holes judged: {s['filled']} filled ({s['human']} by a person), {s['escalated']} escalated "
             f"and undecided, {s['errors']} failed; {s['original_judgments']} original judgments kept unchanged.",
             f"Labels of the filled holes: {s['labels']}; confidence from {s['confidence_sources']}.",
             *([(f"{s['truncated']} holes had a document longer than the judge reads: cut to its first "
                 "$HIERA_ITEM_CHARS characters (`truncated` in new.jsonl gives the original length).")]
               if s.get("truncated") else []), "",
             f"| run | hole@{k} before | after | nDCG@{k} before | after | P@{k} before | after |",
             "|---|---|---|---|---|---|---|"]
    for r in s["runs"]:
        cells = [r[key] for key in ("hole_rate_before", "hole_rate_after", f"ndcg@{k}_before", f"ndcg@{k}_after",
                                    f"p@{k}_before", f"p@{k}_after")]
        lines.append(f"| {r['run']} | " + " | ".join(map(number, cells)) + " |")
    order = {when: [r["run"] for r in sorted(s["runs"], key=lambda r: -(r[f"ndcg@{k}_{when}"] or 0))]
             for when in ("before", "after")}
    lines += ["", f"System ranking by nDCG@{k}: before {' > '.join(order['before'])}; after "
              f"{' > '.join(order['after'])}. Kendall's tau = {number(s['kendall_tau'])}, tau_ap = "
              f"{number(s.get('tau_ap'))}{_largest(s.get('largest_change'), k)}.", ""]
    lines += known_section(s.get("known"))
    if s.get("machine_only"):
        lines += machine_section(s["machine_only"], k)
    return "\n".join(lines)


def _largest(change: dict | None, k: int) -> str:
    if not change:
        return ""
    return (f"; the largest change: {change['run']}, nDCG@{k} {number(change['before'])} -> "
            f"{number(change['after'])} ({change['change']:+.3f})")


def machine_section(m: dict, k: int) -> list[str]:
    """The report's lines on the machine-only qrels (`--judge-pool`)."""
    a = m["agreement"]
    lines = [f"## Every pair of the pool judged by the machine ({m['pairs']} pairs)", "",
             f"| run | nDCG@{k} given qrels | machine-only qrels |", "|---|---|---|"]
    lines += [f"| {r['run']} | {number(r[f'ndcg@{k}_given'])} | {number(r[f'ndcg@{k}_machine'])} |" for r in m["runs"]]
    lines += ["", f"System ranking on the machine's qrels against the given ones: Kendall's tau = "
              f"{number(m['kendall_tau'])}, tau_ap = {number(m['tau_ap'])}{_largest(m['largest_change'], k)}.",
              f"Agreement with the {m['judged_pairs']} given judgments of the pool: kappa {number(a['kappa'])}, "
              f"binary kappa {number(a['binary_kappa'])}, Krippendorff's alpha (ordinal) "
              f"{number(a['krippendorff_alpha'])}, quadratic kappa {number(a['weighted_kappa'])}.", ""]
    return lines


def print_summary(s: dict) -> None:
    """Print the Markdown report."""
    print(report(s))
