"""The HIERA graphs of the paper's Table 3 (full system and ablations) and the config every HIERA graph shares.

One place for these defaults: `methods/hiera.py` registers a method per graph, `methods/learned_scorer.py` builds its
learned-signals variants on the full graph (`HIERA`).
"""

from __future__ import annotations

GRAPHS = {
    "hiera": ("HIERA full system (arXiv 2608.00785)", dict(relation=True, specialists=("query", "item"), knowledge=True)),
    "judge-only": ("Ablation: the Judge alone", dict(relation=False, specialists=(), knowledge=False)),
    "judge+web": ("Ablation: Judge + knowledge passages", dict(relation=False, specialists=(), knowledge=True)),
    "judge+relation": ("Ablation: Judge + Relation Analyzer", dict(relation=True, specialists=(), knowledge=False)),
    "judge+relation+web": ("Ablation: Judge + Relation Analyzer + knowledge",
                           dict(relation=True, specialists=(), knowledge=True)),
    "judge+qi": ("Ablation: Judge + Query & Item Analyzers (no Relation Analyzer)",
                 dict(relation=False, specialists=("query", "item"), knowledge=False)),
    "judge+qi+web": ("Ablation: Judge + Query & Item Analyzers + knowledge",
                     dict(relation=False, specialists=("query", "item"), knowledge=True)),
    "judge+all-uncoordinated": ("Ablation: every specialist independently, outputs concatenated",
                                dict(relation=True, specialists=("query", "item"), knowledge=True,
                                     coordination="concatenate")),
}
ABLATIONS = list(GRAPHS)
# Config every HIERA graph shares (types, choices and meanings: hiera_dspy/methods/params.py). k None: the knowledge
# source's default (web 5, catalog 3).
GRAPH_DEFAULTS = {"delegation": "triage", "k": None, "coordination": "hierarchical", "consultation": "auto",
                  "specialist_lookups": 1, "profile": "auto"}
# The full HIERA graph's config: the defaults of the methods built on it (hiera+signals, hiera-cascade).
HIERA = {**GRAPH_DEFAULTS, **GRAPHS["hiera"][1]}
