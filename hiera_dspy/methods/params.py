"""Every method config key, typed: its type, allowed values, and a one-line meaning (defaults live with each method's
`register` line). `check(method, key, value)` refuses a value that does not fit, naming the choices;
`python -m eval.methods --config NAME` prints one method's table. A new key is one line here.
"""

from __future__ import annotations

from dataclasses import dataclass

from hiera_dspy.errors import HieraError


class ConfigError(HieraError):
    """A method config value that does not fit its key's declared type or choices (also a ValueError)."""


@dataclass(frozen=True)
class Param:
    """One config key: `type` (bool, int, float, str, list), allowed `choices` (for a list: of its items), an
    inclusive `low`/`high` range for numbers, whether null is allowed, and what the key means."""

    type: type
    doc: str
    choices: tuple | None = None
    low: float | None = None
    high: float | None = None
    nullable: bool = False
    words: tuple[str, ...] = ()  # strings a number key also takes (e.g. "auto")

    def allowed(self) -> str:
        """The allowed values in words, e.g. 'triage | always | never' or 'int >= 1, or null'."""
        name = self.type.__name__
        if self.choices is not None:
            text = " | ".join(map(str, self.choices))
            text = f"list of {text}" if self.type is list else text
        elif self.type is bool:
            text = "true | false"
        elif self.low is not None and self.high is not None:
            text = f"{name} in [{self.low}, {self.high}]"
        elif self.low is not None or self.high is not None:
            text = f"{name} >= {self.low}" if self.low is not None else f"{name} <= {self.high}"
        else:
            text = "any " + name
        return text + "".join(f", or {w}" for w in self.words) + (", or null" if self.nullable else "")

    def check(self, key: str, value):
        """The value (ints accepted for floats, lists for tuples), or ValueError naming the allowed values."""
        if value is None and self.nullable:
            return None
        if isinstance(value, str) and value in self.words:
            return value
        ok = isinstance(value, self.type) and not (self.type is not bool and isinstance(value, bool))
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if self.type is list and isinstance(value, tuple):
            ok = True
        if ok and self.choices is not None:
            items = value if self.type is list else [value]
            ok = all(item in self.choices for item in items)
        if ok and self.type in (int, float):
            ok = (self.low is None or value >= self.low) and (self.high is None or value <= self.high)
        if not ok:
            raise ConfigError(f"{key}={value!r} is not allowed; expected {self.allowed()}")
        return value


