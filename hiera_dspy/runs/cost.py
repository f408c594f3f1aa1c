"""Cost before a run (`--dry-run`): tokens and money for judging a whole split, with nothing sent.

A sample of pairs is judged with every role LM's engine swapped for a counting one (`hiera_dspy.lm.intercept`): the real
adapters render the real prompts (instructions, demos, label definitions, untrusted-data blocks) and LiteLLM's
`token_counter` counts each one; the counting engine answers like the fake LM, once forcing every triage clear (the
direct path) and once unclear (the delegated path). Per pair the expected tokens are
`(1 - d) x direct + d x delegated`, where the delegation rate `d` comes from `--assume-delegation`, else from a pilot
(judged rows of the same run in the store, e.g. an earlier `--limit 30` run), else the stated assumption 0.5.
Analyses computed once per distinct query / item (HIERA's Q and I, RAER's criteria) are counted once per distinct
query / item of the split that is likely to need one. Output tokens per call come from the pilot, else an assumption
(150 per call). Prices are LiteLLM's local price map (standard and, where listed, batch prices); a model it lacks is
reported as "unknown price". Web knowledge look-ups are not run (their passages are not counted); catalog look-ups are.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.util
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import dspy
from dspy.lm15 import Usage

from hiera_dspy.errors import RequestError
from hiera_dspy.lm.intercept import openai_chat_body, swapped_engines  # importing hiera_dspy keeps LiteLLM's map local
from hiera_dspy.lm.roles import ROLES
from hiera_dspy.records import Pair
from hiera_dspy.runs.runner import judge_one
from hiera_dspy.testing import FakeEngine

ASSUMED_DELEGATION = 0.5
ASSUMED_OUTPUT_TOKENS = 150
DIMENSIONS = ("query_interpretability", "information_completeness", "relational_transparency")
PATHS = {"direct": {d: "clear" for d in DIMENSIONS}, "delegated": {d: "unclear" for d in DIMENSIONS}}
# steps computed once per distinct query / item of the split (lm.memo.Memo), by the pair field that keys them
PER_DISTINCT = {"query.analyze": "query", "item.analyze": "item_id", "raer.generate": "query", "raer.refine": "query"}


class CountingEngine(FakeEngine):
    """Answers like the fake LM and reports the request's real prompt tokens (LiteLLM's counter for `model`)."""

    def __init__(self, model: str, answers: dict):
        super().__init__(answers)
        self.model = model

    def complete(self, request):
        """Answer as the dry-run engine does, with usage set to the request's counted input tokens and no output
        tokens."""
        import litellm

        response = super().complete(request)
        n_in = litellm.token_counter(model=self.model, messages=openai_chat_body(request)["messages"])
        return dataclasses.replace(response, usage=Usage(input_tokens=n_in, output_tokens=0, total_tokens=n_in))


def price(model: str) -> dict | None:
    """USD per token from LiteLLM's local price map: input, output and (when listed) batch prices; None if unknown.
    A model the map cannot hold under any name (`listed`) is unknown without importing LiteLLM (seconds)."""
    if not listed(model):
        return None
    import litellm

    litellm.suppress_debug_info = True  # else an unknown model prints LiteLLM's provider list
    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - LiteLLM raises for any model it does not list
        return None
    if not info.get("input_cost_per_token") and not info.get("output_cost_per_token"):
        return None
    return {"input": info.get("input_cost_per_token") or 0.0, "output": info.get("output_cost_per_token") or 0.0,
            "input_batch": info.get("input_cost_per_token_batches"),
            "output_batch": info.get("output_cost_per_token_batches")}


@functools.lru_cache(maxsize=1)
def _price_keys() -> frozenset[str] | None:
    """The model names of LiteLLM's bundled price map, read as JSON (None where the file cannot be found)."""
    spec = importlib.util.find_spec("litellm")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "model_prices_and_context_window_backup.json"
        if path.is_file():
            return frozenset(json.loads(path.read_text(encoding="utf-8")))
    return None


def listed(model: str) -> bool:
    """Whether LiteLLM's price map may price `model`: it names the model, or the part after one of its provider
    prefixes (`bedrock/anthropic.claude-...`); True where the map cannot be read (LiteLLM then decides)."""
    keys = _price_keys()
    if keys is None:
        return True
    parts = model.split("/")
    return any("/".join(parts[i:]) in keys for i in range(len(parts)))


def prices_of(lms: Any) -> dict[str, dict[str, float]]:
    """role -> USD per input and output token of its model, for the roles LiteLLM's local price map lists (the
    embedded local model and unknown models are left out, so their runs show no cost)."""
    out: dict[str, dict[str, float]] = {}
    for role, spec in (getattr(lms, "specs", None) or {}).items():
        model = getattr(spec, "model", "") or ""
        if model == "local" or model.startswith("local:"):
            continue
        known = price(model)
        if known:
            out[role] = {"input": known["input"], "output": known["output"]}
    return out


