"""The conclusions as a picture: a forest plot per measure of every system's estimate with its interval, beside the
human-only interval and the machine-only value, and the ranking before filling (the original qrels, holes unjudged)
against the ranking by the estimate (a slope chart: a line per system from its rank before to its rank after).

matplotlib's object API with the Agg canvas (no display, no global pyplot state). An exact value (no hole can change
it, or every query it depends on decided) is drawn as a filled diamond without an interval.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def draw(c: dict, before: dict[str, dict[str, float | None]], path: Path) -> Path:
    """Write the forest plot of the conclusions `c` (`hiera_dspy.conclude.holes.conclusions`) to `path`
    (PNG); `before`: run -> measure -> its value with the original qrels (None: no judged query)."""
    runs, measures = list(c["estimates"]), list(c["measures"])
    fig = Figure(figsize=(11, 0.45 * len(runs) * len(measures) + 2.5 * len(measures)))
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(len(measures), 2, width_ratios=(3, 1))
    for i, m in enumerate(measures):
        _forest(fig.add_subplot(grid[i, 0]), c, runs, m)
        _ranks(fig.add_subplot(grid[i, 1]), c, runs, m, before)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def _forest(ax, c: dict, runs: list[str], m: str) -> None:
    pct = f"{c['level']:.0%}"
    order = sorted(runs, key=lambda r: _value(c["estimates"][r][m]))
    for y, run in enumerate(order):
        e = c["estimates"][run][m]
        if e.get("rule") == "exact" and e.get("ppi") is not None:
            ax.plot([e["ppi"]], [y], "D", color="black", label="exact (no interval)" if y == 0 else None)
        elif e.get("ppi") is not None:
            lo, hi = e["ci"] or (e["ppi"], e["ppi"])
            ax.errorbar([e["ppi"]], [y], xerr=[[e["ppi"] - lo], [hi - e["ppi"]]], fmt="o", color="black", capsize=3,
                        label=f"estimate, {pct} CI" if y == 0 else None)
        if e.get("human_only_ci"):
            lo, hi = e["human_only_ci"]
            ax.errorbar([e["human_only"]], [y - 0.25], xerr=[[e["human_only"] - lo], [hi - e["human_only"]]],
                        fmt="s", color="tab:gray", capsize=2, label=f"human sample alone, {pct} CI" if y == 0 else None)
        if e.get("machine") is not None:
            ax.plot([e["machine"]], [y + 0.25], "x", color="tab:red", label="machine only" if y == 0 else None)
    ax.set_yticks(range(len(order)), order)
    ax.set_xlabel(m)
    ax.set_title(f"{m}: every system's estimate")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)


def _ranks(ax, c: dict, runs: list[str], m: str, before: dict) -> None:
    first = sorted(runs, key=lambda r: -_number((before.get(r) or {}).get(m)))
    after = c["ranking"][m]
    for run in runs:
        a, b = first.index(run) + 1, after.index(run) + 1
        ax.plot([0, 1], [a, b], "-o", color="tab:blue" if a == b else "tab:orange")
        ax.text(1.05, b, run, va="center", fontsize=7)
    ax.set_xlim(-0.2, 1.6)
    ax.set_ylim(len(runs) + 0.5, 0.5)
    ax.set_xticks([0, 1], ["before filling", "estimate"])
    ax.set_ylabel("rank")
    ax.set_title("ranking")


def _value(e: dict) -> float:
    v = e.get("ppi") if e.get("ppi") is not None else e.get("machine")
    return float(v) if v is not None else float("-inf")


def _number(v) -> float:
    return float(v) if v is not None else float("-inf")