PARAMS: dict[str, Param] = {
    # HIERA graphs (methods/hiera.py, react.py)
    "delegation": Param(str, "when the Judge delegates: after its triage, always, or never (it decides alone)",
                        ("triage", "always", "never")),
    "relation": Param(bool, "the Relation Analyzer is part of the graph"),
    "specialists": Param(list, "which specialists are part of the graph", ("query", "item")),
    "knowledge": Param(bool, "knowledge look-ups are part of the graph"),
    "coordination": Param(str, "specialists through the Relation Analyzer, or run independently and concatenated",
                          ("hierarchical", "concatenate")),
    "consultation": Param(str, "specialists answer R's question about the pair, or return a pair-independent "
                               "analysis; auto: the profile's (directed; local: undirected)",
                          ("auto", "directed", "undirected")),
    "specialist_lookups": Param(int, "knowledge look-ups each specialist may make per question (0: none)", low=0,
                                high=3),
    "profile": Param(str, "output budgets and length caps: from each role's LM, the paper's, or the local model's",
                     ("auto", "paper", "local")),
    "k": Param(int, "passages per knowledge look-up; null: the source's default (web 5, catalog 3)", low=1,
               nullable=True),
    "max_iters": Param(int, "ReAct turns per agent", low=1, high=20),
    "signals": Param(bool, "the Judge and Relation Analyzer also read the learned scorer's distribution",
                     nullable=True),
    # learned scorer and cascade (methods/learned_scorer.py)
    "embedder": Param(str, "scorer features: auto (MiniLM if installed, else lexical), lexical, or a model id",
                      nullable=True),
    "C": Param(float, "inverse regularisation strength of the scorer's logistic regression", low=1e-6,
               nullable=True),
    "features": Param(str, "what the scorer reads: base (lexical + cosines), query (+ query-level features), "
                      "interactions (+ query x item embedding products; for thousands of train pairs), fields (+ "
                      "the query against each item field), prior (+ the item's leave-query-out relevance rate), late (+ MaxSim over "
                      "MiniLM's token vectors and the sentence cosine; for passages), late+coverage (+ the weakest-matched "
                      "query token's best cosine too)",
                      choices=("base", "query", "interactions", "query+interactions", "fields", "query+fields",
                               "query+prior", "query+fields+prior", "late", "query+late", "late+coverage"),
                      nullable=True),
    "model": Param(str, "the scorer's classifier: lr (logistic regression) or hgb (gradient-boosted trees, for "
                   "thousands of train pairs)", choices=("lr", "hgb"), nullable=True),
    "class_weight": Param(str, "balanced: every label weighs the same in the scorer's fit (an imbalanced train "
                          "split, e.g. msrd pool)", choices=("balanced",), nullable=True),
    "C_grid": Param(list, "choose the scorer's C among these on a query-grouped dev split of the train pairs",
                    nullable=True),
    "probe_pairs": Param(int, "probe-stacked: hidden states of a seeded sample of N train pairs (the scorer uses all)",
                         low=2, nullable=True),
    # the cross-encoder blend (methods/cross.py)
    "ce_pairs": Param(int, "ce-blend: train pairs the cross-encoder is fine-tuned on (an equal share of each label, "
                      "seeded)", low=32),
    "ce_epochs": Param(int, "ce-blend: passes over the cross-encoder's fine-tuning pairs", low=1, high=20,
                       nullable=True),
    "blend_objective": Param(str, "ce-blend: what chooses the blend's weight and grade thresholds on dev",
                             ("kappa", "weighted_kappa"), nullable=True),
    "ce_max_len": Param(int, "ce-blend: tokens of query + item the cross-encoder reads (auto: chosen from the train "
                        "pairs' lengths, signals/pair_lengths.py)", low=16, high=512, words=("auto",)),
    "blend_folds": Param(int, "ce-blend: choose the blend on the out-of-fold predictions of K folds by query over "
                         "every train pair (K + 1 fine-tunings; null: on the dev_queries split)", low=2, high=10,
                         nullable=True),
    "ce_precision": Param(str, "ce-blend: the fine-tuning's forward pass: bf16 autocast where the CPU computes bf16 "
                          "(auto), always, or fp32", ("auto", "bf16", "fp32"), nullable=True),
    "ce_lr": Param(float, "ce-blend: the cross-encoder's AdamW learning rate", low=1e-7, high=1e-2),
    "dev_queries": Param(int, "ce-blend: train queries held out (one pair of each label they have, balanced) to "
                         "choose the blend", low=2),
    "threshold_folds": Param(int, "late-lr: choose the grade thresholds on the out-of-fold predictions of K folds by "
                             "query over every train pair", low=2, high=10),
    "grade_objective": Param(str, "late-lr: what chooses the grade thresholds: quadratic-weighted kappa or Cohen's kappa",
                             ("weighted_kappa", "kappa"),
                             nullable=True),
    "feedback": Param(bool, "late-lr, embed-lr, ce-blend: learn the feedback stage that reads a query's known "
                      "judgments (methods/feedback.py; unset: learned; false: left out)", nullable=True),
    "llm_share": Param(float, "largest share of pairs the cascade sends to the LLM", low=0.0, high=1.0),
    "tau_rule": Param(str, "how the cascade picks tau on dev: the LLM share, or the kept pairs' kappa",
                      ("share", "kappa")),
    "tau": Param(float, "a fixed cascade threshold on the scorer's top probability (else picked on dev)", low=0.0,
                 high=1.0, nullable=True),
    # baselines and DREAM
    "with_knowledge": Param(bool, "knowledge passages for the pair are added to the prompt"),
    "threshold": Param(str, "lowest label that counts as relevant in a binary view (null: the scheme's)",
                       nullable=True),
    "refine_rounds": Param(int, "RAER: refinement rounds of the generated criteria", low=0, high=5),
    "n_prompts": Param(int, "Prompt-Blender: prompt formulations voting", low=1, high=10),
    "n_models": Param(int, "LLM-Blender: models voting (from --blend-lms)", low=1, high=10),
    "n_agents": Param(int, "CollabEval: independent evaluators", low=1, high=10),
    "rounds": Param(int, "discussion or debate rounds", low=1, high=10),
    "n_per_label": Param(int, "Self-Instruct: labelled examples per label shown when deriving guidelines", low=1),
    "seed": Param(int, "random seed for example selection"),
    "n_examples": Param(int, "RAG-MMR: in-context examples", low=0, high=20),
    "lambda_mmr": Param(float, "RAG-MMR: relevance vs diversity trade-off", low=0.0, high=1.0),
    "cuts": Param(list, "expected-relevance thresholds, one per label boundary, that pick the label (null: the sampled "
                  "label)", nullable=True),
    "judge": Param(str, "the LLM judge whose label distribution is stacked (hiera: read at its final Judge step)",
                   ("zero-shot", "reasoning", "hiera")),
    "stack_C": Param(float, "inverse regularisation strength of the stacking logistic regression", low=1e-6),
    # votes over samples (methods/votes.py): every method that generates text
    "known_demos": Param(int, "every LLM method: up to N of the query's known judgments (--known, a benchmark's "
                         "qrels) as per-call demos of its prompts, the most like the pair's passage, balanced over "
                         "grades (default 4; 0: none)", low=0, high=50),
    "known_demo_tokens": Param(int, "the token budget of a pair's known-judgment demos (default 800)", low=50,
                               high=100000),
    "samples": Param(int, "judge each pair N times (distinct requests) and take the median vote; the votes' shares "
                     "are the judgment's distribution", low=1, high=100),
    "temperature": Param(float, "the LMs' sampling temperature for this method's calls (N > 1 samples without one: "
                         "0.3)", low=0.0, high=2.0, nullable=True),
    "anchored": Param(bool, "N > 1 samples: the first is the LM's own answer (its own temperature), the others at "
                      "`temperature` (false: all at `temperature`)", nullable=True),
    # the LLM probe (methods/probe.py)
    "probe_C": Param(float, "inverse regularisation strength of the probe's logistic regression", low=1e-6),
    "text_chars": Param(int, "characters of item text in the probe's prompt", low=0),
    "folds": Param(int, "folds (grouped by query) for the out-of-fold train distributions the stacker is fitted on",
                   low=2, high=20),
}


def check(method: str, key: str, value):
    """The checked value of one config key of `method`; `ConfigError` (a ValueError) naming the allowed values."""
    param = PARAMS.get(key)
    if param is None:
        raise ConfigError(f"{method}: config key {key!r} has no declared type (hiera_dspy/methods/params.py)")
    return param.check(key, value)