def sample_pairs(pairs: list[Pair], n: int) -> list[Pair]:
    """`n` pairs spread evenly over the split (the first `n` of a sorted split may share one query)."""
    if len(pairs) <= n:
        return list(pairs)
    step = len(pairs) / n
    return [pairs[int(i * step)] for i in range(n)]


def _render(program: dspy.Module, lms, sample: list[Pair], answers: dict) -> list[dict]:
    """Judge each sample pair with counting engines (a fresh program copy per pair: no analysis is reused)."""
    models = _models(lms)
    with swapped_engines(lms, lambda lm: CountingEngine(models.get(id(lm), lm.model), answers)):
        return [judge_one(copy.deepcopy(program), pair) for pair in sample]


def _models(lms) -> dict[int, str]:
    """id(lm) -> the model name to count and price (the spec's, e.g. anthropic/..., not a local file's stem)."""
    specs = getattr(lms, "specs", None) or {}
    return {id(lms[role]): spec.model for role, spec in specs.items() if role in lms}


def pilot(rows: list[dict]) -> dict:
    """Delegation rate and output tokens per step measured on already-judged rows (those without an error)."""
    judged = [r for r in rows if not r.get("error")]
    delegated = [r["delegated"] for r in judged if r.get("delegated") is not None]
    out: dict[str, list[int]] = defaultdict(list)
    for r in judged:
        for s in r.get("steps") or []:
            if s.get("calls"):
                out[s["name"]].append(s["completion_tokens"] / s["calls"])
    return {"n": len(judged), "delegation": sum(delegated) / len(delegated) if len(delegated) >= 5 else None,
            "output_tokens": {name: sum(v) / len(v) for name, v in out.items()}}


def forecast(program: dspy.Module, pairs: list[Pair], lms, *, sample: int = 20, delegation: float | None = None,
             output_tokens: int | None = None, pilot_rows: list[dict] | None = None, run_lookups: bool = True,
             population: int | None = None, distinct: dict[str, int] | None = None) -> dict:
    """Tokens and USD for judging every pair of `pairs` with `program`; nothing is sent to any LM.

    `population` (default len(pairs)) scales the sample to a split of that many pairs, with `distinct`
    ({"query": n, "item_id": n}; default: counted in `pairs`) distinct queries and items.

    Returns {"pairs", "sample", "delegation", "delegation_source", "output_source", "roles": {role: {"model",
    "calls", "input_tokens", "output_tokens", "usd", "usd_batch"}}, "calls", "input_tokens", "output_tokens", "usd",
    "usd_batch", "unknown_prices": [models]} (usd None when a model's price is unknown)."""
    measured = pilot(pilot_rows or [])
    d, d_source = delegation, "given"
    if d is None and measured["delegation"] is not None:
        d, d_source = measured["delegation"], f"pilot ({measured['n']} judged pairs in the store)"
    if d is None:
        d, d_source = ASSUMED_DELEGATION, "assumed"
    chosen = sample_pairs(pairs, sample)
    paths = {}
    for path, answers in PATHS.items():
        answers = dict(answers) if run_lookups else {**answers, "lookups": []}
        paths[path] = _per_step(_render(program, lms, chosen, answers))
    if paths["direct"] == paths["delegated"]:
        d_source = "n/a (this method never delegates)"
    n_pairs = population or len(pairs)
    counts = {field: len({getattr(p, field) for p in pairs}) for field in set(PER_DISTINCT.values())}
    counts.update(distinct or {})
    specs = getattr(lms, "specs", None) or {}
    models = {role: specs[role].model if role in specs else getattr(lm, "model", "?") for role, lm in lms.items()}
    roles: dict[str, dict] = {}
    for name in sorted(set(paths["direct"]) | set(paths["delegated"])):
        direct, delegated = paths["direct"].get(name), paths["delegated"].get(name)
        share = (1 - d) * (direct or {}).get("share", 0) + d * (delegated or {}).get("share", 0)
        per_call = delegated or direct
        if name in PER_DISTINCT and share:
            n_distinct = counts[PER_DISTINCT[name]]
            calls = n_distinct * (1 - (1 - share) ** (n_pairs / n_distinct)) * per_call["calls"]
        else:
            calls = n_pairs * ((1 - d) * (direct or {}).get("calls", 0) + d * (delegated or {}).get("calls", 0))
        role = per_call["role"]
        out_per_call = output_tokens or measured["output_tokens"].get(name) or ASSUMED_OUTPUT_TOKENS
        entry = roles.setdefault(role, {"model": models.get(role, "?"), "calls": 0.0, "input_tokens": 0.0,
                                        "output_tokens": 0.0})
        entry["calls"] += calls
        entry["input_tokens"] += calls * per_call["input_per_call"]
        entry["output_tokens"] += calls * out_per_call
    output_source = ("given" if output_tokens else "pilot" if measured["output_tokens"] else
                     f"assumed {ASSUMED_OUTPUT_TOKENS} per call")
    unknown = []
    for entry in roles.values():
        p = price(entry["model"])
        if p is None:
            entry["usd"] = entry["usd_batch"] = None
            unknown.append(entry["model"])
            continue
        entry["usd"] = entry["input_tokens"] * p["input"] + entry["output_tokens"] * p["output"]
        entry["usd_batch"] = (entry["input_tokens"] * p["input_batch"] + entry["output_tokens"] * p["output_batch"]
                              if p["input_batch"] is not None and p["output_batch"] is not None else "n/a")
    total = {k: sum(e[k] for e in roles.values()) for k in ("calls", "input_tokens", "output_tokens")}
    usd = None if unknown else sum(e["usd"] for e in roles.values())
    batch = [e["usd_batch"] for e in roles.values()]  # "n/a": LiteLLM lists no batch price for that model
    roles = {role: roles[role] for role in sorted(roles, key=lambda r: ROLES.index(r) if r in ROLES else len(ROLES))}
    return {"method": getattr(program, "method", type(program).__name__), "pairs": n_pairs, "sample": len(chosen),
            "delegation": d, "delegation_source": d_source, "output_source": output_source, "roles": roles,
            **total, "usd": usd, "usd_batch": None if unknown else "n/a" if "n/a" in batch else sum(batch),
            "unknown_prices": sorted(set(unknown))}


