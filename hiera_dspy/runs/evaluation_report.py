"""Per-method summaries and the markdown/JSON/PNG evaluation report (pure, no DSPy)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hiera_dspy.metrics.classification import bootstrap_ci, bootstrap_cis, classification_metrics, cost_columns
from hiera_dspy.metrics.numbers import number, with_ci
from hiera_dspy.metrics.significance import bonferroni, mcnemar
from hiera_dspy.records import as_judgment

CI_METRICS = ("accuracy", "macro_f1", "kappa")
FIELD_METRICS = ("binary_kappa", "krippendorff_alpha")  # the field's measures beside them (metrics.classification)


def summarize_method(method, rows, labels, reference_rows=None, n_comparisons=1, seed=42, binary_from=None,
                     query_of=None) -> dict:
    """One summary dict from per-judgment rows, every pair scored (a pair without a label is wrong; `coverage` and
    the `answered_only` view beside). Cost/latency columns: `metrics.classification.cost_columns`; McNemar vs
    ``reference_rows`` (matched by id, every common pair) is Bonferroni-corrected with ``n_comparisons``, the size of
    the family of comparisons against the reference (kept as `bonferroni_m`). The field's agreement measures, each
    with its CI: `krippendorff_alpha` (ordinal), and for a graded scheme with ``binary_from`` (the scheme's binary
    cut) `binary_kappa` and `binary_confusion`. With ``query_of`` (pair id -> query id), `ci_by_query`: the same
    intervals over resampled queries (a cluster bootstrap, as TREC reports them)."""
    rows = [as_judgment(r) for r in rows]
    gold, pred = [r.gold for r in rows], [r.final_label for r in rows]
    m = classification_metrics(gold, pred, labels, binary_from)
    s = {"method": method, "n": m["n"], "answered": m["answered"], "unlabelled": m["unlabelled"],
         "coverage": m["coverage"]}
    for name in (*CI_METRICS, "balanced_accuracy"):
        s[name] = m[name]
    for name in CI_METRICS:
        s[f"{name}_ci"] = list(bootstrap_ci(gold, pred, labels, name, seed=seed))
    if len(labels) > 2:  # graded: the quadratic-weighted kappa beside (misses by one grade cost less)
        s["weighted_kappa"] = m["weighted_kappa"]
        s["weighted_kappa_ci"] = list(bootstrap_ci(gold, pred, labels, "weighted_kappa", seed=seed))
    field = [name for name in FIELD_METRICS  # a binary scheme's binary kappa is its kappa
             if name == "krippendorff_alpha" or (len(labels) > 2 and binary_from is not None)]
    for name, ci in bootstrap_cis(gold, pred, labels, field, seed=seed, binary_from=binary_from).items():
        s[name], s[f"{name}_ci"] = m[name], list(ci)
    queries = [query_of.get(r.id, r.id) for r in rows] if query_of else []
    if len(set(queries)) > 1:
        names = [*CI_METRICS, *field, *(["weighted_kappa"] if len(labels) > 2 else [])]
        s["ci_by_query"] = {name: list(ci) for name, ci in bootstrap_cis(
            gold, pred, labels, names, seed=seed, binary_from=binary_from, groups=queries).items()}
    s["binary_from"], s["binary_confusion"] = m["binary_from"], m["binary_confusion"]
    s["answered_only"] = m["answered_only"]
    s["mcnemar_p"] = s["mcnemar"] = s["bonferroni_m"] = None
    if reference_rows is not None:
        ref = {r.id: r.final_label for r in map(as_judgment, reference_rows)}
        common = [r for r in rows if r.id in ref]
        t = mcnemar([r.gold for r in common], [r.final_label for r in common], [ref[r.id] for r in common])
        s["mcnemar"], s["mcnemar_p"] = t, bonferroni([t["p_value"]], m=n_comparisons)[0]
        s["bonferroni_m"] = n_comparisons
    s |= cost_columns(rows)
    s["confusion"], s["confusion_columns"] = m["confusion"], m["confusion_columns"]
    return s


def comparison_families(families: dict[str, str], reference: str | None) -> dict[str, int]:
    """Bonferroni's m per compared method: the number of methods of its family compared against the reference.

    ``families`` maps each report row to its family (`ablation`, `baseline`, ...), as the paper corrects each table
    on its own (Tables 1-2: HIERA vs its 11 baselines; Table 3: vs its 7 ablations). The reference is not compared.
    """
    if reference is None:
        return {}
    compared = {name: family for name, family in families.items() if name != reference}
    sizes = {family: list(compared.values()).count(family) for family in set(compared.values())}
    return {name: sizes[family] for name, family in compared.items()}


def family_note(families: dict[str, str], reference: str | None) -> str | None:
    """One report line stating each family's Bonferroni m, e.g. "ablation m=7, signals m=1"."""
    m = comparison_families(families, reference)
    if not m:
        return None
    sizes = {families[name]: k for name, k in m.items()}
    parts = ", ".join(f"{family} m={k}" for family, k in sorted(sizes.items()))
    return (f"Bonferroni: each p is multiplied by the number of comparisons against {reference} in its family "
            f"({parts}).")