def _per_step(rows: list[dict]) -> dict[str, dict]:
    """step name -> role, share of pairs taking it, LM calls per pair, input tokens per call (sample means)."""
    failed = [r["error"] for r in rows if r.get("error")]
    if failed:
        raise RequestError(f"rendering the sample failed: {failed[0]}")
    steps: dict[str, dict] = {}
    for r in rows:
        for s in r["steps"]:
            if not s.get("calls"):
                continue
            e = steps.setdefault(s["name"], {"role": s["role"], "pairs": set(), "calls": 0, "tokens": 0})
            e["pairs"].add(r["id"])
            e["calls"] += s["calls"]
            e["tokens"] += s["prompt_tokens"]
    n = max(1, len(rows))
    return {name: {"role": e["role"], "share": len(e["pairs"]) / n, "calls": e["calls"] / n,
                   "input_per_call": e["tokens"] / e["calls"]} for name, e in steps.items()}


def _delegation(est: dict) -> str:
    source = est["delegation_source"]
    return source if source.startswith("n/a") else f"rate {est['delegation']:.2f} ({source})"


def _money(x: float | str | None) -> str:
    return "unknown price" if x is None else x if isinstance(x, str) else f"${x:,.2f}"


def format_forecast(est: dict) -> str:
    """The printed report of one method's cost forecast."""
    lines = [f"dry run: {est['method']} on {est['pairs']:,} pairs (prompts of {est['sample']} pairs rendered with the "
             f"real adapters; nothing sent)",
             f"  delegation {_delegation(est)}; output tokens {est['output_source']}",
             f"  {'role':<9} {'model':<44} {'calls':>12} {'input tok':>15} {'output tok':>14} {'cost':>14} "
             f"{'batch cost':>14}"]
    for role, e in est["roles"].items():
        lines.append(f"  {role:<9} {e['model'][:44]:<44} {e['calls']:>12,.0f} {e['input_tokens']:>15,.0f} "
                     f"{e['output_tokens']:>14,.0f} {_money(e['usd']):>14} {_money(e['usd_batch']):>14}")
    lines.append(f"  {'total':<9} {'':<44} {est['calls']:>12,.0f} {est['input_tokens']:>15,.0f} "
                 f"{est['output_tokens']:>14,.0f} {_money(est['usd']):>14} {_money(est['usd_batch']):>14}")
    if any(e["usd_batch"] == "n/a" for e in est["roles"].values()):
        lines.append("  batch cost n/a: LiteLLM's price map lists no batch price for that model")
    if est["unknown_prices"]:
        lines.append(f"  unknown price: LiteLLM's local price map lists no {', '.join(est['unknown_prices'])}")
    return "\n".join(lines)


def format_total(estimates: list[dict]) -> str:
    """One line summing several methods' estimates (eval.ablate's grid)."""
    def total(key):
        values = [e[key] for e in estimates]
        return None if None in values else "n/a" if "n/a" in values else sum(values)

    return (f"dry run total for {len(estimates)} methods: {sum(e['calls'] for e in estimates):,.0f} LM calls, "
            f"{sum(e['input_tokens'] + e['output_tokens'] for e in estimates):,.0f} tokens, "
            f"{_money(total('usd'))} ({_money(total('usd_batch'))} at batch prices)")


estimate, format_estimate = forecast, format_forecast  # the earlier names (until 0.2): a PPI estimate is conclude's