def sanitize(name: str) -> str:
    """Filesystem-safe method name: "judge+web" -> "judge_web"."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or "method"


def _f(x, fmt=".3f"):
    return number(x, fmt, missing="—")


def _p(p):
    return "—" if p is None else ("<0.0001" if p < 1e-4 else f"{p:.4f}")


def _ci(s, k):
    return with_ci(s.get(k), s.get(f"{k}_ci"), missing="—")


def _md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows]


def pareto_frontier(points: list[tuple[float, float]]) -> list[int]:
    """Indices of points (cost, quality) not dominated by a cheaper-or-equal, better point; by cost."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    best, front = -np.inf, list[int]()
    for i in order:
        if points[i][1] > best:
            best, front = points[i][1], front + [i]
    return front


def _save(fig: Figure, path: Path) -> str:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return str(path)


def _confusion_png(cm, labels, columns, method, path):
    fig = Figure(figsize=(1.2 + 0.7 * len(columns), 1.0 + 0.7 * len(labels)))
    ax = fig.subplots()
    ax.imshow(np.asarray(cm), cmap="Blues")
    ax.set(xticks=range(len(columns)), yticks=range(len(labels)), xticklabels=columns, yticklabels=labels,
           xlabel="predicted", ylabel="gold", title=method)
    top = max(1, int(np.max(cm)))
    for (i, j), v in np.ndenumerate(np.asarray(cm)):
        ax.text(j, i, str(v), ha="center", va="center", color="white" if v > top / 2 else "black")
    return _save(fig, path)


def _bars_png(summaries, path):
    fig = Figure(figsize=(max(5, 1.6 * len(summaries)), 3.5))
    ax, width = fig.subplots(), 0.8 / len(CI_METRICS)
    x = np.arange(len(summaries))
    for k, name in enumerate(CI_METRICS):
        vals = [s.get(name) or 0.0 for s in summaries]
        cis = [s.get(f"{name}_ci") or [None, None] for s in summaries]
        err = [[v - lo if lo is not None else 0 for v, (lo, _) in zip(vals, cis)],
               [hi - v if hi is not None else 0 for v, (_, hi) in zip(vals, cis)]]
        ax.bar(x + (k - 1) * width, vals, width, yerr=np.clip(err, 0, None), capsize=3, label=name)
    ax.set(xticks=x, xticklabels=[s["method"] for s in summaries], ylabel="score", ylim=(min(0, ax.get_ylim()[0]), 1.05))
    ax.legend(fontsize="small", ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _save(fig, path)


def _cost_png(summaries, path):
    pts = [(s["tokens_per_judgment"], s["kappa"], s["method"]) for s in summaries
           if s.get("tokens_per_judgment") is not None and s.get("kappa") is not None]
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    for x, y, name in pts:
        ax.scatter(x, y)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize="small")
    front = [pts[i] for i in pareto_frontier([(x, y) for x, y, _ in pts])]
    if len(front) > 1:
        ax.plot([p[0] for p in front], [p[1] for p in front], "--", color="grey", label="Pareto frontier")
        ax.legend(fontsize="small")
    ax.set(xlabel="tokens per judgment", ylabel="Cohen's κ", title="cost vs quality")
    return _save(fig, path)


def _answered_only_table(summaries) -> list[str]:
    """The answered-only view, labelled so: metrics over the pairs that got a label (it flatters frequent failures)."""
    if all((s.get("coverage") or 0) == 1 for s in summaries):
        return []
    rows = [[s["method"], _f(s.get("coverage"), ".2f"), (s.get("answered_only") or {}).get("n", "—"),
             *(_f((s.get("answered_only") or {}).get(k)) for k in CI_METRICS)] for s in summaries]
    return ["### Answered only (pairs with a label; not comparable across methods of different coverage)", "",
            *_md_table(["Variant", "coverage", "answered", "Acc", "F1", "κ"], rows), ""]


def write_report(out_dir, summaries, predictions, labels, title, reference=None, notes=None, sections=None) -> dict:
    """Write report.md, summary.json and PNG figures into ``out_dir``; returns {filename: path}.
    ``notes``: extra lines printed under the table; ``sections``: markdown lines appended at the end."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths, used = {}, set[str]()
    header = ["Variant", "Acc [95% CI]", "F1 [95% CI]", "κ [95% CI]", "coverage", "p vs ref", "tokens/judgment",
              "LM calls", "reached LLM", "s/judgment p50", "delegation", "errors/esc."]
    rows = [[s["method"] + (" (ref)" if s["method"] == reference else ""), _ci(s, "accuracy"), _ci(s, "macro_f1"),
             _ci(s, "kappa"), _f(s.get("coverage"), ".2f"), _p(s.get("mcnemar_p")),
             _f(s.get("tokens_per_judgment"), ".0f"), _f(s.get("lm_calls_per_judgment"), ".2f"),
             _f(s.get("llm_share"), ".2f"), _f(s.get("seconds_p50"), ".2f"), _f(s.get("delegation_rate"), ".2f"),
             f"{s.get('errors', 0)}/{s.get('escalations', 0)}"] for s in summaries]
    if any("weighted_kappa" in s for s in summaries):  # a graded scheme
        header.insert(4, "κw quadratic [95% CI]")
        for row, s in zip(rows, summaries):
            row.insert(4, _ci(s, "weighted_kappa"))
    field = [(name, column) for name, column in (("binary_kappa", "κ binary [95% CI]"),
                                                 ("krippendorff_alpha", "α ordinal [95% CI]"))
             if any(name in s for s in summaries)]
    for at, (name, column) in enumerate(field, start=header.index("coverage")):
        header.insert(at, column)
        for row, s in zip(rows, summaries):
            row.insert(at, _ci(s, name))
    if any(s.get("wall_ms_per_pair") is not None for s in summaries):
        header.append("ms/pair (wall)")
        for row, s in zip(rows, summaries):
            row.append(_f(s.get("wall_ms_per_pair"), ".1f"))
    md = [f"# {title}", "", *_md_table(header, rows), "",
          "Every pair is scored: a judgment without a label (an error, an escalation nobody decided) counts as wrong, "
          "in κ as the extra class \"(no label)\"; coverage: share of pairs with a label. p: McNemar vs reference "
          "over every pair, Bonferroni-corrected. Cost/latency columns: per judgment without an error (escalated ones "
          "included); reached LLM: share of pairs that made an LM call (a cascade's LLM share). κ binary: Cohen's κ "
          "on the scheme's binary view (relevant from its threshold label on); α ordinal: Krippendorff's alpha over "
          "the labelled pairs; ms/pair (wall): the method's whole run time over its pairs.", ""]
    md += [line for note in notes or [] for line in (note, "")]
    md += _answered_only_table(summaries)
    for s in summaries:
        method, preds = s["method"], predictions.get(s["method"])
        preds = [as_judgment(r) for r in preds or []]
        m = classification_metrics([r.gold for r in preds], [r.final_label for r in preds], labels) if preds else s
        cm, columns = m.get("confusion"), m.get("confusion_columns") or list(labels)
        if cm is None:
            continue
        md += [f"## {method}", "", f"n = {m.get('n')}, unlabelled = {m.get('unlabelled')}", ""]
        md += _md_table(["gold \\ pred", *columns], [[g, *r] for g, r in zip(labels, cm)]) + [""]
        stem = f"confusion_{sanitize(method)}"
        name = next(n for i in range(1, len(used) + 2) if (n := stem + (f"_{i}" if i > 1 else "")) not in used)
        used.add(name)
        paths[f"{name}.png"] = _confusion_png(cm, labels, columns, method, out / f"{name}.png")
    (out / "report.md").write_text("\n".join(md + list(sections or [])), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summaries, indent=2, ensure_ascii=False), encoding="utf-8")
    paths |= {"report.md": str(out / "report.md"), "summary.json": str(out / "summary.json")}
    if summaries:
        paths["ablation_bars.png"] = _bars_png(summaries, out / "ablation_bars.png")
        paths["cost_quality.png"] = _cost_png(summaries, out / "cost_quality.png")
    return paths
